#include "drives/drives.h"

#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/jsonl.h"
#include "distiller/distill.h"
#include "drives/drives_html.h"
#include "drives/process.h"
#include "drives/prom_scrape.h"
#include "drives/summary.h"
#include "drives/target_run.h"

namespace kvio::drives {

namespace fs = std::filesystem;

namespace {

std::string now_stamp(const char* f) {
    std::time_t t = std::time(nullptr);
    char b[64];
    std::strftime(b, sizeof b, f, std::gmtime(&t));
    return b;
}

std::vector<std::string> modes_of(const std::string& load) {
    if (load == "closed" || load == "trace") return {load};
    if (load == "both") return {"closed", "trace"};
    throw UsageError("--load must be closed, trace or both, got " + load);
}

/// The job file's text. A missing or unreadable path, or a directory, is a usage error (exit 2), found before any
/// target is inspected.
std::string read_job(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw UsageError("--job " + path + ": is a directory");
    std::ifstream in(path);
    if (!in) throw UsageError("--job " + path + ": " + std::strerror(errno));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The job a kvio trace calls for, derived as `kvio distill --events PATH --level device` would (distiller::distill,
/// the one entry point every command derives its job through; rules in docs/distill.md), its notes on `diag`.
std::string distill_job(const std::string& events, std::ostream& diag) {
    distiller::DistillOptions d;
    d.events = events;
    d.level = distiller::DistillLevel::Device;
    distiller::DistillResult r = distiller::distill(d);
    for (const auto& n : r.notes) diag << "kvio drives: distill note: " << n << "\n";
    return r.job.text;
}

/// fio's own parser over the job (`fio --parse-only`, which reads every option but opens no file and runs nothing):
/// a job fio would refuse (an unknown option, a bad value) is a usage error (exit 2) naming what fio said, found
/// before any target is inspected, instead of a failed run on every drive.
void check_job_parses(const std::string& fio, const std::string& job, const std::string& job_name) {
    const fs::path tmp = fs::temp_directory_path();
    std::string base = (tmp / "kvio-drives-job-XXXXXX").string();
    int fd = ::mkstemp(base.data());
    if (fd < 0) throw Error(base + ": cannot create: " + std::strerror(errno));
    ::close(fd);
    struct Remove {
        std::string a, b;
        ~Remove() {
            std::error_code ec;
            fs::remove(a, ec), fs::remove(b, ec);
        }
    } cleanup{base, base + ".log"};
    write_text_file(base, job);
    const int st = run_logged({fio, "--parse-only", base}, base + ".log");
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return;
    std::string said = error_lines_of(base + ".log");
    throw UsageError(job_name + ": fio cannot parse it (" + fio + " --parse-only, " + describe_status(st) + ")" +
                     (said.empty() ? "" : ": " + said));
}

/// The same local path however it is spelled (a /dev/disk/by-id link and its /dev node are one target).
std::string target_key(const DriveSpec& d) {
    std::error_code ec;
    std::string p = d.remote() ? d.path : fs::weakly_canonical(d.path, ec).string();
    if (p.empty()) p = d.path;
    return d.address() + ":" + p;
}

/// Every --drive and --metrics parsed and checked against the others: a usage error here is found before any
/// target is inspected or written.
std::vector<DriveSpec> parse_specs(const DrivesOptions& opt) {
    std::vector<DriveSpec> ds;
    std::set<std::string> names, paths;
    for (const auto& text : opt.drives) {
        DriveSpec d = parse_drive_spec(text);
        if (!names.insert(d.name).second) throw UsageError("--drive " + text + ": the name " + d.name + " is taken");
        if (!paths.insert(target_key(d)).second) throw UsageError("--drive " + text + ": that target is named twice");
        ds.push_back(d);
    }
    for (const auto& text : opt.metrics) {
        MetricsSpec m = parse_metrics_spec(text);
        auto it = std::find_if(ds.begin(), ds.end(), [&](const DriveSpec& d) { return d.name == m.name; });
        if (it == ds.end() || !it->remote())
            throw UsageError("--metrics " + text + ": " + m.name + " is not a remote --drive");
        it->metrics_host = m.host, it->metrics_port = m.port;
    }
    return ds;
}

/// Every target, checked before anything is written: a refusal ends the run with nothing touched.
std::vector<Target> prepare_targets(const std::vector<DriveSpec>& specs, bool force) {
    std::vector<Target> ts;
    for (const auto& d : specs) {
        ts.push_back(d.remote() ? prepare_remote_target(d) : prepare_local_target(d, force));
        if (d.metrics_port) ts.back().no_trace_reason.clear();
    }
    std::set<std::string> disks;
    for (const auto& t : ts)
        if (!t.disk.empty() && !disks.insert(t.disk).second)
            throw UsageError("drive " + t.spec.name + " is on disk " + t.disk +
                             " as another drive is: one disk's trace would count both");
    return ts;
}

/// A run a stop signal arrived during: fio was ended early, so its figures are not a full run's and are not counted.
void cut_run(RunResult& r, int signo) {
    r.ok = false;
    r.error = "cut short by signal " + std::to_string(signo) + " (" + strsignal(signo) + ")";
}

/// After a stop signal: every target that has not measured each round and mode (and did not fail) is interrupted,
/// with the round it was cut in.
void mark_interrupted(std::vector<Target>& ts, int signo, size_t runs_planned) {
    for (auto& t : ts) {
        size_t ok = std::count_if(t.runs.begin(), t.runs.end(), [](const RunResult& r) { return r.ok; });
        if (!t.failed.empty() || ok == runs_planned) continue;
        t.interrupted = "stopped by signal " + std::to_string(signo) + " (" + strsignal(signo) + ") after " +
                        std::to_string(ok) + " of " + std::to_string(runs_planned) + " runs";
        if (!t.runs.empty() && !t.runs.back().ok)
            t.interrupted += "; round " + std::to_string(t.runs.back().round + 1) + " " + t.runs.back().mode + " cut";
    }
}

/// One run of `mode` on local target `t`, to its end: the traced run, its figures, what it left on the target
/// removed. In `catch_errors`, an error (a file that cannot be written) is the run's error instead of thrown.
RunResult local_run(Target& t, const std::string& job, const std::string& mode, int round, const RunEnv& env,
                    bool catch_errors) {
    RunResult r;
    r.round = round, r.mode = mode;
    r.files = env.dir + "/runs/" + t.spec.name + "-" + mode + "-r" + std::to_string(round + 1);
    try {
        auto before = dir_entries(t);
        int st = mode == "simulate" ? run_local_simulate(t, r, env) : run_local(t, job, r, env);
        finish_run(t, r, st, false);
        clean_local_target(t, before);
    } catch (const Error& e) {
        if (!catch_errors) throw;
        r.ok = false, r.error = e.what();
    }
    return r;
}

/// One round of `mode` over the local targets: one after another, starting at target `round % n` (A B C, B C A,
/// ...), or with `parallel` all at once (one thread per target; each waits for its own trace to attach).
void local_round(std::vector<Target>& ts, const std::vector<size_t>& local, const std::string& job,
                 const std::string& mode, int round, const RunEnv& env, const ChildStop& stop, bool parallel,
                 const std::string& label, std::ostream& out) {
    std::vector<size_t> order;
    for (size_t k = 0; k < local.size(); ++k) order.push_back(local[(k + round) % local.size()]);
    std::vector<RunResult> rs(order.size());
    if (parallel) {
        out << label << ":";
        for (size_t i : order) out << " " << ts[i].spec.name;
        out << " (at once) ...\n" << std::flush;
        std::vector<std::thread> threads;
        for (size_t k = 0; k < order.size(); ++k)
            threads.emplace_back([&, k] { rs[k] = local_run(ts[order[k]], job, mode, round, env, true); });
        for (auto& th : threads) th.join();
    }
    for (size_t k = 0; k < order.size() && (parallel || !stop.signo()); ++k) {
        Target& t = ts[order[k]];
        if (!parallel) out << label << ": " << t.spec.name << " ...\n" << std::flush;
        RunResult r = parallel ? std::move(rs[k]) : local_run(t, job, mode, round, env, false);
        if (stop.signo()) cut_run(r, stop.signo());
        if (!r.ok && t.failed.empty() && !stop.signo())
            t.failed = "round " + std::to_string(round + 1) + " " + mode + ": " + r.error;
        t.runs.push_back(std::move(r));
    }
}

/// A scrape of a remote target's exporter; a failure is the run's trace_error (the fio figures stand).
PromScrape scrape_remote(const Target& t, RunResult& r) {
    try {
        return scrape_metrics(t.spec.metrics_host, t.spec.metrics_port, 10);
    } catch (const Error& e) {
        r.trace_error = std::string("scrape: ") + e.what();
        return {};
    }
}

/// The error of a remote run ended by --remote-timeout, said in full: its log is often empty then.
std::string timeout_message(const Target& t, const RunResult& r, double timeout_s, double seconds) {
    char b[200];
    std::snprintf(b, sizeof b,
                  "no answer from the fio server at %s within --remote-timeout %g s: its fio client "
                  "was ended after %.1f s",
                  t.spec.address().c_str(), timeout_s, seconds);
    std::string said = error_lines_of(r.files + ".log");
    return std::string(b) + (said.empty() ? " (the server may be stopped, hung or unreachable)"
                                          : "; its log (" + r.files + ".log) says: " + said);
}

/// One round of `mode` on every remote target at once (fio's client, one per host).
void remote_round(std::vector<Target>& ts, const std::vector<size_t>& remote, const std::string& job,
                  const std::string& mode, int round, const RunEnv& env) {
    std::vector<std::pair<size_t, pid_t>> started;
    std::vector<RunResult> rs(remote.size());
    std::vector<PromScrape> before(remote.size());
    for (size_t k = 0; k < remote.size(); ++k) {
        Target& t = ts[remote[k]];
        if (!t.failed.empty()) continue;  // a host that failed is not asked again
        rs[k].round = round, rs[k].mode = mode;
        rs[k].files = env.dir + "/runs/" + t.spec.name + "-" + mode + "-r" + std::to_string(round + 1);
        if (t.spec.metrics_port) before[k] = scrape_remote(t, rs[k]);
        started.emplace_back(k, start_remote_run(t, job, rs[k], env));
    }
    std::vector<pid_t> pids;
    for (auto [k, pid] : started) pids.push_back(pid);
    const std::vector<ChildEnd> ends = wait_children(pids, env.remote_timeout_s, kRemoteKillAfterS, kStopGraceS);
    for (size_t i = 0; i < started.size(); ++i) {
        const size_t k = started[i].first;
        const ChildEnd& e = ends[i];
        Target& t = ts[remote[k]];
        finish_run(t, rs[k], e.status, e.timed_out);
        if (e.timed_out) rs[k].error = timeout_message(t, rs[k], env.remote_timeout_s, e.seconds);
        if (t.spec.metrics_port && rs[k].trace_error.empty() && !e.stop_signo) {
            PromScrape after = scrape_remote(t, rs[k]);
            if (rs[k].trace_error.empty()) {
                std::string disk = t.spec.path.rfind("/dev/", 0) == 0 ? t.spec.path.substr(5) : "";
                rs[k].dev = device_figures_between(before[k], after, disk);
                if (!rs[k].dev.present) rs[k].trace_error = "the exporter has no device " + disk;
            }
        }
        // A run that ended before the stop signal keeps its own result: a failure stays that failure.
        if (e.stop_signo) cut_run(rs[k], e.stop_signo);
        if (!rs[k].ok && t.failed.empty() && !e.stop_signo)
            t.failed =
                "round " + std::to_string(round + 1) + " " + mode + " on " + t.spec.address() + ": " + rs[k].error;
        t.runs.push_back(std::move(rs[k]));
    }
}

/// --simulate runs kvio simulate on this host, on a filesystem (a directory target) or a raw block device (which
/// kvio simulate reads and writes with O_DIRECT only: docs/simulate.md, `--storage-io`). Usage errors, found before
/// anything is written.
void check_simulate_targets(const std::vector<Target>& ts, const std::string& storage_io) {
    for (const auto& t : ts) {
        if (t.spec.remote())
            throw UsageError("--simulate: drive " + t.spec.name +
                             " is remote; kvio simulate runs on this host only (give a remote drive a --job)");
        const bool block = t.info.value("kind", "") == "block";
        if (t.field != TargetField::Directory && !block)
            throw UsageError("--simulate: drive " + t.spec.name + " (" + t.spec.path +
                             ") must be a directory or a block device: the simulation's storage tier");
        if (block && storage_io != "direct" && storage_io != "io_uring")
            throw UsageError("--simulate: drive " + t.spec.name +
                             " is a block device, which kvio simulate only "
                             "writes with O_DIRECT: add --storage-io direct (or io_uring) to the flags");
    }
}

/// The workload of the run: the job text (empty for --simulate), checked against the load modes.
std::string workload_job(const DrivesOptions& opt, const std::vector<std::string>& modes, std::ostream& out) {
    int given = !opt.job_path.empty() + !opt.events_path.empty() + !opt.simulate.empty();
    if (given != 1) throw UsageError("give one workload: --job JOB.fio, --events TRACE or --simulate 'FLAGS'");
    if (!opt.simulate.empty()) {
        if (opt.load != "closed")
            throw UsageError("--load " + opt.load + " with --simulate: the simulation offers its own load");
        return "";
    }
    if (!opt.events_path.empty()) {  // as a missing --job: a usage error (exit 2) before any target is looked at
        std::error_code ec;
        if (fs::is_directory(opt.events_path, ec)) throw UsageError("--events " + opt.events_path + ": is a directory");
        if (::access(opt.events_path.c_str(), R_OK) != 0)
            throw UsageError("--events " + opt.events_path + ": " + std::strerror(errno));
    }
    std::string job = opt.events_path.empty() ? read_job(opt.job_path) : distill_job(opt.events_path, out);
    const std::string job_name = opt.events_path.empty() ? opt.job_path : "the job distilled from " + opt.events_path;
    check_job_parses(opt.fio, job, job_name);
    for (const auto& m : modes)
        if (m == "trace" && !job_is_paced(job))
            throw UsageError("--load " + opt.load + ": " + job_name +
                             " has no rate, rate_iops, rate_min or thinktime line, so there is no offered load to "
                             "replay open loop (the distiller writes rate_iops per phase where its trace shows one, "
                             "thinktime for regular bursts); use --load closed for this job");
    return job;
}

RunContext context_of(const DrivesOptions& opt, const std::vector<std::string>& modes) {
    RunContext c;
    c.job_path = opt.job_path, c.kvio_version = opt.kvio_version, c.rounds = opt.rounds, c.modes = modes;
    c.keep_thinktime = opt.keep_thinktime;
    c.trace_duty = opt.trace_every_command ? "" : kTraceDuty;
    c.fio_version = first_line_of({opt.fio, "--version"});
    struct utsname u {};
    if (::uname(&u) == 0) c.kernel = u.release;
    c.started = now_stamp("%Y-%m-%dT%H:%M:%SZ");
    c.kv = opt.kv;
    return c;
}

void write_outputs(const std::vector<Target>& ts, const RunContext& ctx, const DrivesOptions& opt,
                   const std::string& dir) {
    nlohmann::json j = drives_json(ts, ctx);
    write_json_file(dir + "/drives.json", j);
    if (opt.html) write_text_file(dir + "/drives.html", drives_html(j));
}

/// What in `dir` an earlier kvio drives run wrote ("drives.json", "runs/", "probe/", comma-separated), "" for none
/// or no `dir`.
std::string earlier_result_in(const std::string& dir) {
    std::string held;
    std::error_code ec;
    if (dir.empty()) return held;
    for (const char* part : {"drives.json", "drives.html", "runs", "probe"}) {
        const fs::path p = fs::path(dir) / part;
        const bool there = fs::is_directory(p, ec) ? !fs::is_empty(p, ec) : fs::exists(p, ec);
        if (there) held += (held.empty() ? "" : ", ") + std::string(part) + (fs::is_directory(p, ec) ? "/" : "");
    }
    return held;
}

/// The output directory's parts a run makes (DIR itself when it did not exist, else runs/, probe/ and job.fio in
/// it): removed again unless kept, so a run that fails before its drives.json is written (a full filesystem) leaves
/// nothing half-written behind.
class OutputDir {
public:
    /// Makes DIR/runs and DIR/probe; a failure names the path.
    explicit OutputDir(const std::string& dir) : dir_(dir) {
        std::error_code ec;
        existed_ = fs::exists(dir, ec);
        for (const char* sub : {"runs", "probe"}) {
            const fs::path p = fs::path(dir) / sub;
            if (!fs::create_directories(p, ec) && ec) {
                remove();
                throw Error(p.string() + ": cannot create: " + ec.message());
            }
        }
    }
    ~OutputDir() {
        if (!kept_) remove();
    }
    OutputDir(const OutputDir&) = delete;
    OutputDir& operator=(const OutputDir&) = delete;
    void keep() { kept_ = true; }
    /// What a failed run says after its error: that nothing of it stayed.
    std::string removed_note() const {
        return existed_ ? "; kvio drives removed what it had written in " + dir_
                        : "; kvio drives removed " + dir_ + ", which it had created";
    }

private:
    void remove() const {
        std::error_code ec;
        if (!existed_) {
            fs::remove_all(dir_, ec);
            return;
        }
        for (const char* sub : {"runs", "probe", "job.fio"}) fs::remove_all(fs::path(dir_) / sub, ec);
    }
    std::string dir_;
    bool existed_ = false, kept_ = false;
};

/// The probes, the rounds and the outputs (drives.json, drives.html, the console table) of a run whose targets are
/// checked and whose output directory exists; returns run_drives' status.
int measure_and_report(const DrivesOptions& opt, const std::string& job, const std::vector<std::string>& modes,
                       std::vector<Target>& ts, const RunEnv& env, std::ostream& out);

}  // namespace

int run_drives(const DrivesOptions& opt, std::ostream& out) {
    if (opt.drives.empty()) throw UsageError("--drive: give at least one target");
    if (opt.rounds < 1) throw UsageError("--rounds must be at least 1");
    std::vector<std::string> modes = opt.simulate.empty() ? modes_of(opt.load) : std::vector<std::string>{"simulate"};
    std::string job = workload_job(opt, modes, out);
    std::vector<std::string> sim_words = split_words(opt.simulate);
    const std::string storage_io = opt.simulate.empty() ? "" : check_simulate_flags(sim_words);
    if (!opt.simulate.empty() && opt.check_simulate_args) try {
            opt.check_simulate_args(sim_words);
        } catch (const UsageError&) {
            throw;
        } catch (const Error& e) {
            throw UsageError(std::string("--simulate: ") + e.what());
        }
    const std::vector<DriveSpec> specs = parse_specs(opt);
    for (const auto& d : specs)  // before any drive is looked at (check_simulate_targets checks the rest)
        if (!opt.simulate.empty() && d.remote())
            throw UsageError("--simulate: drive " + d.name +
                             " is remote; kvio simulate runs on this host only (give a remote drive a --job)");
    if (std::error_code ec; !opt.out_dir.empty() && fs::exists(opt.out_dir, ec) && !fs::is_directory(opt.out_dir, ec))
        throw UsageError("-o " + opt.out_dir + ": exists and is not a directory");
    if (const std::string held = earlier_result_in(opt.out_dir); !held.empty())
        throw UsageError("-o " + opt.out_dir + ": holds an earlier kvio drives result (" + held +
                         "); its files would mix with this run's: give a new directory or remove it");
    std::vector<Target> ts = prepare_targets(specs, opt.force);
    if (!opt.simulate.empty()) check_simulate_targets(ts, storage_io);
    RunEnv env;
    env.sim_words = sim_words, env.force = opt.force, env.keep_thinktime = opt.keep_thinktime;
    env.trace_every_command = opt.trace_every_command;
    env.fio = opt.fio, env.probe_seconds = opt.probe_seconds, env.probe_bytes = opt.probe_bytes;
    env.remote_timeout_s = opt.remote_timeout_s;
    env.kvio_exe = fs::read_symlink(opt.kvio_exe == "/proc/self/exe" ? "/proc/self/exe" : opt.kvio_exe).string();
    if (opt.kvio_exe != "/proc/self/exe") env.kvio_exe = opt.kvio_exe;
    env.dir = opt.out_dir.empty() ? now_stamp("kvio-drives-%Y%m%d-%H%M%S") : opt.out_dir;
    OutputDir out_dir(env.dir);
    try {
        const int status = measure_and_report(opt, job, modes, ts, env, out);
        out_dir.keep();
        return status;
    } catch (const Stopped&) {
        out_dir.keep();  // drives.json holds what was measured
        throw;
    } catch (const UsageError&) {
        throw;
    } catch (const Error& e) {
        throw Error(std::string(e.what()) + out_dir.removed_note());
    }
}

namespace {

/// The ceiling probes (probe_ceilings): every remote target at once, then each local one alone; a line per target.
void probe_all(std::vector<Target>& ts, const std::vector<size_t>& local, const std::vector<size_t>& remote,
               double probe_seconds, const RunEnv& env, const ChildStop& stop, std::ostream& out) {
    if (probe_seconds <= 0) {
        for (const auto& t : ts) out << "probe " << t.spec.name << " skipped (--probe-seconds 0)\n";
        return;
    }
    auto report = [&](const std::vector<Target*>& group) {
        if (stop.signo()) return;
        for (const Target* t : group) out << ceiling_line(*t) << "\n";
        out.flush();
    };
    if (!remote.empty()) {
        std::vector<Target*> group;
        for (size_t i : remote) group.push_back(&ts[i]);
        out << "probing" << (group.size() > 1 ? " at once:" : ":");
        for (const Target* t : group) out << " " << t->spec.name;
        out << " (remote) ...\n" << std::flush;
        probe_ceilings(group, env);
        report(group);
    }
    for (size_t i : local) {
        if (stop.signo()) return;
        probe_ceilings({&ts[i]}, env);
        report({&ts[i]});
    }
}

int measure_and_report(const DrivesOptions& opt, const std::string& job, const std::vector<std::string>& modes,
                       std::vector<Target>& ts, const RunEnv& env, std::ostream& out) {
    if (!opt.events_path.empty()) write_text_file(env.dir + "/job.fio", job);  // what ran, for the record
    RunContext ctx = context_of(opt, modes);
    const JobDeclared declared = job_declared(job);
    ctx.job_bytes = declared.bytes, ctx.job_ios = declared.ios;
    if (!opt.simulate.empty()) ctx.job_path = "kvio simulate " + opt.simulate;
    std::vector<size_t> local, remote;
    for (size_t i = 0; i < ts.size(); ++i) (ts[i].spec.remote() ? remote : local).push_back(i);
    ChildStop stop;
    probe_all(ts, local, remote, opt.probe_seconds, env, stop, out);
    for (int r = 0; r < opt.rounds && !stop.signo(); ++r)
        for (const auto& m : modes) {
            const std::string label = "round " + std::to_string(r + 1) + "/" + std::to_string(opt.rounds) + " " + m;
            if (!remote.empty() && !stop.signo()) {
                out << label << ":";
                for (size_t i : remote)
                    if (ts[i].failed.empty()) out << " " << ts[i].spec.name;
                out << " (remote, at once) ...\n" << std::flush;
                remote_round(ts, remote, job, m, r, env);
            }
            if (!local.empty() && !stop.signo()) local_round(ts, local, job, m, r, env, stop, opt.parallel, label, out);
            if (stop.signo()) break;  // a cut round is not done
            out << "round " << r + 1 << "/" << opt.rounds << " " << m << " done\n";
            out.flush();
        }
    ctx.stopped_by_signal = stop.signo();
    if (ctx.stopped_by_signal) mark_interrupted(ts, ctx.stopped_by_signal, size_t(opt.rounds) * modes.size());
    // The table first: when the result files cannot be written (a full filesystem), what was measured is on the
    // console at least.
    print_table(out, ts, ctx);
    for (const auto& t : ts)
        if (!t.interrupted.empty()) out << "INTERRUPTED " << t.spec.name << ": " << t.interrupted << "\n";
    out.flush();
    try {
        write_outputs(ts, ctx, opt, env.dir);
    } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (the table above is what was measured)");
    }
    out << "results: " << env.dir << "/drives.json" << (opt.html ? ", " + env.dir + "/drives.html" : "") << "\n";
    if (stop.signo())
        throw Stopped(stop.signo(), "drives: stopped by signal " + std::to_string(stop.signo()) +
                                        "; what was measured is in " + env.dir + "/drives.json");
    int failed = 0;
    for (const auto& t : ts)
        if (!t.failed.empty()) ++failed, out << "FAILED " << t.spec.name << ": " << t.failed << "\n";
    return failed ? 1 : 0;
}

}  // namespace

}  // namespace kvio::drives
