#include "drives/target_run.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <filesystem>
#include <fstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "drives/process.h"
#include "trace/probe.h"
#include "workload/target.h"

namespace kvio::drives {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// ": what the child said" from its log (process.h error_lines_of). When it said nothing: for a remote target's fio
/// client (whose server was killed mid-run: measured, fio 3.33 exits 1 without a word) that the server may have
/// gone, else "".
std::string said(const std::string& log, const Target& t) {
    std::string e = error_lines_of(log);
    if (!e.empty()) return ": " + e;
    if (t.spec.remote())
        return ": fio's client printed nothing; the fio server at " + t.spec.address() + " may have gone away";
    return "";
}

std::string sysfs_line(const fs::path& p) {
    std::ifstream in(p);
    std::string s;
    std::getline(in, s);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
    return s;
}

/// The drive's identity and limits as sysfs states them (/sys/block/DISK/device/{model,serial,firmware_rev},
/// queue/*; a loop device's loop/backing_file).
json disk_info(const BlockDevInfo& d) {
    fs::path b = fs::path("/sys/block") / d.whole_disk_name;
    json j = {{"disk", d.whole_disk_name},
              {"dev", dev_string(d.whole_disk)},
              {"model", sysfs_line(b / "device/model")},
              {"serial", sysfs_line(b / "device/serial")},
              {"firmware", sysfs_line(b / "device/firmware_rev")},
              {"rotational", sysfs_line(b / "queue/rotational") == "1"},
              {"scheduler", sysfs_line(b / "queue/scheduler")},
              {"logical_block_size", d.logical_block_size},
              {"physical_block_size", d.physical_block_size},
              {"max_sectors_kb", d.max_sectors_kb},
              {"max_hw_sectors_kb", d.max_hw_sectors_kb},
              {"max_segments", d.max_segments},
              {"nr_requests", d.nr_requests}};
    std::string backing = sysfs_line(b / "loop/backing_file");
    if (!backing.empty()) j["backing_file"] = backing;
    return j;
}

/// One ceiling probe as a job file: `rw` at `bs`, `depth`, over `bytes` from `offset`, `seconds` long.
/// True for a path under /dev (a device node's place; a remote host's too).
bool device_path(const std::string& path) { return path.starts_with("/dev/"); }

/// True when fio must refuse to create `t`'s file: a remote path under /dev that names no device (fio's
/// allow_file_create=0 errors out instead of laying out a file in the host's devtmpfs). A local one is refused before
/// the run (prepare_local_target).
bool refuse_create(const Target& t) {
    return t.spec.remote() && t.field == TargetField::Filename && device_path(t.spec.path);
}

std::string probe_job(const Target& t, const std::string& rw, const std::string& bs, int depth, uint64_t offset,
                      uint64_t bytes, double seconds) {
    std::string where = t.field == TargetField::Directory
                            ? "directory=" + t.spec.path + "\nfilename=kvio-drives-probe"
                            : std::string(refuse_create(t) ? "allow_file_create=0\n" : "") + "filename=" + t.spec.path;
    return "; kvio drives: ceiling probe\n[probe-" + rw + "]\n" + where + "\nrw=" + rw + "\nbs=" + bs +
           "\niodepth=" + std::to_string(depth) + "\nioengine=libaio\ndirect=1\noffset=" + std::to_string(offset) +
           "\nsize=" + std::to_string(bytes) +
           "\ntime_based=1\nruntime=" + std::to_string(std::max(1, static_cast<int>(seconds * 1000))) +
           "ms\nramp_time=0\n";
}

std::vector<std::string> fio_argv(const Target& t, const RunEnv& env, const std::string& job, const std::string& out) {
    std::vector<std::string> a = {env.fio};
    if (t.spec.remote()) a.push_back("--client=" + t.spec.fio_client());
    a.insert(a.end(), {"--output-format=json", "--output=" + out, job});
    return a;
}

}  // namespace

