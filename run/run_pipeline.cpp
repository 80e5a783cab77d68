#include "run/run_pipeline.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "common/event_trace.h"
#include "distiller/distill.h"
#include "distiller/fidelity.h"
#include "distiller/fio_job.h"
#include "distiller/iolog.h"
#include "distiller/profile.h"
#include "distiller/phased_job.h"
#include "distiller/timeline.h"
#include "run/loop_image.h"
#include "report/perfetto_timeline.h"
#include "report/report_html.h"
#include "run/run_guard.h"
#include "run/stage_process.h"
#include "validate/validate.h"
#include "workload/gen.h"
#include "workload/target.h"

namespace kvio::run {

namespace fs = std::filesystem;

namespace {

void check_interrupt() {
    if (int sig = signal_received()) throw Interrupted(sig);
}

/// Waits until `p` printed `needle` (true) or exited / `seconds` passed / a signal arrived (false).
bool wait_for_output(StageProcess& p, const std::string& needle, double seconds) {
    for (int i = 0; i < int(seconds * 50); ++i) {
        if (p.output().find(needle) != std::string::npos) return true;
        if (p.exited() || signal_received()) return false;
        usleep(20000);
    }
    return false;
}

struct Stopwatch {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

/// While alive, every forwarding stage's process group is reported to the run's guard (set_stage_observer).
struct StageObserver {
    explicit StageObserver(RunGuard& g) {
        set_stage_observer([&g](pid_t pg, bool running) { g.stage(pg, running); });
    }
    ~StageObserver() { set_stage_observer({}); }
};

/// What run_all's stages report to: the progress lines ("kvio run: ..." to `prog`, none when null) and run.json's
/// "stages" ([{name, seconds}], in the order they ran).
struct RunStages {
    std::ostream* prog = nullptr;
    nlohmann::json stages = nlohmann::json::array();
    std::string current;  ///< the stage running now (run.json's "interrupted.stage" when a signal stops it)
    void say(const std::string& s) const {
        if (prog) *prog << "kvio run: " << s << std::endl;
    }
    void done(const char* name, const Stopwatch& sw) {
        stages.push_back({{"name", name}, {"seconds", sw.seconds()}});
        current.clear();
    }
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

/// Fails unless the filesystem that holds (or will hold) `out` has `need` bytes available to us (statvfs f_bavail).
void check_room_for_run(const std::string& out, uint64_t need) {
    fs::path p = fs::absolute(out);
    std::error_code ec;
    while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
    struct statvfs sv {};
    if (::statvfs(p.c_str(), &sv) != 0) return;  // nothing to judge by; the stages report what fails
    const uint64_t avail = uint64_t(sv.f_bavail) * sv.f_frsize;
    if (avail < need)
        throw Error("--out " + out + ": its filesystem has " + std::to_string(avail >> 20) +
                    " MiB free, but this run needs about " + std::to_string((need + (1 << 20) - 1) >> 20) +
                    " MiB there (the sparse images fill as gen and the verify "
                    "replay write them, plus the traces); free space there, lower --num-chunks or give another --out");
}

/// Scores OUT/events.jsonl against OUT/semantic.jsonl (record.json when present, trace.json for the geometry) and
/// writes OUT/validate.json and OUT/validate.txt.
validate::Report validate_run_dir(const std::string& out) {
    validate::Options vo;
    vo.commands = out + "/events.jsonl";
    vo.semantic = out + "/semantic.jsonl";
    if (fs::exists(out + "/record.json")) vo.record = out + "/record.json";  // gen writes one; simulate does not
    vo.geometry.trace_json = out + "/trace.json";
    validate::Report vr = validate::run(vo);
    write_json_file(out + "/validate.json", validate::report_json(vr));
    std::ofstream t(out + "/validate.txt");
    validate::print_report(t, vr);
    if (!t.flush()) throw Error("cannot write " + out + "/validate.txt");
    return vr;
}

/// Throws Interrupted(sig) with the scores of what the stopped workload completed (OUT/validate.json, validate.txt).
[[noreturn]] void throw_interrupted_scored(int sig, const std::string& out) {
    Interrupted stop(sig);
    try {
        stop.validated = validate::summary_line(validate_run_dir(out)) + " (" + out + "/validate.txt)";
    } catch (const std::exception& e) {
        stop.validated = std::string("not scored: ") + e.what();
    }
    throw stop;
}

/// The serving workload's stage: ext4 on `dev` mounted at OUT/mnt, `kvio simulate` (its own tracer on the device:
/// OUT/events.jsonl, semantic.jsonl, trace.json) with its log in OUT/simulate.log; unmounted when it returns.
/// Stopped by a signal, simulate ends its requests and writes its results first; what it stored and loaded until
/// then is scored (Interrupted::validated).
void simulate_stage(const RunOptions& o, const std::string& out, const std::string& dev, const std::string& exe,
                    RunGuard& guard) {
    const std::string log = out + "/simulate.log";
    int st = 0;
    std::string output, log_error;
    {
        guard.mount(out + "/mnt");
        Ext4Mount mnt(dev, out + "/mnt");
        StageProcess p(simulate_argv(exe, o.sim, mnt.dir() + "/cache", out), log, true);
        st = p.wait();
        output = p.output();
        log_error = p.log_error();
    }
    if (int sig = signal_received()) throw_interrupted_scored(sig, out);
    if (st != 0)
        throw Error("stage simulate-under-trace failed (exit status " + std::to_string(st) + ")" +
                    last_error_line(output) + (log_error.empty() ? "; see " + log : " (" + log_error + ")"));
}

/// The layout gen will use (o.layout, or the one the target implies), after refusing a run without root, an unknown
/// --workload and everything gen would refuse about the target, layout and engine; `cap_guess`: the largest transfer
/// expected on the target (bytes).
std::string checked_layout(const RunOptions& o, bool sim, uint64_t& cap_guess) {
    if (geteuid() != 0) throw Error("kvio run needs root (BPF tracing and loop devices); run it with sudo");
    // Everything gen would refuse about the target, layout and engine is refused here, before anything is traced.
    if (!sim && o.workload != "objects")
        throw UsageError("--workload " + o.workload + ": expected objects or simulate");
    std::string layout = o.layout;
    cap_guess = kEmbeddedCapGuess;
    if (sim) {
        if (!o.target.empty())
            throw UsageError(
                "--workload simulate runs on the embedded loop device (ext4 is made on it): --target is not used");
        if (!layout.empty())
            throw UsageError("--workload simulate: --layout is gen's (the storage tier writes one file per entry)");
        layout = "files";
    } else if (o.target.empty()) {
        if (layout == "files")
            throw UsageError(
                "--layout files needs --target DIRECTORY (the embedded loop device is a raw block device)");
        if (o.engine == "uring_cmd")
            throw UsageError(
                "--engine uring_cmd needs --target /dev/ngXnY (an NVMe generic char device); the embedded loop "
                "device is a block device: use --engine posix or io_uring, or give an NVMe namespace");
        layout = "slots";
    } else {
        // A --target that is mounted, read-only or holds data is refused before anything is created or traced. gen's
        // own check reads the first MiB through the page cache, and its readahead (2 to dozens of commands, depending
        // on what is cached) would become part of the traced workload: gen is told --force below.
        workload::TargetInfo t = workload::inspect_target(o.target);
        workload::check_engine_target(o.engine, t);
        std::optional<workload::Layout> asked;
        if (!layout.empty()) asked = workload::parse_layout(layout);
        layout = workload::layout_name(workload::resolve_layout(asked, t));
        workload::check_device_safe(t, o.force);
        // A device too small for the objects is refused here, before trace and gen start (gen's exact check comes
        // later): the slots layout needs at least its 1 MiB metadata region and every object's payload.
        const uint64_t at_least = (uint64_t(1) << 20) + o.objects * o.object_bytes;
        if (t.kind == workload::TargetKind::BlockDevice && layout == "slots" && o.objects &&
            t.capacity_bytes < at_least)
            throw Error("--target " + o.target + " has " + std::to_string(t.capacity_bytes) + " bytes, but " +
                        std::to_string(o.objects) + " objects of " + std::to_string(o.object_bytes) +
                        " bytes need at least " + std::to_string(at_least) + " (lower --num-chunks)");
        cap_guess = workload::default_max_io(t, o.engine == "uring_cmd");
    }
    return layout;
}

/// Checks and creates the run directory `out` (new or empty; simulate's own parser accepts the --sim-args; the
/// filesystem has room for about what the run writes, `img_bytes` per embedded image), before a device is touched.
void prepare_out_dir(const RunOptions& o, bool sim, const std::string& out, uint64_t img_bytes, uint64_t cap_guess) {
    {
        std::error_code ec;
        if (fs::exists(out, ec) && !fs::is_empty(out, ec))
            throw Error("--out " + out + " is not empty; give a new or empty directory");
    }
    if (sim && o.check_simulate_args) {
        // simulate's own parser, before a device is touched: a bad --sim-arg fails here, not after mkfs.
        const std::string abs_out = fs::absolute(out).lexically_normal().string();
        std::vector<std::string> argv = simulate_argv("kvio", o.sim, abs_out + "/mnt/cache", abs_out);
        try {
            o.check_simulate_args({argv.begin() + 2, argv.end()});
        } catch (const Error& e) {
            throw Error(std::string("--workload simulate: ") + e.what());
        }
    }
    // The embedded images are sparse: the filesystem under --out fills as gen and the verify replay write them.
    check_room_for_run(out, sim ? simulate_run_dir_bytes(img_bytes)
                                : run_dir_bytes(o.objects, o.object_bytes, cap_guess, o.target.empty()));
    {
        std::error_code ec;
        fs::create_directories(out, ec);
        if (ec) throw Error("cannot create --out " + out + ": " + ec.message());
    }
}

/// run.json's "options": what the run was asked (kvio.run/1, docs/formats.md).
nlohmann::json options_json(const RunOptions& o, bool sim, const std::string& layout) {
    nlohmann::json j = {{"target", o.target},    {"model_args", o.model_args}, {"engine", o.engine},
                        {"layout", layout},      {"num_chunks", o.num_chunks}, {"keep", o.keep},
                        {"workload", o.workload}};
    if (sim)
        j["simulate"] = {{"model", o.sim.model},
                         {"num_users", o.sim.num_users},
                         {"duration_s", o.sim.duration_s},
                         {"storage_io", o.sim.storage_io},
                         {"generation_mode", o.sim.generation_mode},
                         {"image_bytes", o.sim.image_bytes},
                         {"extra_args", o.sim.extra_args}};
    return j;
}

/// run.json's "simulate": the figures of simulate's results file `path` (kvio.simulate/1) the summary shows.
nlohmann::json simulate_summary(const std::string& path) {
    const json sj = read_json_file(path);
    const json& sm = sj.value("summary", json::object());
    return json{
        {"requests_completed", sj.value("requests_completed", uint64_t(0))},
        {"requests_per_second", sm.value("requests_per_second", 0.0)},
        {"elapsed_s", sm.value("elapsed_time", 0.0)},
        {"cache_hit_rate", sm.value("cache_stats", json::object()).value("cache_hit_rate", 0.0)},
        {"storage_ops",
         sj.contains("kvio") ? sj["kvio"].value("validation", json::object()).value("objects", uint64_t(0)) : 0},
        {"stop", sj.contains("kvio") ? sj["kvio"].value("stop", json::object()).value("reason", "") : ""}};
}

/// The objects workload's stage: `kvio gen` on `target` under `kvio trace` (OUT/events.jsonl, trace.json,
/// semantic.jsonl, record.json; logs OUT/gen.log and, on the embedded device, OUT/trace.log). On the embedded device
/// the tracer runs beside gen (device filter only), on a --target it runs gen as its COMMAND. Stopped by a signal,
/// gen finishes the ops in flight and what it completed is scored (Interrupted::validated).
void gen_stage(const RunOptions& o, const std::string& out, const std::string& exe, const std::string& target,
               const BlockDevInfo& tinfo, const std::string& layout) {
    auto P = [&](const char* name) { return out + "/" + name; };
    // LBA heatmap buckets: 1/64 of the disk, at least 1 MiB.
    uint64_t disk_bytes = block_dev_info(tinfo.whole_disk).size_bytes;
    uint64_t lba_bucket = std::max<uint64_t>(1 << 20, (disk_bytes / 64 + (1 << 20) - 1) >> 20 << 20);
    std::vector<std::string> tr = {exe,
                                   "trace",
                                   "--events",
                                   P("events.jsonl"),
                                   "--json",
                                   P("trace.json"),
                                   "--lba-bucket",
                                   std::to_string(lba_bucket),
                                   "-d",
                                   tinfo.whole_disk_name};
    std::vector<std::string> gen = {exe,
                                    "gen",
                                    "-q",
                                    "--target",
                                    target,
                                    "--engine",
                                    o.engine,
                                    "--layout",
                                    layout,
                                    "--num-chunks",
                                    std::to_string(o.num_chunks),
                                    "--semantic",
                                    P("semantic.jsonl"),
                                    "--record",
                                    P("record.json")};
    gen.insert(gen.end(), o.model_args.begin(), o.model_args.end());
    gen.push_back("--force");  // checked above, untraced (the embedded image was just created sparse)
    int st = 0;
    std::string gen_out, gen_log_error;
    if (o.target.empty()) {
        // The embedded device is this run's alone: the device filter is exact, no process filter needed (the
        // process filter misses requests a kworker issues from the plug's cached requests: no block_getrq).
        StageProcess trace(tr, P("trace.log"), true);
        if (!wait_for_output(trace, "kvio trace: tracing", 60)) {
            trace.signal(SIGTERM);
            int ts = trace.wait();
            check_interrupt();
            throw Error("stage trace did not start (exit status " + std::to_string(ts) + ")" +
                        last_error_line(trace.output()) + "; see " + P("trace.log"));
        }
        // From here a signal reaches gen alone, and the tracer is stopped once gen exited: it sees every command
        // of the ops gen completes after the signal.
        trace.stop_forwarding();
        try {
            StageProcess g(gen, P("gen.log"), true);
            st = g.wait();
            gen_out = g.output();
            gen_log_error = g.log_error();
        } catch (...) {
            trace.signal(SIGINT);
            trace.wait();
            throw;
        }
        trace.signal(SIGINT);  // stop tracing: it flushes the events and writes the summary
        int ts = trace.wait();
        if (ts != 0 && st == 0 && !signal_received())
            throw Error("stage trace failed (exit status " + std::to_string(ts) + ")" +
                        last_error_line(trace.output()) + "; see " + P("trace.log"));
    } else {
        tr.insert(tr.begin() + 2, "-q");
        tr.push_back("--");
        tr.insert(tr.end(), gen.begin(), gen.end());
        StageProcess g(tr, P("gen.log"), true);
        st = g.wait();
        gen_out = g.output();
        gen_log_error = g.log_error();
    }
    // gen finished the ops in flight and wrote the completed ones: score what was done before stopping.
    if (int sig = signal_received()) throw_interrupted_scored(sig, out);
    if (st != 0)
        throw Error("stage gen-under-trace failed (exit status " + std::to_string(st) + ")" + last_error_line(gen_out) +
                    (gen_log_error.empty() ? "; see " + P("gen.log") : " (" + gen_log_error + ")"));
}

/// The distill stage: the job `kvio distill --events OUT/events.jsonl --dev DEV --filename VDEV --iolog job.iolog`
/// makes (distiller::distill on the trace `ev` already read), written to OUT/job.fio with a header naming the
/// temporary verify device; fills run.json's "job" (options, not inferred, iolog ios, every stretch's phases).
void distill_stage(const std::string& out, RunStages& log, nlohmann::json& doc, const kvio::EventTrace& ev,
                   const std::string& dev, const std::string& vdev) {
    auto P = [&](const char* name) { return out + "/" + name; };
    Stopwatch sw;
    log.say("distill " + P("events.jsonl") + " -> " + P("job.fio") + ", " + P("job.iolog") + " (filename " + vdev +
            ")");
    distiller::DistillOptions dopt;
    dopt.events = P("events.jsonl");
    dopt.dev = dev;
    dopt.loaded = {ev};
    dopt.filenames = {vdev};
    dopt.iolog = P("job.iolog");
    const distiller::DistillResult dr = distiller::distill(dopt);
    const distiller::FioJob& job = dr.job;
    {
        std::ofstream f(P("job.fio"));
        f << "; kvio run: filename=" << vdev
          << " was this run's temporary verify device, detached when the run ended:\n"
          << "; set filename= to your own device before running this job\n"
          << job.text;
        if (!f.flush()) throw Error("cannot write " + P("job.fio"));
    }
    nlohmann::json phases = nlohmann::json::array();  // every stretch's phases (one stretch without trim runs)
    for (const auto& piece : dr.plans.at(0).pieces)
        for (const auto& ph : distiller::phases_json(piece)) phases.push_back(ph);
    doc["job"] = {{"options", distiller::job_json(job)},
                  {"not_inferred", job.not_inferred},
                  {"iolog_ios", dr.iolog_ios},
                  {"phases", phases}};
    log.done("distill", sw);
}

/// Turns fio's --output file `partial` into the JSON document at `path` (written whole, through write_json_file)
/// and removes `partial`. fio writes its notes ("fio: terminating on signal 2") into the same file before the JSON
/// document: the document is read from the first line that starts with '{'. A file without a whole document (fio
/// killed mid-write) leaves nothing under `path`.
void settle_fio_json(const std::string& partial, const std::string& path) {
    std::ifstream f(partial);
    if (!f) return;
    std::stringstream ss;
    ss << f.rdbuf();
    f.close();
    const std::string text = ss.str();
    const size_t start = text.rfind('{', 0) == 0 ? 0 : text.find("\n{");
    std::error_code ec;
    if (start != std::string::npos) {
        const json j = json::parse(text.begin() + long(start), text.end(), nullptr, false);
        if (!j.is_discarded()) write_json_file(path, j);
    }
    fs::remove(partial, ec);
}

/// The verify stage: the distilled OUT/job.fio run by fio on `vdev` (loop device `vdev_name`) under `kvio trace`
/// (OUT/replay.events.jsonl, replay.trace.json, replay.fio.json (whole or absent: settle_fio_json); log
/// OUT/verify.log), scored against the original
/// profile `orig` and, window by window, the trace `ev`'s data commands; writes OUT/verify.json and returns what it
/// holds.
nlohmann::json verify_stage(const std::string& out, const std::string& exe, const std::string& vdev,
                            const std::string& vdev_name, const distiller::Profile& orig, const kvio::EventTrace& ev) {
    auto P = [&](const char* name) { return out + "/" + name; };
    std::vector<std::string> a = {exe,
                                  "trace",
                                  "-q",
                                  "--events",
                                  P("replay.events.jsonl"),
                                  "--json",
                                  P("replay.trace.json"),
                                  "-d",
                                  vdev_name,
                                  "--",
                                  "fio",
                                  "--output-format=json",
                                  "--output=" + P("replay.fio.json") + ".partial",
                                  P("job.fio")};
    int st = StageProcess(a, P("verify.log"), true).wait();
    settle_fio_json(P("replay.fio.json") + ".partial", P("replay.fio.json"));
    check_interrupt();
    if (st != 0) throw Error("stage verify failed (exit status " + std::to_string(st) + "); see " + P("verify.log"));
    kvio::EventFilter f;
    f.dev = dev_string(block_dev_info_for_path(vdev).whole_disk);
    kvio::EventTrace rev = kvio::load_events(P("replay.events.jsonl"), f);
    distiller::Profile rep = distiller::profile_events(rev);
    distiller::Fidelity fid = distiller::score(orig, rep);
    distiller::TimeFidelity tf =
        distiller::score_over_time(distiller::data_cmds(ev.cmds), distiller::data_cmds(rev.cmds));
    nlohmann::json fj = distiller::to_json(fid);
    fj["time_resolved"] = distiller::to_json(tf);
    fj["summary"] = distiller::summary_line(fid, tf);
    fj["replay_events"] = P("replay.events.jsonl");
    fj["original_cmds"] = orig.cmds();
    fj["replay_cmds"] = rep.cmds();
    write_json_file(P("verify.json"), fj);
    return fj;
}

/// OUT/timeline.json from the run's events, object ops (and gen's record) and trace summary; returns run.json's
/// "timeline" (path and counts).
nlohmann::json timeline_stage(const std::string& out, bool sim) {
    auto P = [&](const char* name) { return out + "/" + name; };
    report::TimelineOptions to;
    to.events = P("events.jsonl");
    to.semantic = P("semantic.jsonl");
    if (!sim) to.record = P("record.json");
    to.trace_json = P("trace.json");
    to.out = P("timeline.json");
    const report::TimelineStats ts = report::write_perfetto(to);
    return {{"path", to.out},        {"commands", ts.commands},  {"syscalls", ts.syscalls},
            {"ops", ts.ops},         {"flows", ts.flows},        {"device_tracks", ts.device_tracks},
            {"threads", ts.threads}, {"max_slots", ts.max_slots}};
}

/// run.json's "files": every output of the run by role.
nlohmann::json files_json(const std::string& out, bool sim) {
    auto P = [&](const char* name) { return out + "/" + name; };
    nlohmann::json j = {{"events", P("events.jsonl")},
                        {"trace", P("trace.json")},
                        {"semantic", P("semantic.jsonl")},
                        {"record", P("record.json")},
                        {"validate", P("validate.json")},
                        {"job", P("job.fio")},
                        {"iolog", P("job.iolog")},
                        {"verify", P("verify.json")},
                        {"replay_events", P("replay.events.jsonl")},
                        {"replay_fio", P("replay.fio.json")},
                        {"report", P("report.html")},
                        {"verify_log", P("verify.log")},
                        {"timeline", P("timeline.json")}};
    if (sim) {
        j.erase("record");
        j["simulate"] = P("simulate.json");
        j["simulate_log"] = P("simulate.log");
        j["fio_workload"] = P("fio_workload.ini");
    } else {
        j["gen_log"] = P("gen.log");
    }
    return j;
}

/// Attaches the embedded target: a sparse image of `img_bytes` at OUT/target.img as a loop device with direct I/O
/// (into `img`, known to `guard`); returns the device's path.
std::string attach_target(const RunOptions& o, const std::string& out, uint64_t img_bytes, RunGuard& guard,
                          std::unique_ptr<LoopImage>& img, RunStages& log) {
    Stopwatch sw;
    const std::string path = out + "/target.img";
    guard.image(path, o.keep);
    img = std::make_unique<LoopImage>(path, img_bytes, o.keep);
    check_interrupt();
    const std::string target = img->dev();
    log.say("target " + target + " (sparse " + std::to_string(img_bytes >> 20) + " MiB image " + path +
            ", direct I/O)");
    log.done("attach", sw);
    return target;
}

/// The second device, for the verify replay: a sparse image of `bytes` at OUT/verify.img as a loop device (into
/// `img`, known to `guard`); returns the device's path.
std::string attach_verify(const RunOptions& o, const std::string& out, uint64_t bytes, RunGuard& guard,
                          std::unique_ptr<LoopImage>& img, RunStages& log) {
    Stopwatch sw;
    guard.image(out + "/verify.img", o.keep);
    img = std::make_unique<LoopImage>(out + "/verify.img", bytes, o.keep);
    check_interrupt();
    log.done("attach-verify", sw);
    return img->dev();
}

/// Scores the run directory (validate_run_dir) into run.json's "validate"; returns the report.
validate::Report validate_stage(const std::string& out, RunStages& log, nlohmann::json& doc) {
    Stopwatch sw;
    log.say("validate " + out + "/events.jsonl against " + out + "/semantic.jsonl");
    validate::Report vr = validate_run_dir(out);
    doc["validate"] = validate::report_json(vr);
    log.done("validate", sw);
    check_interrupt();
    return vr;
}

/// Writes OUT/run.json (`doc` with its "files") and OUT/report.html; the result kvio run prints.
RunResult finish_run(const std::string& out, bool sim, nlohmann::json& doc, const validate::Report& vr,
                     RunStages& log) {
    doc["files"] = files_json(out, sim);
    write_json_file(out + "/run.json", doc);
    log.say("report (HTML)");  // its path is in the summary on stdout, once
    report::write_report(out, out + "/report.html");
    check_interrupt();
    RunResult r;
    r.doc = doc;
    r.summary_line = validate::summary_line(vr);
    r.report_path = out + "/report.html";
    return r;
}

}  // namespace

uint64_t simulate_run_dir_bytes(uint64_t image_bytes) {
    return 2 * image_bytes + 2 * (image_bytes / 4096) * kOutputBytesPerCmd + kOutputFixedBytes;
}

std::vector<std::string> simulate_argv(const std::string& exe, const SimulateWorkload& w, const std::string& cache_dir,
                                       const std::string& out) {
    char dur[32];
    std::snprintf(dur, sizeof dur, "%g", w.duration_s);
    std::vector<std::string> a = {exe,
                                  "simulate",
                                  "--model",
                                  w.model,
                                  "--num-users",
                                  std::to_string(w.num_users),
                                  "--duration",
                                  dur,
                                  "--gpu-mem-gb",
                                  "0",
                                  "--cpu-mem-gb",
                                  "0",
                                  "--generation-mode",
                                  w.generation_mode,
                                  "--seed",
                                  "42",
                                  "--storage-io",
                                  w.storage_io,
                                  "--cache-dir",
                                  cache_dir,
                                  "--enable-latency-tracing",
                                  "--trace-syscalls",
                                  "--trace-dir",
                                  out,
                                  "--output",
                                  out + "/simulate.json",
                                  "--quiet"};
    a.insert(a.end(), w.extra_args.begin(), w.extra_args.end());
    return a;
}

uint64_t image_bytes(uint64_t objects, uint64_t object_bytes) {
    constexpr uint64_t MiB = 1 << 20, align = 4096;
    uint64_t slot = (align + object_bytes + align - 1) / align * align;
    uint64_t b = MiB + objects * slot + MiB;
    return (b + MiB - 1) / MiB * MiB;
}

uint64_t run_dir_bytes(uint64_t objects, uint64_t object_bytes, uint64_t cap_bytes, bool embedded) {
    const uint64_t img = image_bytes(objects, object_bytes);
    const uint64_t cap = std::max<uint64_t>(cap_bytes, 4096);
    // Per object: a store is a 4 KiB header and its payload in transfers of at most `cap`, a load the payload.
    const uint64_t cmds = objects * (1 + 2 * ((object_bytes + cap - 1) / cap));
    return (embedded ? img : 0) + img + cmds * kOutputBytesPerCmd + kOutputFixedBytes;
}

namespace {

/// Writes OUT/run.json for a run a signal stopped: what `doc` holds so far, the stages that completed, "seconds",
/// "interrupted" {signal, signal_name, stage (the one running when it came), validated (what gen or simulate
/// completed was scored, or why not)} and "files" (only those the run wrote).
void write_interrupted_run_json(const std::string& out, bool sim, nlohmann::json doc, const RunStages& log,
                                double seconds, const Interrupted& stop) {
    doc["stages"] = log.stages;
    doc["seconds"] = seconds;
    std::string validated = stop.validated;
    if (validated.empty()) {  // stopped after the validate stage (in verify): its scores are in validate.txt
        std::ifstream t(out + "/validate.txt");
        std::string first;
        if (std::getline(t, first) && !first.empty())
            validated = "scored before the stop: " + first + " (" + out + "/validate.txt)";
        else
            validated = "not scored: stopped before the workload's ops were scored";
    }
    doc["interrupted"] = {{"signal", stop.signo},
                          {"signal_name", strsignal(stop.signo)},
                          {"stage", log.current},
                          {"validated", validated}};
    nlohmann::json files = nlohmann::json::object();
    const nlohmann::json all = files_json(out, sim);
    for (const auto& [role, path] : all.items()) {
        std::error_code ec;
        if (fs::exists(path.get<std::string>(), ec)) files[role] = path;
    }
    doc["files"] = files;
    try {
        write_json_file(out + "/run.json", doc);
    } catch (const Error& e) {
        if (log.prog) *log.prog << "kvio run: " << e.what() << std::endl;  // the stop is what the run reports
    }
}

/// The run's stages after its directory, guard and signal handling are set up (run_all): fills `doc` and `log` as
/// each stage completes, so a stop (Interrupted) leaves them holding what was done.
RunResult run_stages(const RunOptions& o, bool sim, const std::string& out, uint64_t img_bytes, RunGuard& guard,
                     RunStages& log, nlohmann::json& doc) {
    auto say = [&](const std::string& s) { log.say(s); };
    auto P = [&](const char* name) { return out + "/" + name; };
    const std::string exe = resolve_exe(o.kvio_exe);
    Stopwatch total;

    // ---- target ----
    std::unique_ptr<LoopImage> img_a, img_b;
    log.current = "attach";
    const std::string target = o.target.empty() ? attach_target(o, out, img_bytes, guard, img_a, log) : o.target;
    BlockDevInfo tinfo = block_dev_info_for_path(target);
    doc["target"] = {{"path", target},
                     {"disk", tinfo.whole_disk_name},
                     {"dev", dev_string(tinfo.whole_disk)},
                     {"embedded", o.target.empty()},
                     {"image", o.target.empty() ? P("target.img") : ""}};

    // ---- the workload under trace: simulate (serving) or gen (objects) ----
    if (sim) {
        Stopwatch sw;
        log.current = "trace+simulate";
        say("simulate " + std::to_string(o.sim.num_users) + " users for " + std::to_string(int(o.sim.duration_s)) +
            " s on ext4 on " + target + " under kvio trace (log " + P("simulate.log") + ")");
        simulate_stage(o, out, target, exe, guard);
        doc["simulate"] = simulate_summary(P("simulate.json"));
        log.done("trace+simulate", sw);
    } else {
        Stopwatch sw;
        log.current = "trace+gen";
        say("gen " + std::to_string(o.num_chunks) + " chunks on " + target + " under kvio trace (log " + P("gen.log") +
            ")");
        gen_stage(o, out, exe, target, tinfo, doc["options"]["layout"].get<std::string>());
        log.done("trace+gen", sw);
    }

    // ---- validate ----
    log.current = "validate";
    const validate::Report vr = validate_stage(out, log, doc);

    // The trace's profile first: the verify device must hold the job's whole region (offset + size), or fio
    // would quietly shrink it and the fidelity would describe another workload.
    kvio::EventTrace ev = kvio::load_events(P("events.jsonl"), kvio::EventFilter{dev_string(tinfo.whole_disk), 0, ""});
    distiller::Profile orig = distiller::profile_events(ev);
    const uint64_t verify_bytes = std::max(img_bytes, (orig.lba_hi_bytes + (2 << 20) - 1) >> 20 << 20);

    // ---- second device for the verify replay ----
    log.current = "attach-verify";
    const std::string vdev = attach_verify(o, out, verify_bytes, guard, img_b, log);
    doc["verify_target"] = {{"path", vdev}, {"image", P("verify.img")}};

    // ---- distill: the job `kvio distill --events events.jsonl --dev DISK --filename VDEV --iolog job.iolog` makes
    log.current = "distill";
    distill_stage(out, log, doc, ev, dev_string(tinfo.whole_disk), vdev);
    // ---- verify: the job under trace on the second device ----
    {
        Stopwatch sw;
        log.current = "verify";
        say("verify: fio " + P("job.fio") + " on " + vdev + " under kvio trace (log " + P("verify.log") + ")");
        doc["fidelity"] = verify_stage(out, exe, vdev, img_b->name(), orig, ev);
        log.done("verify", sw);
    }

    // ---- timeline ----
    {
        Stopwatch sw;
        log.current = "timeline";
        say("timeline of the commands and object ops");  // its path is in the summary on stdout, once
        doc["timeline"] = timeline_stage(out, sim);
        log.done("timeline", sw);
    }
    check_interrupt();

    doc["stages"] = log.stages;
    doc["seconds"] = total.seconds();
    return finish_run(out, sim, doc, vr, log);  // img_b then img_a are detached and removed here
}

}  // namespace

RunResult run_all(const RunOptions& o) {
    const bool sim = o.workload == "simulate";
    uint64_t cap_guess = 0;
    const std::string layout = checked_layout(o, sim, cap_guess);

    std::string out = o.out_dir.empty() ? timestamp_dir() : o.out_dir;
    const uint64_t img_bytes = sim ? o.sim.image_bytes : image_bytes(o.objects, o.object_bytes);
    prepare_out_dir(o, sim, out, img_bytes, cap_guess);
    // Forked first, while this process has one thread: a SIGKILLed run still loses its loop devices, mount and images.
    RunGuard guard;
    StageObserver observe_stages(guard);
    SignalGuard sig;
    RunStages log{o.progress};
    out = fs::absolute(out).lexically_normal().string();
    guard.outputs(out);

    nlohmann::json doc = {{"schema", "kvio.run/1"}, {"out", out}};
    doc["options"] = options_json(o, sim, layout);
    Stopwatch total;
    try {
        return run_stages(o, sim, out, img_bytes, guard, log, doc);
    } catch (const Interrupted& stop) {
        // A stopped run flushes what it has: run.json with the stages that completed and where the signal came.
        write_interrupted_run_json(out, sim, doc, log, total.seconds(), stop);
        throw;
    }
}

}  // namespace kvio::run
