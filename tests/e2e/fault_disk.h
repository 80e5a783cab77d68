// A disk with bad sectors for the end-to-end tests: a loop device (direct I/O off) over MOUNT/disk.img of the tests'
// FUSE filesystem build/faultfs (tests/faultfs/faultfs.cpp), which fails, stalls or corrupts chosen byte ranges.
#pragma once
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/e2e/helpers.h"

namespace kvio::test {

/// Path of the fault-injecting FUSE filesystem ($KVIO_FAULTFS_BIN, default faultfs beside kvio_bin()).
inline std::string faultfs_bin() {
    const char* b = std::getenv("KVIO_FAULTFS_BIN");
    return b ? b : (std::filesystem::path(kvio_bin()).parent_path() / "faultfs").string();
}

/// A loop device of `size_bytes` over faultfs: `path` (/dev/loopN), `name` (loopN), `majmin`; rule() adds a fault,
/// counters() reads what faultfs injected. Everything (loop device, FUSE mount, its process, the backing file) goes
/// at destruction.
struct FaultDisk {
    explicit FaultDisk(uint64_t size_bytes) {
        std::filesystem::create_directory(dir.file("mnt"));
        { std::ofstream(dir.file("backing.img")); }
        std::filesystem::resize_file(dir.file("backing.img"), size_bytes);
        pid = fork();
        if (pid == 0) {
            std::freopen(dir.file("faultfs.log").c_str(), "w", stderr);
            execl(faultfs_bin().c_str(), "faultfs", dir.file("backing.img").c_str(), dir.file("mnt").c_str(),
                  (char*)nullptr);
            _exit(127);
        }
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!std::filesystem::exists(disk()) && std::chrono::steady_clock::now() < end)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (!std::filesystem::exists(disk()))
            throw std::runtime_error("faultfs did not mount: " + slurp(dir.file("faultfs.log")));
        auto r = run("losetup -f --show --direct-io=off " + disk());
        if (r.status != 0) throw std::runtime_error("losetup failed: " + r.err);
        path = r.out.substr(0, r.out.find('\n'));
        name = path.substr(path.rfind('/') + 1);
        majmin = slurp("/sys/block/" + name + "/dev");
        majmin = majmin.substr(0, majmin.find('\n'));
    }
    ~FaultDisk() {
        rule("clear");  // a stalled request must not hold the detach
        if (!path.empty()) run("losetup -d " + path);
        if (run("fusermount3 -u " + dir.file("mnt")).status != 0) run("umount -l " + dir.file("mnt"));
        int st = 0;
        if (waitpid(pid, &st, 0) != pid) kill(pid, SIGKILL);
    }
    FaultDisk(const FaultDisk&) = delete;
    FaultDisk& operator=(const FaultDisk&) = delete;

    /// MOUNT/disk.img, the file the loop device is over.
    std::string disk() const { return dir.file("mnt/disk.img"); }
    /// Adds a rule ("eio read|write|rw OFF LEN", "stall read|write|rw OFF LEN MS", "flip OFF LEN", "clear").
    bool rule(const std::string& line) const {
        std::ofstream f(dir.file("mnt/ctl"));
        f << line << "\n";
        f.flush();
        return bool(f);
    }
    /// faultfs's counters: reads, writes, eio_reads, eio_writes, stalls, flipped_bytes.
    std::map<std::string, uint64_t> counters() const {
        std::map<std::string, uint64_t> m;
        std::istringstream in(slurp(dir.file("mnt/ctl")));
        std::string k;
        uint64_t v = 0;
        while (in >> k >> v) m[k] = v;
        return m;
    }

    TempDir dir;
    pid_t pid = -1;
    std::string path, name, majmin;
};

/// ext4 on `disk`, mounted (errors=continue: a failed metadata read must not make it read-only mid-test) on a
/// directory beside it; unmounted at destruction.
struct Ext4OnFaultDisk {
    explicit Ext4OnFaultDisk(const FaultDisk& disk) : dir(disk.dir.file("ext4")) {
        std::filesystem::create_directory(dir);
        ok = run("mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0 " + disk.path).status == 0 &&
             run("mount -o errors=continue " + disk.path + " " + dir).status == 0;
    }
    ~Ext4OnFaultDisk() {
        if (ok) ::umount2(dir.c_str(), MNT_DETACH);
    }
    std::string dir;
    bool ok = false;
};

/// A simulate cache directory on ext4 over a fresh fault disk of `bytes`: `ok` once made and mounted; rules are
/// added on `disk` after, so the filesystem itself was made on a healthy disk.
struct CacheOnFaultDisk {
    explicit CacheOnFaultDisk(uint64_t bytes) : disk(bytes), fs(disk), cache(fs.dir + "/cache") {
        ok = fs.ok && std::filesystem::create_directory(cache);
    }
    FaultDisk disk;
    Ext4OnFaultDisk fs;
    std::string cache;
    bool ok = false;
};

}  // namespace kvio::test
