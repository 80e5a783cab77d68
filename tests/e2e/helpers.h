// Shared fixtures for end-to-end tests on real devices of this machine (loop devices over files).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::test {

/// Result of a shell command: exit status, stdout and stderr.
struct CmdResult {
    int status = -1;
    std::string out, err;
};

/// Runs `cmd` with /bin/sh; captures stdout and stderr separately.
CmdResult run(const std::string& cmd);
/// Path of the kvio binary under test ($KVIO_BIN, default build/kvio).
std::string kvio_bin();
/// Shell text that starts `kvio trace --ready-file READY ARGS` in the background (its pid in $`var`) and waits, up to
/// 30 s, until the trace is attached, so what the script does next is traced however long loading BPF takes on a busy
/// machine (a fixed `sleep 1` there missed the workload at a load of 8 on 2 CPUs). Ends with "; ".
std::string trace_in_background(const std::string& ready, const std::string& args, const std::string& var = "t");
/// `cmd` (shell text) run under SCHED_FIFO at priority 10 (`chrt -f 10 sh -c CMD`), its children too: the traced
/// workload, kvio's trace and the replay `kvio distill --verify` starts then keep their depth and pace beside CPU load
/// (docs/testing.md, "Workloads at real-time priority": why, and why only for workloads that block between I/Os).
std::string realtime(const std::string& cmd);
/// Path of the kvio binary whose BPF object has the test hooks ($KVIO_TEST_HOOKS_BIN, default kvio-test-hooks beside
/// kvio_bin()).
std::string kvio_test_hooks_bin();

/// A temporary directory removed (recursively) at destruction. Under /var/tmp by default, never tmpfs-only;
/// `base` "/dev/shm" for images a test writes that need not reach the disk.
struct TempDir {
    explicit TempDir(const std::string& base = "/var/tmp");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string path;
    std::string file(const std::string& name) const { return path + "/" + name; }
};

/// What a test process killed before its destructors ran (SIGKILL, a timeout) left: mounts on `dir`/kvio-mnt-<pid>-*,
/// loop devices over a kvio-loop-<pid>-* file of any directory, and those files and directories in `dir`, where <pid>
/// no longer runs. Unmounts, detaches and removes them; returns how many (a live process's, another run's beside this
/// one, are kept). Takes a ReapLock for its duration.
size_t reap_dead_tests_leftovers(const std::string& dir);

/// Serialises reaping across test processes: the e2e suite runs in shards at once, and each LoopDevice reaps on
/// construction. An exclusive flock(2) on /var/tmp itself (a directory: no lock file is left behind); released at
/// destruction. A test that must see exactly what it leaves reaped by itself holds one across the death and calls
/// reap_dead_tests_leftovers_locked.
class ReapLock {
public:
    ReapLock();
    ~ReapLock();
    ReapLock(const ReapLock&) = delete;
    ReapLock& operator=(const ReapLock&) = delete;

private:
    int fd_ = -1;
};

/// reap_dead_tests_leftovers for a caller that holds a ReapLock.
size_t reap_dead_tests_leftovers_locked(const std::string& dir);

/// A loop device over a sparse file <dir>/kvio-loop-<pid>-XXXXXX (losetup --direct-io). Detached and removed at
/// destruction; a dead test process's leftovers in `dir` are reaped first.
struct LoopDevice {
    /// `size_bytes` of the backing file; `direct_io` sets --direct-io=on; `dir` holds the backing file.
    LoopDevice(uint64_t size_bytes, bool direct_io = true, const std::string& dir = "/var/tmp");
    ~LoopDevice();
    LoopDevice(const LoopDevice&) = delete;
    LoopDevice& operator=(const LoopDevice&) = delete;
    std::string path;     ///< /dev/loopN
    std::string name;     ///< loopN
    std::string majmin;   ///< "7:N"
    std::string backing;  ///< backing file
    /// Writes a sysfs queue attribute of this device (e.g. max_sectors_kb). The old value is restored at
    /// destruction: a loop device's queue settings outlive the detach and would leak into later tests.
    void set_queue_attr(const std::string& attr, const std::string& value);
    std::vector<std::pair<std::string, std::string>> saved_attrs;
    /// Writes zeros over the first `mib` MiB (O_DIRECT), so that reads there go to the backing file's blocks: a read
    /// of a sparse backing file's hole is answered in microseconds, faster than its submitter turns around, and the
    /// depth reached is the scheduler's, not the job's. Returns dd's exit status.
    int fill(uint64_t mib) const;
};

/// An ext4 filesystem on a fresh loop device, mounted on a temp dir; unmounted at destruction. `backing_dir` holds
/// the loop device's backing file ("/dev/shm" for a device as fast as memory).
struct Ext4Mount {
    explicit Ext4Mount(uint64_t size_bytes, const std::string& backing_dir = "/var/tmp");
    ~Ext4Mount();
    LoopDevice loop;
    std::string mnt;
};

/// Parses every line of a JSONL file.
std::vector<nlohmann::json> read_jsonl(const std::string& path);
/// Reads a whole file.
std::string slurp(const std::string& path);
/// md5sum of a file or device (32 hex digits): the "target unchanged" check of the refusal tests.
std::string md5(const std::string& path);

}  // namespace kvio::test