Target prepare_local_target(const DriveSpec& spec, bool force) {
    Target t;
    t.spec = spec;
    std::error_code ec;
    // A path under /dev that names nothing is a mistyped device, not a file to create: the file would land in
    // devtmpfs (memory) and be benchmarked as the drive.
    if (!fs::exists(spec.path, ec) && device_path(spec.path))
        throw Error("drive " + spec.name + ": " + spec.path +
                    ": no such device (a path under /dev that does not exist is not made into a file)");
    if (!fs::exists(spec.path, ec) && fs::is_directory(fs::path(spec.path).parent_path(), ec)) {
        t.created_file = true;  // fio lays the file out; it is removed at the end
        t.info = {{"kind", "file"}, {"created", true}};
        t.no_trace_reason = "a file kvio drives creates";
        try {
            BlockDevInfo d = block_dev_info_for_path(fs::path(spec.path).parent_path());
            t.disk = d.whole_disk_name, t.no_trace_reason.clear(), t.info["device"] = disk_info(d);
        } catch (const Error&) {}
        return t;
    }
    workload::TargetInfo info;
    try {
        info = workload::inspect_target(spec.path);
    } catch (const Error& e) {
        struct stat st {};
        bool fs_target = ::stat(spec.path.c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode));
        if (!fs_target) throw Error("drive " + spec.name + ": " + e.what());
        if (::access(spec.path.c_str(), W_OK) != 0)
            throw Error("drive " + spec.name + ": " + spec.path + " is not writable by this process");
        t.field = S_ISDIR(st.st_mode) ? TargetField::Directory : TargetField::Filename;
        t.info = {{"kind", S_ISDIR(st.st_mode) ? "directory" : "file"}};
        t.no_trace_reason = e.what();  // tmpfs and friends: no block device to trace
        return t;
    }
    if (info.kind == workload::TargetKind::NvmeChar)
        throw Error("drive " + spec.name + ": " + spec.path +
                    " is an NVMe generic char device; give its block device (/dev/nvmeXnY)");
    try {
        workload::check_device_safe(info, force);
    } catch (const Error& e) {
        throw Error("drive " + spec.name + ": " + e.what());
    }
    t.field = info.kind == workload::TargetKind::Directory ? TargetField::Directory : TargetField::Filename;
    t.disk = info.dev.whole_disk_name;
    t.info = {{"kind", workload::target_kind_name(info.kind)},
              {"capacity_bytes", info.capacity_bytes},
              {"fs_type", info.fs_type},
              {"device", disk_info(info.dev)}};
    return t;
}

Target prepare_remote_target(const DriveSpec& spec) {
    Target t;
    t.spec = spec;
    t.info = {{"kind", "remote"}, {"host", spec.host}, {"port", spec.port}};
    t.no_trace_reason = "remote target: device-side figures (kvio trace --listen on the host) are not scraped yet";
    return t;
}

namespace {

/// One ceiling probe: fio's `rw` at `bs` and `depth`; its figure goes to ceiling[key] (IOPS when `iops`, else MB/s).
struct ProbeKind {
    const char *rw, *bs, *key;
    int depth;
    bool iops;
};
constexpr ProbeKind kProbes[] = {{"read", "1M", "seq_read_mb_s", 32, false},
                                 {"write", "1M", "seq_write_mb_s", 32, false},
                                 {"randread", "4k", "rand_read_4k_iops", 64, true}};

/// Where `t`'s probes go: {"seconds", "bytes", "offset"}. A block device's first MiB is where the safety check looks
/// for data (workload::check_device_safe) and where a partition table or filesystem signature lives: the probe
/// starts past it, so a drive only kvio drives' probe wrote is not refused next time (docs/drives.md "Safety"). A
/// remote target's kind is not known here (its host checks it): every remote file or device path is probed from the
/// same offset.
json probe_span(const Target& t, const RunEnv& env) {
    uint64_t bytes = env.probe_bytes, offset = t.field == TargetField::Filename && t.spec.remote() ? kProbeSkip : 0;
    if (t.info.contains("capacity_bytes") && t.info["kind"] == "block") {
        uint64_t cap = t.info["capacity_bytes"].get<uint64_t>();
        offset = std::min<uint64_t>(kProbeSkip, cap);
        bytes = std::min<uint64_t>(bytes, cap - offset);
    }
    return {{"seconds", env.probe_seconds}, {"bytes", bytes}, {"offset", offset}};
}

/// Probe `p`'s figure for `t` from its wait status `st` and fio output under `base` into `c`; throws kvio::Error with
/// the reason when it failed.
void read_probe(const Target& t, const ProbeKind& p, int st, const std::string& base, json& c) {
    if (const int sig = stop_signal_seen()) throw Error("stopped by signal " + std::to_string(sig));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) throw Error("fio " + describe_status(st) + said(base + ".log", t));
    FioRun r = parse_fio_json(read_json_file(base + ".fio.json"), base + ".fio.json");
    const DirFigures& d = std::string(p.rw) == "write" ? r.total.write : r.total.read;
    c[p.key] = p.iops ? d.iops : d.mb_s;
}

}  // namespace

