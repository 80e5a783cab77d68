// `kvio audit`: did a storage benchmark's run really reach storage? The command runs under `kvio trace
// --syscalls`; per cache directory the application's own I/O on that filesystem (syscall records with file
// identity) is set against the commands its disk saw, and the libraries preloaded into the traced processes are
// named. Rules and their reasons: docs/audit.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_trace.h"
#include "common/syscall_trace.h"

namespace kvio::audit {

/// What `kvio audit` is asked.
struct AuditOptions {
    std::vector<std::string> command;         ///< argv of the command to run and audit (after `--`)
    std::vector<std::string> cache_dirs;      ///< --cache-dir: directories whose I/O is audited (at least one)
    std::string trace_dir;                    ///< --trace-dir: keep the trace here ("" = a private temporary directory)
    std::string json_out;                     ///< --json: the kvio.audit/1 document here ("" = none)
    double min_read_share = 0.9;              ///< --min-read-share: device read bytes / application read bytes to pass
    double min_write_share = 0.9;             ///< device write bytes / application write bytes to pass
    std::string kvio_exe = "/proc/self/exe";  ///< the kvio binary that provides `trace`
};

/// A check's outcome. Na: nothing to judge (e.g. no reads); Note: named, not a failure.
enum class Verdict { Pass, Fail, Na, Note };
/// "PASS", "FAIL", "n/a", "note".
const char* verdict_name(Verdict v);

/// One check's verdict line ("reads: 99.8 % of the 1.2 GiB the application read came from the device") and its
/// figures.
struct Check {
    std::string name;  ///< "reads", "writes", "fsync", "fadvise", "preload"
    Verdict verdict = Verdict::Na;
    std::string line;
    nlohmann::json figures = nlohmann::json::object();
};

/// The application's I/O on one filesystem (syscall records whose fs_dev is its device; bytes = the calls' return
/// values) and what its disk saw in the same run.
struct FsFigures {
    std::vector<std::string> dirs;  ///< the cache directories on this filesystem
    std::string fs_dev;             ///< "MAJ:MIN" of the filesystem
    std::string disk;               ///< the whole disk's name
    uint64_t app_read_bytes = 0, app_read_calls = 0, app_read_direct_bytes = 0;
    uint64_t app_write_bytes = 0, app_write_calls = 0, app_write_direct_bytes = 0;
    /// buffered bytes written to files that no later fsync/fdatasync on the same file covered (a write cut by the
    /// run's stop, a file deleted before it was synced): the writes check does not require them on the device
    uint64_t app_write_unsynced_bytes = 0;
    uint64_t app_files_written = 0;   ///< files (inode, generation) with buffered writes
    uint64_t app_files_unsynced = 0;  ///< of those, files whose last buffered write no fsync/fdatasync followed
    uint64_t fsync_calls = 0, fadvise_calls = 0;
    uint64_t dev_read_bytes = 0, dev_read_cmds = 0, dev_write_bytes = 0, dev_write_cmds = 0;
    uint64_t dev_flushes = 0;    ///< flush commands plus writes with REQ_PREFLUSH or REQ_FUA
    bool volatile_cache = true;  ///< queue/write_cache says "write back": fsync must reach the device as a flush
    /// The command's process tree is known whole (every fork seen by the process events connector): "nothing" in a
    /// line is then a fact, else only "nothing seen" (audit.cpp, run_traced).
    bool tree_complete = true;
};

/// A library found preloaded into a traced process (LD_PRELOAD of any process of the tree, /etc/ld.so.preload),
/// with the I/O functions it defines (from its ELF dynamic symbols): the ones it can interpose.
struct Preload {
    std::string path;
    std::string source;                   ///< "LD_PRELOAD of pid N (comm)" | "/etc/ld.so.preload"
    std::vector<std::string> interposes;  ///< e.g. fsync, fdatasync, posix_fadvise
    bool readable = true;                 ///< false: the file could not be read (then interposes is empty)
};

/// The checks of one filesystem, from its figures: reads, writes, fsync, fadvise (docs/audit.md, "Checks").
std::vector<Check> judge_fs(const FsFigures& f, const AuditOptions& o);
/// The preload check: FAIL when a preloaded library defines a function that moves or makes durable data (fsync,
/// fdatasync, sync_file_range, posix_fadvise, open, read, write, ...), note when it defines none, n/a without any.
/// `not_inspected`: the programs the command ran that ended before any sample could read their environment and
/// maps ("pid N (comm)"; PreloadWatch::not_inspected): what they preloaded is not known, and the line names them
/// (a note when nothing else was seen, never "none"). `every_exec_seen`: the process events connector recorded
/// every exec (false: the tree was only sampled every 100 ms, and the line says a shorter process is not seen).
Check judge_preloads(const std::vector<Preload>& preloads, const std::vector<std::string>& not_inspected = {},
                     bool every_exec_seen = true);

/// Adds to `f` the application's calls from `calls` (those on f.fs_dev) and the device commands of `disk` (those in
/// [first_sector, first_sector + sectors) when sectors != 0: a partition's range on its disk).
void count_app_io(const std::vector<SyscallRec>& calls, uint32_t fs_kdev, FsFigures& f);
void count_device_io(const EventTrace& disk, uint64_t first_sector, uint64_t sectors, FsFigures& f);

/// The I/O functions among the dynamic symbols a shared object defines (libelf); empty when it defines none.
/// Throws kvio::Error "PATH: not an ELF shared object" when it cannot be read as one.
std::vector<std::string> interposed_io_functions(const std::string& so_path);

/// The whole audit.
struct AuditResult {
    int command_status = 0;  ///< the command's exit status (128 + signal when killed)
    std::vector<FsFigures> filesystems;
    std::vector<Preload> preloads;
    std::vector<Check> checks;  ///< per filesystem its four checks (names prefixed by the directory), then preload
    bool passed = false;        ///< no check failed, some check judged I/O (`measured`) and the command exited 0
    /// Some check judged I/O (PASS or FAIL): a command that did none in the directories is not a PASS.
    bool measured = false;
    nlohmann::json doc;     ///< kvio.audit/1 (docs/audit.md)
    std::string trace_dir;  ///< where the trace is (kept only with --trace-dir)
};

/// Runs the command under `kvio trace --syscalls -q --events DIR/events.jsonl -d DISK...`, watching its process
/// tree for preloaded libraries, then counts and judges. Throws kvio::Error for a cache directory that is not on a
/// block device, a tracer that fails, or a trace without file identity (an older kvio); kvio::Stopped when a
/// signal ended the run (the command was stopped first).
AuditResult run_audit(const AuditOptions& o);

/// `kvio simulate --audit` (docs/audit.md, "Inside kvio simulate"): run_audit of `o` (o.command: the simulate command
/// line without --audit, writing its results JSON to `results_json`), then the kvio.audit/1 document added to that
/// file as kvio.audit, the file written whole again (temporary name, renamed). `note` gets why the file was left as it
/// was ("" when it was amended): missing, or not a JSON object (the simulation failed before writing it).
AuditResult run_audit_into_results(const AuditOptions& o, const std::string& results_json, std::string& note);

/// The verdict table as `kvio audit` prints it: one line per check, then the overall line.
std::string format_result(const AuditResult& r);

}  // namespace kvio::audit
