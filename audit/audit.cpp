// `kvio audit`: run a command under `kvio trace --syscalls`, count its I/O per cache filesystem and what the disk
// saw, and judge (judge.cpp). docs/audit.md.
#include "audit/audit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "audit/forks.h"
#include "audit/preload.h"
#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "common/output_file.h"
#include "common/stop_signal.h"

namespace kvio::audit {

namespace fs = std::filesystem;

void count_app_io(const std::vector<SyscallRec>& calls, uint32_t fs_kdev, FsFigures& f) {
    std::map<std::pair<uint64_t, uint32_t>, uint64_t> unsynced;  // (ino, gen) -> buffered bytes since its last fsync
    std::set<std::pair<uint64_t, uint32_t>> written;             // files with buffered writes
    for (const auto& r : calls) {
        if (!r.has_file || r.fs_dev != fs_kdev) continue;
        const uint64_t moved = r.ret > 0 ? uint64_t(r.ret) : 0;
        switch (r.kind) {
            case SysKind::Read:
                f.app_read_bytes += moved, f.app_read_calls++;
                if (r.direct) f.app_read_direct_bytes += moved;
                break;
            case SysKind::Write:
                f.app_write_bytes += moved, f.app_write_calls++;
                if (r.direct)
                    f.app_write_direct_bytes += moved;
                else
                    unsynced[{r.ino, r.gen}] += moved, written.insert({r.ino, r.gen});
                break;
            case SysKind::Fsync:
            case SysKind::Fdatasync:
                f.fsync_calls++;
                unsynced.erase({r.ino, r.gen});
                break;
            case SysKind::Fadvise:
                f.fadvise_calls++;
                break;
            default:
                break;
        }
    }
    for (const auto& [file, bytes] : unsynced)
        if (bytes) f.app_write_unsynced_bytes += bytes, f.app_files_unsynced++;
    f.app_files_written = written.size();
}

void count_device_io(const EventTrace& disk, uint64_t first_sector, uint64_t sectors, FsFigures& f) {
    for (const auto& c : disk.cmds) {
        if (sectors && (c.sector < first_sector || c.sector >= first_sector + sectors) && c.op != Op::Flush) continue;
        if (c.op == Op::Read) f.dev_read_bytes += c.bytes, f.dev_read_cmds++;
        if (c.op == Op::Write) {
            f.dev_write_bytes += c.bytes, f.dev_write_cmds++;
            if (c.preflush || c.fua) f.dev_flushes++;
        }
        if (c.op == Op::Flush) f.dev_flushes++;
    }
}

namespace {

volatile pid_t g_child = 0;

void forward(int sig) {
    if (g_child > 0) ::kill(g_child, sig == SIGINT ? SIGINT : SIGTERM);
}

/// One filesystem to audit: its directories, its device, the range of its disk it occupies.
struct Target {
    FsFigures fig;
    uint32_t fs_kdev = 0;
    DevId disk_dev;
    uint64_t first_sector = 0, sectors = 0;
};

/// Where `dir` is or will be (docs/audit.md, "A cache directory the command creates"): `dir` itself when it exists
/// (a directory, else UsageError "not a directory"), else its nearest existing ancestor, which must be a directory
/// (UsageError "Not a directory" when a component is a file, or the stat error); `st` gets its stat. The command may
/// create the directory (kvio simulate and the Python benchmark do): its files land on that ancestor's filesystem
/// unless something is mounted there meanwhile, which the audit cannot foresee.
std::string existing_place(const std::string& dir, struct stat& st) {
    if (::stat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) throw UsageError("--cache-dir " + dir + ": not a directory");
        return dir;
    }
    if (errno != ENOENT) throw UsageError("--cache-dir " + dir + ": " + std::strerror(errno));
    std::error_code ec;
    for (std::filesystem::path p = std::filesystem::absolute(dir, ec).parent_path();; p = p.parent_path()) {
        if (::stat(p.c_str(), &st) == 0) {
            if (!S_ISDIR(st.st_mode)) throw UsageError("--cache-dir " + dir + ": Not a directory (" + p.string() + ")");
            return p.string();
        }
        if (errno != ENOENT) throw UsageError("--cache-dir " + dir + ": " + p.string() + ": " + std::strerror(errno));
        if (p == p.parent_path()) throw UsageError("--cache-dir " + dir + ": No such file or directory");
    }
}

std::vector<Target> targets_of(const std::vector<std::string>& dirs) {
    std::vector<Target> out;
    for (const auto& d : dirs) {
        struct stat st;
        const std::string place = existing_place(d, st);
        const DevId fsdev{major(st.st_dev), minor(st.st_dev)};
        if (place != d)
            std::cerr << "audit: --cache-dir " << d << " does not exist yet: auditing the filesystem of " << place
                      << " (" << dev_string(fsdev) << "), where the command will create it\n";
        BlockDevInfo info;
        try {
            info = block_dev_info_for_path(place);
        } catch (const Error&) {
            // A refusal before anything runs, as "Not a directory" is: a usage error (docs/audit.md, exit status).
            throw UsageError(
                "--cache-dir " + d + (place == d ? "" : " (to be created in " + place + ")") + " is on " +
                dev_string(fsdev) +
                ", not a block device (tmpfs, overlay, a network filesystem): there is no device to audit");
        }
        auto same =
            std::find_if(out.begin(), out.end(), [&](const Target& t) { return t.fs_kdev == kernel_dev(fsdev); });
        if (same != out.end()) {
            same->fig.dirs.push_back(d);
            continue;
        }
        Target t;
        t.fig.dirs = {d};
        t.fig.fs_dev = dev_string(fsdev);
        t.fig.disk = info.whole_disk_name;
        t.fs_kdev = kernel_dev(fsdev);
        t.disk_dev = info.whole_disk;
        if (info.is_partition) t.first_sector = info.start_sector, t.sectors = info.size_bytes / 512;
        std::ifstream wc("/sys/block/" + info.whole_disk_name + "/queue/write_cache");
        std::string mode;
        std::getline(wc, mode);
        t.fig.volatile_cache = mode != "write through";
        out.push_back(std::move(t));
    }
    return out;
}

std::string private_dir(const std::string& keep) {
    if (!keep.empty()) {
        std::error_code ec;
        fs::create_directories(keep, ec);
        if (ec) throw Error("audit: --trace-dir " + keep + ": " + ec.message());
        return keep;
    }
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/kvio-audit-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
        throw Error("audit: cannot make a directory under " + tmpl + ": " + std::strerror(errno));
    return tmpl;
}

pid_t spawn(const std::vector<std::string>& argv, bool quiet) {
    pid_t pid = ::fork();
    if (pid == 0) {
        default_stop_signals();
        if (quiet) {
            int fd = ::open("/dev/null", O_WRONLY);
            if (fd >= 0) ::dup2(fd, 1);
        }
        std::vector<char*> a;
        for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        ::execvp(a[0], a.data());
        std::fprintf(stderr, "kvio audit: cannot run %s: %s\n", a[0], std::strerror(errno));
        _exit(127);
    }
    if (pid < 0) throw Error(std::string("audit: fork: ") + std::strerror(errno));
    return pid;
}

int wait_status(pid_t pid) {
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/// Starts the tracer (`trace_argv`, which ends in --ready-file READY) and waits until it attached; then runs
/// `command`, sampling its process tree for preloads and pids every 100 ms (SIGINT/SIGTERM/SIGHUP go to it), and
/// recording every fork meanwhile (ForkLog): `tree` gets the command's processes, however short-lived, and
/// `tree_complete` says no fork event was lost (false too without the connector), `not_inspected` gets the
/// programs it ran (execs) that no sample inspected (PreloadWatch::not_inspected); then
/// stops the tracer (SIGINT: it flushes) and waits. The tracer is device-wide: the journal's and writeback's commands
/// (flushes included) are issued by kernel threads, not by the command. Returns the command's exit status.
int run_traced(const std::vector<std::string>& trace_argv, const std::string& ready,
               const std::vector<std::string>& command, PreloadWatch& watch, int& signo, std::set<pid_t>& tree,
               bool& tree_complete, std::vector<ExecImage>& not_inspected) {
    StopSignal stop(StopSignal::Options{.on_signal = forward});
    const pid_t tracer = spawn(trace_argv, true);
    for (int i = 0; !fs::exists(ready); ++i) {
        int st = 0;
        if (::waitpid(tracer, &st, WNOHANG) == tracer)
            throw Error("audit: the tracer ended before it attached (exit status " +
                        std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) + ")");
        if (stop.stopped() || i > 1200) {
            ::kill(tracer, SIGINT);
            wait_status(tracer);
            if (stop.stopped()) throw Stopped(stop.signo(), "audit: stopped by signal " + std::to_string(stop.signo()));
            throw Error("audit: the tracer did not attach within 60 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::unique_ptr<ForkLog> forks;
    try {
        forks = std::make_unique<ForkLog>();
    } catch (const Error& e) {
        std::fprintf(stderr, "kvio audit: %s: the process tree is sampled only\n", e.what());
    }
    const pid_t child = spawn(command, false);
    g_child = child;
    watch.sample(child);  // the root's pid at least, however short its life
    int st = 0;
    for (;;) {
        pid_t w = ::waitpid(child, &st, WNOHANG);
        if (w == child || (w < 0 && errno != EINTR)) break;
        watch.sample(child);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    g_child = 0;
    tree = watch.pids();
    tree_complete = false;
    if (forks) {
        forks->stop();
        const std::set<pid_t> forked = forks->tree(child);
        tree.insert(forked.begin(), forked.end());
        tree_complete = forks->lost() == 0;
        not_inspected = watch.not_inspected(forks->execs(forked));
    }
    signo = stop.signo();
    ::kill(tracer, SIGINT);
    const int trace_status = wait_status(tracer);
    if (trace_status != 0 && trace_status != 130 && !signo)
        throw Error("audit: the tracer failed (exit status " + std::to_string(trace_status) + ")");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string resolved_exe(const std::string& exe) {
    if (exe != "/proc/self/exe") return exe;
    std::error_code ec;
    auto p = fs::read_symlink(exe, ec);
    if (ec) throw Error("audit: cannot resolve /proc/self/exe: " + ec.message());
    return p.string();
}

nlohmann::json check_json(const Check& c) {
    return {{"name", c.name}, {"verdict", verdict_name(c.verdict)}, {"line", c.line}, {"figures", c.figures}};
}

/// Counts, judges and builds the document from a finished trace at `events`.
void judge_trace(const std::string& events, std::vector<Target>& targets, const AuditOptions& o,
                 const std::set<pid_t>& pids, bool tree_complete, const std::vector<ExecImage>& not_inspected,
                 AuditResult& r) {
    std::vector<SyscallRec> calls = load_syscalls(events, SyscallFilter{});
    std::erase_if(calls, [&](const SyscallRec& c) { return !pids.count(pid_t(c.pid)); });  // the command's tree only
    if (!calls.empty() && std::none_of(calls.begin(), calls.end(), [](const SyscallRec& c) { return c.has_file; }))
        throw Error("audit: " + events +
                    ": the syscall records carry no file identity (ino, fs_dev): this kvio's "
                    "tracer cannot tell which files were read");
    nlohmann::json fss = nlohmann::json::array();
    for (auto& t : targets) {
        count_app_io(calls, t.fs_kdev, t.fig);
        t.fig.tree_complete = tree_complete;
        std::vector<EventTrace> disks;
        try {
            disks = load_all_events(events, EventFilter{dev_string(t.disk_dev), 0, ""});
        } catch (const NoDeviceCommands&) {
            // The disk saw no command while the command ran: every device figure is 0, and the checks say so.
        }
        for (const auto& d : disks) count_device_io(d, t.first_sector, t.sectors, t.fig);
        nlohmann::json cj = nlohmann::json::array();
        for (auto c : judge_fs(t.fig, o)) {
            if (targets.size() > 1) c.line = t.fig.dirs.front() + ": " + c.line;
            cj.push_back(check_json(c));
            r.checks.push_back(std::move(c));
        }
        fss.push_back({{"dirs", t.fig.dirs}, {"fs_dev", t.fig.fs_dev}, {"disk", t.fig.disk}, {"checks", cj}});
        r.filesystems.push_back(t.fig);
    }
    std::vector<std::string> unseen;
    nlohmann::json unseen_json = nlohmann::json::array();
    for (const auto& e : not_inspected) {
        unseen.push_back("pid " + std::to_string(e.pid) + " (" +
                         (e.comm.empty() ? "ended before its name was read" : e.comm) + ")");
        unseen_json.push_back({{"pid", e.pid}, {"comm", e.comm}});
    }
    const Check pre = judge_preloads(r.preloads, unseen, tree_complete);
    r.checks.push_back(pre);
    r.measured = std::any_of(r.checks.begin(), r.checks.end(),
                             [](const Check& c) { return c.verdict == Verdict::Pass || c.verdict == Verdict::Fail; });
    r.passed =
        r.command_status == 0 && r.measured &&
        std::none_of(r.checks.begin(), r.checks.end(), [](const Check& c) { return c.verdict == Verdict::Fail; });
    r.doc = {{"schema", "kvio.audit/1"}, {"command", o.command},       {"command_status", r.command_status},
             {"filesystems", fss},       {"preload", check_json(pre)}, {"measured", r.measured},
             {"passed", r.passed}};
    r.doc["preload"]["not_inspected"] = unseen_json;
}

}  // namespace

AuditResult run_audit(const AuditOptions& o) {
    if (o.command.empty()) throw UsageError("no command: kvio audit --cache-dir DIR -- COMMAND [ARGS...]");
    if (o.cache_dirs.empty()) throw UsageError("--cache-dir is required (the directory the command's cache is in)");
    std::vector<Target> targets = targets_of(o.cache_dirs);
    if (!o.json_out.empty()) check_writable(o.json_out);  // before the command runs, not after
    AuditResult r;
    r.trace_dir = private_dir(o.trace_dir);
    const std::string events = r.trace_dir + "/events.jsonl";
    std::vector<std::string> argv = {
        resolved_exe(o.kvio_exe), "trace", "-q", "--syscalls", "--events", events, "--ready-file",
        r.trace_dir + "/ready"};
    for (const auto& t : targets)
        if (std::find(argv.begin(), argv.end(), t.fig.disk) == argv.end()) argv.insert(argv.end(), {"-d", t.fig.disk});
    PreloadWatch watch;
    int signo = 0;
    try {
        std::set<pid_t> tree;
        bool tree_complete = false;
        std::vector<ExecImage> not_inspected;
        r.command_status =
            run_traced(argv, r.trace_dir + "/ready", o.command, watch, signo, tree, tree_complete, not_inspected);
        if (signo)
            throw Stopped(signo, "audit: stopped by signal " + std::to_string(signo) + " (the command was ended)");
        if (r.command_status == 127)
            throw Error("audit: the command could not be run (exit status 127): " + o.command.front());
        if (!fs::exists(events)) throw Error("audit: the tracer wrote no trace");
        r.preloads = watch.preloads();
        judge_trace(events, targets, o, tree, tree_complete, not_inspected, r);
        if (!o.json_out.empty()) write_json_file(o.json_out, r.doc);
    } catch (...) {
        if (o.trace_dir.empty()) fs::remove_all(r.trace_dir);
        throw;
    }
    if (o.trace_dir.empty()) fs::remove_all(r.trace_dir), r.trace_dir.clear();
    return r;
}

AuditResult run_audit_into_results(const AuditOptions& o, const std::string& results_json, std::string& note) {
    AuditResult r = run_audit(o);
    note.clear();
    nlohmann::ordered_json doc;
    {
        std::ifstream f(results_json);
        if (!f) {
            note = results_json + ": not written by the run (exit status " + std::to_string(r.command_status) +
                   "): the verdicts are not in it";
            return r;
        }
        doc = nlohmann::ordered_json::parse(f, nullptr, false);
    }
    if (!doc.is_object()) {
        note = results_json + ": not a JSON object: the verdicts are not in it";
        return r;
    }
    doc["kvio"]["audit"] = r.doc;
    write_text_file(results_json, doc.dump(4) + "\n");  // the simulation's own layout (4-space indent)
    return r;
}

}  // namespace kvio::audit
