#include "userspace/run_pipeline.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/exec_logged.h"
#include "common/jsonl.h"
#include "distiller/events.h"
#include "distiller/fidelity.h"
#include "distiller/fio_job.h"
#include "distiller/iolog.h"
#include "distiller/profile.h"
#include "userspace/report_html.h"
#include "validate/validate.h"
#include "workload/target.h"

namespace kvio::run {

namespace fs = std::filesystem;

namespace {

// ---- signals: remembered, forwarded to the running stage's process group ----
volatile sig_atomic_t g_signal = 0;
volatile pid_t g_child_pgid[2] = {0, 0};  // at most two stages run at once (trace and gen)

void on_signal(int sig) {
    if (!g_signal) g_signal = sig;
    for (int i = 0; i < 2; ++i) {
        pid_t pg = g_child_pgid[i];
        if (pg > 0) ::kill(-pg, sig);
    }
}

/// Installs the handlers for the lifetime of a run, restores the previous ones after.
struct SignalGuard {
    struct sigaction old_int {}, old_term {}, old_hup {};
    SignalGuard() {
        g_signal = 0;
        g_child_pgid[0] = g_child_pgid[1] = 0;
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        sigaction(SIGHUP, &sa, &old_hup);  // a closed terminal or SSH session cleans up like SIGTERM
    }
    ~SignalGuard() {
        sigaction(SIGINT, &old_int, nullptr);
        sigaction(SIGTERM, &old_term, nullptr);
        sigaction(SIGHUP, &old_hup, nullptr);
    }
};

/// ": REASON" from the last "kvio: REASON" line of a stage's log, "" when there is none.
std::string last_error_line(const std::string& log) {
    std::ifstream in(log);
    std::string line, last;
    while (std::getline(in, line))
        if (line.rfind("kvio: ", 0) == 0) last = line.substr(6);
    return last.empty() ? "" : ": " + last;
}

void check_interrupt() {
    if (g_signal) throw Interrupted(g_signal);
}

/// Starts argv with stdout and stderr appended to `log`. `forward`: the child gets its own process group and
/// SIGINT/SIGTERM reach it (its children too); otherwise it runs to completion and the signal is acted on after.
pid_t start_child(const std::vector<std::string>& argv, const std::string& log, bool forward) {
    if (forward) check_interrupt();  // helpers (losetup) still run after a signal: cleanup needs them
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &old, nullptr);
        throw Error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        if (forward) {
            setpgid(0, 0);
            prctl(PR_SET_PDEATHSIG, SIGTERM);  // a SIGKILLed `kvio run` does not leave its stage running
            if (getppid() != parent) _exit(128 + SIGTERM);
        }
        sigprocmask(SIG_SETMASK, &old, nullptr);
        exec_logged(argv, log, true, "kvio run");
    }
    if (forward) {
        setpgid(pid, pid);
        g_child_pgid[g_child_pgid[0] ? 1 : 0] = pid;
    }
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (forward && g_signal) ::kill(-pid, g_signal);  // arrived while blocked: handled above, forward it now
    return pid;
}

