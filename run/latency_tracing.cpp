#include "run/latency_tracing.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/exec_logged.h"
#include "common/event_trace.h"
#include "distiller/distill.h"
#include "validate/validate.h"

namespace kvio::run {

namespace fs = std::filesystem;

namespace {

std::string last_line(const std::string& path) {
    std::ifstream f(path);
    std::string line, last;
    while (std::getline(f, line))
        if (!line.empty()) last = line;
    return last;
}

int wait_status(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

LatencyTracingOptions latency_tracing_options(const serving::SimConfig& c) {
    LatencyTracingOptions o;
    const char* tmp = std::getenv("TMPDIR");
    o.cache_dir = !c.cache_dir.empty() ? c.cache_dir : tmp && *tmp ? tmp : "/tmp";
    o.trace_dir = c.trace_dir;
    o.syscalls = c.trace_syscalls;
    o.storage_io = c.storage_io;
    return o;
}

LatencyTracing::LatencyTracing(const LatencyTracingOptions& o) : o_(o) {
    BlockDevInfo info;
    try {
        // The cache creates --cache-dir when it is missing: its disk is the one of the nearest existing parent.
        fs::path p = fs::absolute(o.cache_dir);
        std::error_code ec;
        while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
        info = block_dev_info_for_path(p.string());
    } catch (const Error&) {
        throw Error("--enable-latency-tracing: --cache-dir " + o.cache_dir +
                    " is not on a block device (tmpfs?): there are no device commands to trace");
    }
    disk_ = info.whole_disk_name;
    if (o.trace_dir.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "kvio-simtrace-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw Error("cannot create a temporary trace directory: " + std::string(std::strerror(errno)));
        dir_ = tmpl;
        temp_dir_ = true;
    } else {
        std::error_code ec;
        fs::create_directories(o.trace_dir, ec);
        if (ec) throw Error("--trace-dir " + o.trace_dir + ": " + ec.message());
        dir_ = o.trace_dir;
    }
    const std::string ready = dir_ + "/ready", log = dir_ + "/trace.log";
    fs::remove(ready);
    std::vector<std::string> argv = {
        o.kvio_exe,           "trace",        "-q", "-d", disk_, "--events", dir_ + "/events.jsonl", "--json",
        dir_ + "/trace.json", "--ready-file", ready};
    if (o.syscalls) argv.push_back("--syscalls");
    const pid_t parent = getpid();
    child_ = fork();
    if (child_ < 0) throw Error(std::string("fork: ") + std::strerror(errno));
    if (child_ == 0) {
        setpgid(0, 0);  // the terminal's Ctrl-C reaches the simulation, which stops the tracer itself
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(128 + SIGTERM);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        exec_logged(argv, log, false, "kvio simulate");
    }
    setpgid(child_, child_);
    for (int i = 0; i < int(o.ready_timeout_s * 50); ++i) {
        if (fs::exists(ready)) return;
        int st = 0;
        if (waitpid(child_, &st, WNOHANG) == child_) {
            child_ = 0;
            throw Error("--enable-latency-tracing: kvio trace exited before attaching: " + last_line(log) + " (see " +
                        log + ")");
        }
        usleep(20000);
    }
    stop();
    throw Error("--enable-latency-tracing: kvio trace did not attach within " + std::to_string(int(o.ready_timeout_s)) +
                " s (see " + log + ")");
}

void LatencyTracing::stop() {
    if (child_ <= 0) return;
    ::kill(-child_, SIGINT);  // kvio trace flushes the events and writes its summary on SIGINT
    wait_status(child_);
    child_ = 0;
}

LatencyTracing::~LatencyTracing() {
    stop();
    if (temp_dir_) {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
}

LatencyTracingResult LatencyTracing::finish() {
    if (child_ <= 0) throw Error("--enable-latency-tracing: the tracer is not running");
    ::kill(-child_, SIGINT);
    const int st = wait_status(child_);
    child_ = 0;
    const std::string log = dir_ + "/trace.log", events = dir_ + "/events.jsonl", trace_json = dir_ + "/trace.json";
    if (st != 0)
        throw Error("--enable-latency-tracing: kvio trace failed (exit status " + std::to_string(st) +
                    "): " + last_line(log) + " (see " + log + ")");
    LatencyTracingResult r;

    nlohmann::json tj;
    {
        std::ifstream f(trace_json);
        if (!f) throw Error(trace_json + ": cannot read the tracer's summary");
        tj = nlohmann::json::parse(f, nullptr, false);
        if (tj.is_discarded()) throw Error(trace_json + ": not JSON");
    }
    r.device_latency_tracing = {
        {"tool", "kvio trace"}, {"schema", tj.value("schema", "kvio.trace/1")}, {"device", disk_}};
    r.device_latency_tracing["devices"] =
        tj.contains("devices") ? nlohmann::ordered_json(tj["devices"]) : nlohmann::ordered_json::array();
    if (tj.contains("duration_s")) r.device_latency_tracing["duration_s"] = tj["duration_s"];
    if (tj.contains("process")) r.device_latency_tracing["process"] = tj["process"];

    // Too little traced (a run stopped early: no reads/writes, or no commands at all) makes validate or distill
    // refuse the trace; the run's results are still written, with the reason in place of what could not be made.
    try {
        validate::Options vo;
        vo.commands = events;
        vo.semantic = semantic_path();
        vo.geometry.trace_json = trace_json;
        const validate::Report rep = validate::run(vo);
        r.validation = validate::report_json(rep);
        r.summary_line = validate::summary_line(rep);
        r.validation["summary"] = r.summary_line;
        // Buffered storage I/O reaches the device as page-cache writeback and readahead, not per op
        // (docs/validate.md, "Projection"): the exact-match score cannot hold and must not read as a defect.
        if (o_.storage_io == "buffered")
            r.warnings.push_back(
                "--storage-io buffered: the device's commands come from page-cache writeback and "
                "readahead, not one per op, so exact matches are not expected (" +
                r.summary_line + "); --storage-io direct or io_uring validates each op exactly");
    } catch (const std::exception& e) {
        r.validation = {{"summary", nullptr}, {"not_validated", e.what()}};
        r.warnings.push_back(std::string("the trace could not be validated: ") + e.what());
    }
    const std::string ini = dir_ + "/fio_workload.ini";
    try {
        // The job `kvio distill --events events.jsonl --dev DISK --filename FILE` makes, named for simulate.
        // The level the trace calls for (docs/distill.md, "Two levels"): with --trace-syscalls a buffered cache's
        // device commands come from the page cache, and the file-level job carries the workload; without syscall
        // records only the device level can be derived.
        distiller::DistillOptions dopt;
        dopt.events = events;
        dopt.dev = disk_;
        // A file-level job reads iologs beside it: without --trace-dir they would go with the temporary directory.
        dopt.level = temp_dir_ ? distiller::DistillLevel::Device : distiller::DistillLevel::Auto;
        dopt.filenames = {(fs::path(o_.cache_dir) / "kvio-fio-workload.dat").string()};
        dopt.directory = (fs::absolute(o_.cache_dir) / "kvio-fio-workload").string();
        dopt.job_name = "kvio-simulate";
        dopt.out = ini;  // a file-level job reads iologs written beside it (fio_workload.ini.*)
        const distiller::DistillResult dr = distiller::distill(dopt);
        r.fio_workload = dr.level == "file" ? dr.file_job_text : dr.job.text;
        r.validation["fio_workload_level"] = dr.level;
        r.validation["fio_workload_level_reason"] =
            temp_dir_ ? "the file level needs --trace-dir (its job reads iologs kept beside it)" : dr.level_reason;
    } catch (const std::exception& e) {
        r.fio_workload.reset();
        r.validation["fio_workload_not_distilled"] = e.what();
        r.warnings.push_back(std::string("no fio job could be distilled from the trace: ") + e.what());
    }
    r.validation["files"] =
        temp_dir_ ? nlohmann::ordered_json(nullptr)
                  : nlohmann::ordered_json{
                        {"events", events},
                        {"semantic", semantic_path()},
                        {"trace_json", trace_json},
                        {"fio_job", r.fio_workload ? nlohmann::ordered_json(ini) : nlohmann::ordered_json(nullptr)}};
    return r;
}

void add_latency_tracing_results(const LatencyTracingResult& r, nlohmann::ordered_json& results) {
    results["device_latency_tracing"] = r.device_latency_tracing;
    results["fio_workload"] =
        r.fio_workload ? nlohmann::ordered_json(*r.fio_workload) : nlohmann::ordered_json(nullptr);
    results["kvio"]["validation"] = r.validation;
}

namespace {

class LatencyTracingHook : public serving::StorageTracing {
public:
    explicit LatencyTracingHook(const serving::SimConfig& c) : tracing_(latency_tracing_options(c)) {}
    std::string semantic_path() const override { return tracing_.semantic_path(); }
    std::vector<std::string> finish(nlohmann::ordered_json& results) override {
        const LatencyTracingResult r = tracing_.finish();
        add_latency_tracing_results(r, results);
        return r.warnings;
    }

private:
    LatencyTracing tracing_;
};

}  // namespace

std::unique_ptr<serving::StorageTracing> start_latency_tracing(const serving::SimConfig& c) {
    return std::make_unique<LatencyTracingHook>(c);
}

}  // namespace kvio::run