void probe_ceilings(const std::vector<Target*>& ts, const RunEnv& env) {
    // The probe's file in a directory target goes on every path out, a failed fio's (ENOSPC) too.
    struct RemoveProbeFiles {
        std::vector<fs::path> ps;
        ~RemoveProbeFiles() {
            std::error_code ec;
            for (const auto& p : ps) fs::remove(p, ec);
        }
    } cleanup;
    std::vector<json> c;
    for (const Target* t : ts) {
        c.push_back(probe_span(*t, env));
        if (t->field == TargetField::Directory && !t->spec.remote())
            cleanup.ps.push_back(fs::path(t->spec.path) / "kvio-drives-probe");
    }
    std::vector<bool> done(ts.size(), false);
    for (const ProbeKind& p : kProbes) {
        std::vector<pid_t> pids;
        std::vector<size_t> which;
        for (size_t i = 0; i < ts.size(); ++i) {
            if (done[i]) continue;
            if (const int sig = stop_signal_seen()) {  // a probe started after the stop would run its full length
                ts[i]->ceiling = {{"error", "probe stopped by signal " + std::to_string(sig)}}, done[i] = true;
                continue;
            }
            const Target& t = *ts[i];
            const std::string base = env.dir + "/probe/" + t.spec.name + "-" + p.rw;
            write_text_file(base + ".job.fio", probe_job(t, p.rw, p.bs, p.depth, c[i]["offset"].get<uint64_t>(),
                                                         c[i]["bytes"].get<uint64_t>(), env.probe_seconds));
            pids.push_back(spawn_logged(fio_argv(t, env, base + ".job.fio", base + ".fio.json"), base + ".log"));
            which.push_back(i);
        }
        if (pids.empty()) break;
        // A hung host's fio client ignores SIGTERM: remote probes are bounded by the timeout and the stop grace.
        const bool remote = ts[which[0]]->spec.remote();
        const std::vector<ChildEnd> ends =
            wait_children(pids, remote ? env.remote_timeout_s : 0, kRemoteKillAfterS, remote ? kStopGraceS : -1);
        for (size_t k = 0; k < which.size(); ++k) {
            Target& t = *ts[which[k]];
            const std::string base = env.dir + "/probe/" + t.spec.name + "-" + p.rw;
            try {
                read_probe(t, p, ends[k].status, base, c[which[k]]);
            } catch (const Error& e) {
                t.ceiling = {{"error", std::string("probe ") + p.rw + ": " + e.what() + " (see " + base + ".log)"}};
                done[which[k]] = true;
            }
        }
    }
    for (size_t i = 0; i < ts.size(); ++i)
        if (!done[i]) ts[i]->ceiling = c[i];
}

std::string job_text_for(const Target& t, const std::string& job, const std::string& mode, const RunEnv& env,
                         const std::string& bw_log) {
    const Pacing p = mode != "closed"     ? Pacing::Open
                     : env.keep_thinktime ? Pacing::ClosedKeepThinktime
                                          : Pacing::Closed;
    return job_for_target(job, t.spec.path, t.field, p, bw_log, refuse_create(t));
}

std::vector<std::string> tracer_sampling(const std::string& disk) {
    std::ifstream in("/sys/block/" + disk + "/queue/iostats");
    int iostats = 0;
    if (trace::kernel_finished_counts() && (in >> iostats) && iostats != 0)
        return {"--d2c-sample", std::to_string(kD2cSample)};
    return {"--qd-sample", std::to_string(kQdSample)};
}

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// run_logged, with the workload's start and end in r.
int run_timed(const std::vector<std::string>& a, RunResult& r) {
    r.start_ms = now_ms();
    int st = run_logged(a, r.files + ".log");
    r.end_ms = now_ms();
    return st;
}

/// Runs `argv` (fio or kvio simulate) to its end under `kvio trace -d DISK --block-only SAMPLING --json`
/// (tracer_sampling; run_local's rules).
int run_traced(const Target& t, const std::vector<std::string>& a, RunResult& r, const RunEnv& env) {
    if (t.disk.empty()) return run_timed(a, r);
    const std::string ready = r.files + ".ready";
    std::error_code ec;
    fs::remove(ready, ec);
    std::vector<std::string> targv = {env.kvio_exe, "trace", "-q", "-d", t.disk, "--block-only"};
    for (auto& w : tracer_sampling(t.disk)) targv.push_back(std::move(w));
    if (!env.trace_every_command) targv.insert(targv.end(), {"--duty", kTraceDuty});
    targv.insert(targv.end(), {"--json", r.files + ".trace.json", "--ready-file", ready});
    pid_t tp = spawn_logged(targv, r.files + ".trace.log");
    int tst = 0;
    bool ended = false;
    // Loading BPF takes seconds on a busy machine: wait for the ready file, up to 120 s.
    for (int i = 0; i < 2400 && !fs::exists(ready, ec) && !(ended = child_ended(tp, &tst)); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (ended || !fs::exists(ready, ec)) {
        if (!ended) ::kill(tp, SIGTERM), wait_child(tp, 10, &ended);
        r.trace_error = "kvio trace did not attach (see " + r.files + ".trace.log)";
        return run_timed(a, r);
    }
    int st = run_timed(a, r);
    ::kill(tp, SIGTERM);
    bool to = false;
    tst = wait_child(tp, 30, &to);
    fs::remove(ready, ec);
    if (to || !WIFEXITED(tst) || WEXITSTATUS(tst) != 0)
        r.trace_error = "kvio trace ended with " + describe_status(tst) + " (see " + r.files + ".trace.log)";
    return st;
}

/// The bandwidth logs fio wrote for the run at `files` (FILES_bw.N.log, one per job), summed in windows from
/// `origin_ms` (the fio process's start; parse_bw_logs).
std::vector<std::vector<double>> read_bw_logs(const std::string& files, double origin_ms) {
    const fs::path p(files);
    const std::string stem = p.filename().string() + "_bw.";
    std::vector<std::string> texts;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(p.parent_path(), ec)) {
        std::string n = e.path().filename();
        if (n.starts_with(stem) && n.ends_with(".log")) {
            std::ifstream in(e.path());
            texts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
    }
    return parse_bw_logs(texts, kBwLogMs, origin_ms, files + "_bw.*.log");
}

}  // namespace