/// Waits for a child of start_child(); returns its exit status (128 + signal when killed).
int wait_child(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    for (int i = 0; i < 2; ++i)
        if (g_child_pgid[i] == pid) g_child_pgid[i] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run_child(const std::vector<std::string>& argv, const std::string& log, bool forward) {
    return wait_child(start_child(argv, log, forward));
}

/// Waits until `log` contains `needle` (true) or the child `pid` exited / `seconds` passed (false).
bool wait_for_line(const std::string& log, const std::string& needle, pid_t pid, double seconds) {
    for (int i = 0; i < int(seconds * 50); ++i) {
        std::ifstream f(log);
        std::stringstream ss;
        ss << f.rdbuf();
        if (ss.str().find(needle) != std::string::npos) return true;
        if (waitpid(pid, nullptr, WNOHANG) != 0 || g_signal) return false;
        usleep(20000);
    }
    return false;
}

std::string read_trimmed(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

/// A sparse image file attached as a loop device with direct I/O; detached (and removed unless kept) at destruction.
class LoopImage {
public:
    LoopImage(const std::string& image, uint64_t bytes, bool keep, const std::string& log) : image_(image), keep_(keep) {
        try {
            attach(bytes, log);
        } catch (...) {
            cleanup();
            throw;
        }
    }
    ~LoopImage() { cleanup(); }
    LoopImage(const LoopImage&) = delete;
    LoopImage& operator=(const LoopImage&) = delete;
    const std::string& dev() const { return dev_; }    ///< /dev/loopN
    const std::string& name() const { return name_; }  ///< loopN

private:
    void attach(uint64_t bytes, const std::string& log) {
        {
            int fd = open(image_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd < 0) throw Error("cannot create " + image_ + ": " + std::strerror(errno));
            created_ = true;
            int rc = ftruncate(fd, off_t(bytes));
            close(fd);
            if (rc != 0) throw Error("cannot size " + image_ + ": " + std::strerror(errno));
        }
        std::string out = image_ + ".losetup";
        int st = run_child({"losetup", "--find", "--show", "--direct-io=on", image_}, out, false);
        dev_ = read_trimmed(out);
        fs::remove(out);
        if (st != 0 || dev_.rfind("/dev/loop", 0) != 0) {
            // losetup may have attached and failed after: detach whatever holds the image_.
            detach_all(log);
            throw Error("losetup --direct-io=on " + image_ + " failed (exit status " + std::to_string(st) + "): " + dev_);
        }
        name_ = dev_.substr(5);
    }
    void cleanup() noexcept {
        try {
            std::string log = image_ + ".detach.log";
            detach_all(log);
            std::error_code ec;
            fs::remove(log, ec);
            if (created_ && !keep_) fs::remove(image_, ec);
        } catch (...) {
        }
    }
    /// Detaches every loop device whose backing file is the image (`losetup -j`), retrying while busy.
    void detach_all(const std::string& log) {
        for (int attempt = 0; attempt < 50; ++attempt) {
            std::string out = image_ + ".j";
            run_child({"losetup", "-j", image_}, out, false);
            std::string list = read_trimmed(out);
            std::error_code ec;
            fs::remove(out, ec);
            if (list.empty()) return;
            std::istringstream ls(list);
            std::string line;
            while (std::getline(ls, line)) {
                auto colon = line.find(':');
                if (colon != std::string::npos) run_child({"losetup", "-d", line.substr(0, colon)}, log, false);
            }
            usleep(100000);
        }
    }
    std::string image_, dev_, name_;
    bool keep_ = false, created_ = false;
};

struct Stopwatch {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

std::string resolve_exe(const std::string& exe) {
    if (exe != "/proc/self/exe") return exe;
    std::error_code ec;
    auto p = fs::read_symlink(exe, ec);
    if (ec) throw Error("cannot resolve /proc/self/exe: " + ec.message());
    return p.string();
}

std::string timestamp_dir() {
    char buf[64];
    time_t t = time(nullptr);
    struct tm tm {};
    localtime_r(&t, &tm);
    strftime(buf, sizeof buf, "kvio-run-%Y%m%d-%H%M%S", &tm);
    return buf;
}

}  // namespace

uint64_t image_bytes(uint64_t objects, uint64_t object_bytes) {
    constexpr uint64_t MiB = 1 << 20, align = 4096;
    uint64_t slot = (align + object_bytes + align - 1) / align * align;
    uint64_t b = MiB + objects * slot + MiB;
    return (b + MiB - 1) / MiB * MiB;
}

RunResult run_all(const RunOptions& o) {
    if (geteuid() != 0) throw Error("kvio run needs root (BPF tracing and loop devices); run it with sudo");
    if (o.target.empty() && o.layout == "files")
        throw Error("--layout files needs --target DIRECTORY (the embedded loop device is a raw block device)");
    SignalGuard sig;
    std::ostream* prog = o.progress;
    auto say = [&](const std::string& s) {
        if (prog) *prog << "kvio run: " << s << std::endl;
    };

    // A --target that is mounted or holds data is refused before anything is created or traced. gen's own check
    // reads the first MiB through the page cache, and its readahead (2 to dozens of commands, depending on what is
    // cached) would become part of the traced workload: gen is told --force below.
    if (!o.target.empty()) workload::check_device_safe(workload::inspect_target(o.target), o.force);

    std::string out = o.out_dir.empty() ? timestamp_dir() : o.out_dir;
    {
        std::error_code ec;
        if (fs::exists(out, ec) && !fs::is_empty(out, ec))
            throw Error("--out " + out + " is not empty; give a new or empty directory");
        fs::create_directories(out, ec);
        if (ec) throw Error("cannot create --out " + out + ": " + ec.message());
    }
    out = fs::absolute(out).lexically_normal().string();
    auto P = [&](const char* name) { return out + "/" + name; };
    const std::string exe = resolve_exe(o.kvio_exe);

    nlohmann::json doc = {{"schema", "kvio.run/1"}, {"out", out}};
    doc["options"] = {{"target", o.target}, {"model_args", o.model_args}, {"engine", o.engine}, {"layout", o.layout},
                      {"num_chunks", o.num_chunks}, {"keep", o.keep}};
    nlohmann::json stages = nlohmann::json::array();
    Stopwatch total;

    // ---- target ----
    const uint64_t img_bytes = image_bytes(o.objects, o.object_bytes);
    std::unique_ptr<LoopImage> img_a, img_b;
    std::string target = o.target;
    if (target.empty()) {
        Stopwatch sw;
        img_a = std::make_unique<LoopImage>(P("target.img"), img_bytes, o.keep, P("losetup.log"));
        check_interrupt();
        target = img_a->dev();
        say("target " + target + " (sparse " + std::to_string(img_bytes >> 20) + " MiB image " + P("target.img") +
            ", direct I/O)");
        stages.push_back({{"name", "attach"}, {"seconds", sw.seconds()}});
    }
    BlockDevInfo tinfo = block_dev_info_for_path(target);
    doc["target"] = {{"path", target}, {"disk", tinfo.whole_disk_name}, {"dev", dev_string(tinfo.whole_disk)},
                     {"embedded", o.target.empty()}, {"image", o.target.empty() ? P("target.img") : ""}};

    // ---- gen under trace ----
    {
        Stopwatch sw;
        say("gen " + std::to_string(o.num_chunks) + " chunks on " + target + " under kvio trace (log " + P("gen.log") + ")");
        // LBA heatmap buckets: 1/64 of the disk, at least 1 MiB.
        uint64_t disk_bytes = block_dev_info(tinfo.whole_disk).size_bytes;
        uint64_t lba_bucket = std::max<uint64_t>(1 << 20, (disk_bytes / 64 + (1 << 20) - 1) >> 20 << 20);
        std::vector<std::string> tr = {exe, "trace", "--events", P("events.jsonl"), "--json", P("trace.json"),
                                       "--lba-bucket", std::to_string(lba_bucket), "-d", tinfo.whole_disk_name};
        std::vector<std::string> gen = {exe, "gen", "-q", "--target", target, "--engine", o.engine, "--layout", o.layout,
                                        "--num-chunks", std::to_string(o.num_chunks), "--semantic", P("semantic.jsonl"),
                                        "--record", P("record.json")};
        gen.insert(gen.end(), o.model_args.begin(), o.model_args.end());
        gen.push_back("--force");  // checked above, untraced (the embedded image was just created sparse)
        int st = 0;
        if (o.target.empty()) {
            // The embedded device is this run's alone: the device filter is exact, no process filter needed (the
            // process filter misses requests a kworker issues from the plug's cached requests: no block_getrq).
            pid_t tp = start_child(tr, P("trace.log"), true);
            if (!wait_for_line(P("trace.log"), "kvio trace: tracing", tp, 60)) {
                ::kill(-tp, SIGTERM);
                int ts = wait_child(tp);
                check_interrupt();
                throw Error("stage trace did not start (exit status " + std::to_string(ts) + "); see " + P("trace.log"));
            }
            st = run_child(gen, P("gen.log"), true);
            ::kill(-tp, SIGINT);  // stop tracing: it flushes the events and writes the summary
            int ts = wait_child(tp);
            check_interrupt();
            if (ts != 0 && st == 0) throw Error("stage trace failed (exit status " + std::to_string(ts) + "); see " + P("trace.log"));
        } else {
            tr.insert(tr.begin() + 2, "-q");
            tr.push_back("--");
            tr.insert(tr.end(), gen.begin(), gen.end());
            st = run_child(tr, P("gen.log"), true);
        }
        check_interrupt();
        if (st != 0)
            throw Error("stage gen-under-trace failed (exit status " + std::to_string(st) + ")" + last_error_line(P("gen.log")) +
                        "; see " + P("gen.log"));
        stages.push_back({{"name", "trace+gen"}, {"seconds", sw.seconds()}});
    }

    // ---- validate ----
    validate::Report vr;
    {
        Stopwatch sw;
        say("validate " + P("events.jsonl") + " against " + P("semantic.jsonl"));
        validate::Options vo;
        vo.commands = P("events.jsonl");
        vo.semantic = P("semantic.jsonl");
        vo.record = P("record.json");
        vo.geometry.trace_json = P("trace.json");
        vr = validate::run(vo);
        write_json_file(P("validate.json"), validate::report_json(vr));
        std::ofstream t(P("validate.txt"));
        validate::print_report(t, vr);
        doc["validate"] = validate::report_json(vr);
        stages.push_back({{"name", "validate"}, {"seconds", sw.seconds()}});
    }
    check_interrupt();

    // The trace's profile first: the verify device must hold the job's whole region (offset + size), or fio
    // would quietly shrink it and the fidelity would describe another workload.
    distiller::EventTrace ev = distiller::load_events(P("events.jsonl"), distiller::EventFilter{dev_string(tinfo.whole_disk), 0, ""});
    distiller::Profile orig = distiller::profile_events(ev);
    const uint64_t verify_bytes = std::max(img_bytes, (orig.lba_hi_bytes + (2 << 20) - 1) >> 20 << 20);

    // ---- second device for the verify replay ----
    {
        Stopwatch sw;
        img_b = std::make_unique<LoopImage>(P("verify.img"), verify_bytes, o.keep, P("losetup.log"));
        check_interrupt();
        stages.push_back({{"name", "attach-verify"}, {"seconds", sw.seconds()}});
    }
    const std::string vdev = img_b->dev();
    doc["verify_target"] = {{"path", vdev}, {"image", P("verify.img")}};

    // ---- distill ----
    {
        Stopwatch sw;
        say("distill " + P("events.jsonl") + " -> " + P("job.fio") + ", " + P("job.iolog") + " (filename " + vdev + ")");
        distiller::JobOptions jo;
        jo.filename = vdev;
        jo.target_is_block = true;
        BlockDevInfo disk = block_dev_info(tinfo.whole_disk);
        if (disk.nr_requests) {
            jo.nr_requests = disk.nr_requests;
            jo.nr_requests_source = "/sys/block/" + disk.name + "/queue/nr_requests";
        }
        distiller::FioJob job = distiller::make_fio_job(orig, jo);
        {
            std::ofstream f(P("job.fio"));
            f << "; kvio run: filename=" << vdev << " was this run's temporary verify device, detached when the run ended:\n"
              << "; set filename= to your own device before running this job\n"
              << job.text;
            if (!f.flush()) throw Error("cannot write " + P("job.fio"));
        }
        std::ofstream il(P("job.iolog"));
        size_t n = distiller::write_iolog(il, ev.cmds, vdev);
        if (!il.flush()) throw Error("cannot write " + P("job.iolog"));
        nlohmann::json jopts = nlohmann::json::object();
        for (const auto& [k, v] : job.options) jopts[k] = v;
        doc["job"] = {{"options", jopts}, {"not_inferred", job.not_inferred}, {"iolog_ios", n}};
        stages.push_back({{"name", "distill"}, {"seconds", sw.seconds()}});
    }
    check_interrupt();

    // ---- verify: the job under trace on the second device ----
    {
        Stopwatch sw;
        say("verify: fio " + P("job.fio") + " on " + vdev + " under kvio trace (log " + P("verify.log") + ")");
        std::vector<std::string> a = {exe, "trace", "-q", "--events", P("replay.events.jsonl"), "--json", P("replay.trace.json"),
                                      "-d", img_b->name(), "--", "fio", "--output-format=json",
                                      "--output=" + P("replay.fio.json"), P("job.fio")};
        int st = run_child(a, P("verify.log"), true);
        check_interrupt();
        if (st != 0) throw Error("stage verify failed (exit status " + std::to_string(st) + "); see " + P("verify.log"));
        distiller::EventFilter f;
        f.dev = dev_string(block_dev_info_for_path(vdev).whole_disk);
        distiller::Profile rep = distiller::profile_events(distiller::load_events(P("replay.events.jsonl"), f));
        distiller::Fidelity fid = distiller::score(orig, rep);
        nlohmann::json fj = distiller::to_json(fid);
        fj["replay_events"] = P("replay.events.jsonl");
        fj["original_cmds"] = orig.cmds();
        fj["replay_cmds"] = rep.cmds();
        write_json_file(P("verify.json"), fj);
        doc["fidelity"] = fj;
        stages.push_back({{"name", "verify"}, {"seconds", sw.seconds()}});
    }

    doc["files"] = {{"events", P("events.jsonl")},       {"trace", P("trace.json")},       {"semantic", P("semantic.jsonl")},
                    {"record", P("record.json")},        {"validate", P("validate.json")}, {"job", P("job.fio")},
                    {"iolog", P("job.iolog")},           {"verify", P("verify.json")},     {"replay_events", P("replay.events.jsonl")},
                    {"report", P("report.html")},        {"gen_log", P("gen.log")},        {"verify_log", P("verify.log")}};
    doc["stages"] = stages;
    doc["seconds"] = total.seconds();
    write_json_file(P("run.json"), doc);

    say("report " + P("report.html"));
    write_report(out, P("report.html"));
    check_interrupt();

    RunResult r;
    r.doc = doc;
    r.summary_line = validate::summary_line(vr);
    r.report_path = P("report.html");
    return r;  // img_b then img_a are detached and removed here
}

}  // namespace kvio::run