int run_local(const Target& t, const std::string& job, RunResult& r, const RunEnv& env) {
    write_text_file(r.files + ".job.fio", job_text_for(t, job, r.mode, env, r.files));
    return run_traced(t, fio_argv(t, env, r.files + ".job.fio", r.files + ".fio.json"), r, env);
}

int run_local_simulate(const Target& t, RunResult& r, const RunEnv& env) {
    std::vector<std::string> a = {env.kvio_exe, "simulate"};
    a.insert(a.end(), env.sim_words.begin(), env.sim_words.end());
    const std::string cache =
        t.field == TargetField::Directory ? (fs::path(t.spec.path) / "kvio-drives-sim").string() : t.spec.path;
    a.insert(a.end(), {"--cache-dir", cache, "--output", r.files + ".sim.json"});
    if (env.force && t.field != TargetField::Directory) a.push_back("--force");
    std::string cmd;
    for (const auto& w : a) cmd += (cmd.empty() ? "" : " ") + w;
    write_text_file(r.files + ".cmd", cmd + "\n");  // what ran, for the record
    return run_traced(t, a, r, env);
}

pid_t start_remote_run(const Target& t, const std::string& job, RunResult& r, const RunEnv& env) {
    write_text_file(r.files + ".job.fio", job_text_for(t, job, r.mode, env));
    r.start_ms = now_ms();
    return spawn_logged(fio_argv(t, env, r.files + ".job.fio", r.files + ".fio.json"), r.files + ".log");
}

void finish_run(const Target& t, RunResult& r, int status, bool timed_out) {
    if (r.end_ms == 0) r.end_ms = now_ms();  // a remote run: it ended when its client was reaped
    try {
        if (timed_out) throw Error("no answer within the remote timeout; ended");
        const bool sim = r.mode == "simulate";
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            throw Error(std::string(sim ? "kvio simulate" : "fio") + " ended with " + describe_status(status) +
                        said(r.files + ".log", t));
        if (sim) {
            r.sim = parse_sim_results(read_json_file(r.files + ".sim.json"), r.files + ".sim.json");
            if (const std::string why = sim_run_problem(r.sim); !why.empty())
                throw Error(why + ": no measure of the drive (" + r.files + ".sim.json)");
        } else
            r.fio = parse_fio_json(read_json_file(r.files + ".fio.json"), r.files + ".fio.json");
        if (!sim && !t.spec.remote()) {
            r.fio.bw_timeline = read_bw_logs(r.files, r.start_ms);
            const uint64_t moved[2] = {r.fio.total.read.io_bytes, r.fio.total.write.io_bytes};
            cap_bw_timeline(r.fio.bw_timeline, moved, kBwLogMs);
        }
        if (!t.disk.empty() && !t.spec.remote() && r.trace_error.empty())
            r.dev = parse_trace_json(read_json_file(r.files + ".trace.json"), t.disk);
        r.ok = true;
    } catch (const Error& e) {
        r.error = std::string(e.what()) + " (see " + r.files + ".log)";
    }
}

std::vector<std::string> dir_entries(const Target& t) {
    std::vector<std::string> out;
    std::error_code ec;
    if (t.spec.remote() || t.field != TargetField::Directory) return out;
    for (const auto& e : fs::directory_iterator(t.spec.path, ec)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
}

void clean_local_target(const Target& t, const std::vector<std::string>& dir_before) {
    std::error_code ec;
    if (t.created_file) fs::remove(t.spec.path, ec);
    for (const auto& e : dir_entries(t))
        if (!std::binary_search(dir_before.begin(), dir_before.end(), e)) fs::remove_all(fs::path(t.spec.path) / e, ec);
}

}  // namespace kvio::drives
