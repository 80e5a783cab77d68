// `kvio distill`: trace -> fio job (+ exact iolog), and the closed-loop fidelity check (--verify).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

#include "common/count_noun.h"
#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "common/event_trace.h"
#include "distiller/fidelity.h"
#include "distiller/fio_job.h"
#include "distiller/iolog.h"
#include "distiller/profile.h"
#include "distiller/multi_job.h"
#include "distiller/phased_job.h"
#include "distiller/timeline.h"
#include "distiller/trims.h"
#include "distiller/verify.h"
#include "cli/commands.h"
#include "common/stop_signal.h"

namespace kvio::cli {

namespace {
struct DistillArgs {
    std::string events, trace_json, dev, comm, out, iolog, json_out, mode = "count";
    std::vector<std::string> filenames;  // PATH, or DEV=PATH per device
    uint32_t pid = 0, runtime = 0, nr_requests = 0, max_phases = 16;
    double max_tv = -1;
    bool verify = false;
    bool force = false;       // --force: --verify may write over data in its target's first MiB
    bool keep_files = false;  // --keep-files: --verify without -o keeps its private directory
};

/// --verify without -o: a private directory (mkdtemp under $TMPDIR, else /tmp) for the job and the replay's files
/// (trace, fio JSON, log), so two runs at once never share a name. Removed at destruction unless `keep` or
/// keep_after_failure() (a replay that ran and failed: its message names the replay's log there); a kept directory is
/// named on stderr.
class VerifyDir {
public:
    explicit VerifyDir(bool keep) : keep_(keep) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "kvio-distill-verify-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw Error("distill --verify: cannot create a directory " + tmpl + ": " + std::strerror(errno));
        path_ = tmpl;
    }
    ~VerifyDir() {
        if (keep_ || failed_) {
            std::fprintf(stderr, "kvio distill: --verify's job and replay files are kept in %s\n", path_.c_str());
            return;
        }
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    VerifyDir(const VerifyDir&) = delete;
    VerifyDir& operator=(const VerifyDir&) = delete;
    const std::string& path() const { return path_; }
    bool kept() const { return keep_; }
    /// Kept although not `keep`: the replay ran and failed, and its error names the log here.
    void keep_after_failure() { failed_ = true; }

private:
    std::string path_;
    bool keep_, failed_ = false;
};

void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
    f.flush();
    if (!f) throw Error("distill: cannot write " + path);
}

// Fails before any work when an output cannot be written (a bad path must not cost a traced replay).
void probe_writable(const std::string& path) {
    if (path.empty() || path == "-") return;
    std::ofstream f(path, std::ios::app);
    if (!f) throw Error("distill: cannot write " + path + ": " + std::strerror(errno));
}

// `--filename` values: "PATH" (the only device's target) or "DEV=PATH" (DEV as --dev takes it: MAJ:MIN or name).
// Returns the target of each device of `devs`, "" when none was given.
std::vector<std::string> map_targets(const std::vector<std::string>& given,
                                     const std::vector<distiller::Profile>& devs) {
    std::vector<std::string> out(devs.size());
    for (const auto& g : given) {
        const size_t eq = g.find('=');
        if (eq == std::string::npos || g.find('/') < eq) {  // a plain path
            if (devs.size() > 1)
                throw Error(
                    "distill --filename " + g + ": the trace has " + std::to_string(devs.size()) +
                    " devices; map each with --filename DEV=PATH (DEV: MAJ:MIN or name), or choose one with --dev");
            if (!out[0].empty()) throw UsageError("--filename " + g + ": a target was already given (" + out[0] + ")");
            out[0] = g;
            continue;
        }
        const std::string dev = g.substr(0, eq), path = g.substr(eq + 1);
        auto device_list = [&] {
            std::string list;
            for (const auto& d : devs) list += (list.empty() ? "" : ", ") + d.dev + " (" + d.disk + ")";
            return list;
        };
        if (dev.empty())
            throw UsageError("--filename " + g +
                             ": the mapping's device part (before '=') is empty: give DEV=PATH, DEV as --dev "
                             "takes it (MAJ:MIN or name; the trace's devices: " +
                             device_list() + ")");
        size_t hit = devs.size();
        for (size_t i = 0; i < devs.size(); ++i)
            if (devs[i].dev == dev || devs[i].disk == dev) hit = i;
        if (hit == devs.size())
            throw Error("distill --filename " + g + ": no device " + dev +
                        " in the trace (its devices: " + device_list() + ")");
        if (path.empty()) throw UsageError("--filename " + g + ": no path after '='");
        if (!out[hit].empty())
            throw Error("distill --filename " + g + ": device " + dev + " already has a target (" + out[hit] + ")");
        out[hit] = path;
    }
    return out;
}

// True when `a` and `b` name one target: the same path, the same block device (st_rdev), or the same file.
bool same_target(const std::string& a, const std::string& b) {
    if (a == b) return true;
    struct stat sa {
    }, sb{};
    if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
    if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode)) return sa.st_rdev == sb.st_rdev;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// Two devices of the trace mapped to one target: their sections would run on it together (--verify refuses this).
void warn_shared_targets(const std::vector<std::string>& targets, const std::vector<distiller::Profile>& devs) {
    for (size_t i = 0; i < targets.size(); ++i)
        for (size_t k = i + 1; k < targets.size(); ++k)
            if (!targets[i].empty() && !targets[k].empty() && same_target(targets[i], targets[k]))
                std::fprintf(stderr,
                             "kvio distill: warning: devices %s (%s) and %s (%s) are both mapped to %s: %s; map each "
                             "to a target "
                             "of its own\n",
                             devs[i].dev.c_str(), devs[i].disk.c_str(), devs[k].dev.c_str(), devs[k].disk.c_str(),
                             targets[k].c_str(),
                             devs[i].write.cmds || devs[k].write.cmds
                                 ? "their sections would write over each other's data there"
                                 : "their sections would read it together, so neither device's mix is replayed alone");
}

// The source device's tag count: --nr-requests, else recorded in the trace, else sysfs when the traced disk is here.
void device_tags(const distiller::Profile& p, uint32_t given, distiller::JobOptions& jo) {
    if (given) {
        jo.nr_requests = given;
        jo.nr_requests_source = "--nr-requests";
    } else if (p.nr_requests) {
        jo.nr_requests = p.nr_requests;
        jo.nr_requests_source = "recorded in the trace";
    } else if (auto d = parse_dev_string(p.dev)) {
        // The trace's device on this machine, when it is the same disk (name matches).
        try {
            auto info = block_dev_info(*d);
            if (info.nr_requests && (p.disk.empty() || info.name == p.disk)) {
                jo.nr_requests = info.nr_requests;
                jo.nr_requests_source = "/sys/block/" + info.name + "/queue/nr_requests";
            }
        } catch (const Error&) {}
    }
}

// The --verify scores of one device, printed.
void print_fidelity(const std::string& job_path, const std::string& target, const std::string& events,
                    const distiller::Fidelity& f, const distiller::TimeFidelity& tf) {
    using namespace kvio::distiller;
    std::printf("fidelity of %s replayed on %s (replay trace %s):\n", job_path.c_str(), target.c_str(), events.c_str());
    std::printf("                   whole run                     worst of %s (by commands)\n",
                count_noun(tf.windows, "window").c_str());
    std::printf("  size TV          read %.4f  write %.4f      %.4f\n", f.size_tv_read, f.size_tv_write,
                tf.worst_size_tv);
    std::printf("  read share       %.1f -> %.1f %%, error %.2f    %.2f points\n", f.rwmix_orig, f.rwmix_replay,
                f.rwmix_err, tf.worst_read_err);
    std::printf("  queue depth TV   %.4f                        %.4f\n", f.qd_tv, tf.worst_depth_tv);
    std::printf("  sequential share %.1f -> %.1f %%, error %.2f    %.2f points\n", f.seq_orig, f.seq_replay, f.seq_err,
                tf.worst_seq_err);
    std::printf("  phases           %zu -> %zu, %s, volume error <= %.2f %%", tf.phases.orig, tf.phases.replay,
                tf.phases.in_order ? "in order" : "NOT matching", tf.worst_volume_err);
    if (tf.phases.replay_detected !=
        tf.phases.replay)  // the replay's own detection, before judging it against the trace
        std::printf(" (the replay's detector alone: %zu)", tf.phases.replay_detected);
    std::printf("\n");
    std::printf("  D2C replay/orig  p50 %.2f  p99 %.2f\n", f.d2c_p50_ratio, f.d2c_p99_ratio);
    std::printf("fidelity: %s\n", summary_line(f, tf).c_str());
}

void run_distill(const DistillArgs& a) {
    using namespace kvio::distiller;
    // Before anything is read or written: the replay runs under `kvio trace` (BPF) and writes a raw device.
    if (a.verify && ::geteuid() != 0)
        throw Error(
            "distill --verify needs root: it runs the job under `kvio trace` (BPF) on a block device; run it with "
            "sudo (nothing was written)");
    if (a.events.empty() && a.trace_json.empty())
        throw UsageError(
            "give the trace with --events FILE (kvio.events/1, preferred) or --trace-json FILE (kvio.trace/1)");
    if (a.verify && a.events.empty())
        throw UsageError("--verify: needs --events (the score compares per-command distributions)");
    if (a.filenames.empty() && (a.verify || !a.iolog.empty()))
        throw UsageError(std::string(a.verify ? "--verify" : "--iolog") +
                         ": needs --filename TARGET (the device the job runs on / the iolog names)");
    if (a.max_tv >= 0 && !a.verify) throw UsageError("--max-tv: needs --verify (it bounds the replay's size TV)");
    if (a.force && !a.verify) throw UsageError("--force: needs --verify (only the replay writes to a device)");
    if (a.keep_files && !a.verify) throw UsageError("--keep-files: needs --verify (only the replay writes files)");
    const bool json_stdout = a.json_out == "-";
    probe_writable(a.json_out);
    // A stop while the trace is read (a large one takes a while): one line and 128 + N, not the signal's default
    // action. Until the job is derived; --verify installs its own handlers for the replay.
    std::optional<StopSignal> loading(std::in_place, StopSignal::Options{.restart = true});
    auto stopped = [&](const char* what) {
        const int sig = loading->signo();
        return Stopped(sig, "distill: stopped by signal " + std::to_string(sig) + " while " + what + " " +
                                (a.events.empty() ? a.trace_json : a.events));
    };
    std::vector<EventTrace> evs;
    std::vector<Profile> ps;
    if (!a.events.empty()) {
        try {
            evs = load_all_events(a.events, EventFilter{a.dev, a.pid, a.comm}, loading->flag());
        } catch (const Stopped&) {
            throw stopped("loading");
        }
        for (const auto& ev : evs) ps.push_back(profile_events(ev));
        if (!evs.front().has_summary)
            std::fprintf(stderr,
                         "kvio distill: warning: %s has no summary record: the trace was cut off, its last "
                         "commands are missing and its loss check could not be made\n",
                         a.events.c_str());
    } else {
        if (a.pid || !a.comm.empty())
            throw UsageError("--pid/--comm need --events (kvio.trace/1 histograms are per device, not per process)");
        ps.push_back(profile_trace_json(a.trace_json, a.dev));
    }
    const std::vector<std::string> targets = map_targets(a.filenames, ps);
    if (!a.verify) warn_shared_targets(targets, ps);  // --verify refuses one disk for two devices
    const bool multi = ps.size() > 1;
    if (multi && !a.iolog.empty())
        throw Error("distill --iolog: the trace has " + std::to_string(ps.size()) +
                    " devices; an iolog replays one: choose it with --dev");
    if (a.verify || !a.iolog.empty())
        for (size_t i = 0; i < ps.size(); ++i)
            if (targets[i].empty())
                throw Error(std::string("distill ") + (a.verify ? "--verify" : "--iolog") + ": device " + ps[i].dev +
                            " (" + ps[i].disk + ") has no target: give --filename " + ps[i].dev + "=PATH for it");

    std::vector<DeviceJobInput> inputs(ps.size());
    for (size_t i = 0; i < ps.size(); ++i) {
        JobOptions& jo = inputs[i].opt;
        jo.filename = targets[i];
        jo.target_is_block = !targets[i].empty() && is_block_device(targets[i]);
        jo.mode = a.mode == "time" || a.runtime ? JobMode::Time : JobMode::Count;
        jo.runtime_s = a.runtime;
        device_tags(ps[i], a.nr_requests, jo);
        inputs[i].whole = &ps[i];
        if (!evs.empty()) inputs[i].trace = &evs[i];
    }
    PhaseOptions po;
    po.max_phases = a.max_phases;
    std::vector<DevicePlan> plans;
    if (loading->stopped()) throw stopped("loading");
    FioJob job = a.events.empty() ? make_fio_job(ps[0], inputs[0].opt) : make_job(inputs, inputs[0].opt, po, &plans);
    if (loading->stopped()) throw stopped("distilling");
    loading.reset();
    // Both outputs are opened before either is written: a bad --iolog path leaves no job behind.
    std::ofstream iolog;
    if (!a.iolog.empty()) {
        if (a.events.empty()) throw UsageError("--iolog: needs --events (histograms hold no individual commands)");
        iolog.open(a.iolog);
        if (!iolog) throw Error("distill: cannot write " + a.iolog + ": " + std::strerror(errno));
    }
    if (!a.out.empty()) write_file(a.out, job.text);

    size_t iolog_lines = 0;
    if (iolog.is_open()) {
        iolog_lines = write_iolog(iolog, evs[0].cmds, targets[0]);
        if (!iolog.flush()) throw Error("distill: cannot write " + a.iolog);
    }

    const Profile& p = ps[0];
    nlohmann::json j = {{"schema", "kvio.distill/1"},
                        {"source", p.source},
                        {"format", p.format},
                        {"dev", p.dev},
                        {"disk", p.disk},
                        {"cmds", {{"read", p.read.cmds}, {"write", p.write.cmds}, {"other", p.other_cmds}}}};
    if (multi) {
        j["dev"] = j["disk"] = nullptr;
        j.erase("cmds");
    }
    j["job"] = job_json(job);
    j["not_inferred"] = job.not_inferred;
    if (!a.events.empty() && !multi && plans[0].pieces.size() == 1) j["phases"] = phases_json(plans[0].pieces[0]);
    if (!a.events.empty() && (multi || plans[0].pieces.size() != 1 || !plans[0].trims.empty()))
        j["devices"] = devices_json(plans);
    if (!a.out.empty()) j["job_file"] = a.out;
    for (const auto& d : plans)
        for (const auto& pc : d.pieces)
            if (!pc.note.empty()) {
                const std::string note = multi ? d.dev + ": " + pc.note : pc.note;
                std::fprintf(stderr, "kvio distill: note: %s\n", note.c_str());
                j["notes"].push_back(note);
            }
    if (!a.iolog.empty()) j["iolog"] = {{"file", a.iolog}, {"ios", iolog_lines}};

    auto write_json = [&] {
        if (a.json_out.empty()) return;
        if (json_stdout)
            std::cout << j.dump(2) << "\n";
        else
            write_json_file(a.json_out, j);
    };
    // Without -o the job goes to stdout, --verify or not (before --verify's fidelity table); --json - replaces both.
    if (!json_stdout && a.out.empty()) std::cout << job.text << std::flush;
    bool missed = false;
    if (a.verify) {
        std::optional<VerifyDir> dir;
        if (a.out.empty()) dir.emplace(a.keep_files);
        const std::string job_path = dir ? dir->path() + "/job.ini" : a.out;
        if (dir) write_file(job_path, job.text);
        VerifyOptions vo;
        vo.job_path = job_path;
        vo.events_out = job_path + ".replay.jsonl";
        // What the output names: a file that stays, or null when the private directory is removed at the end.
        const nlohmann::json events_named =
            !dir || dir->kept() ? nlohmann::json(vo.events_out) : nlohmann::json(nullptr);
        std::vector<VerifyTarget> vt;
        vo.force = a.force;
        for (size_t i = 0; i < ps.size(); ++i)
            vt.push_back({&ps[i], targets[i], multi ? plans[i].needs_bytes : job.needs_bytes()});
        std::vector<Replay> rs;
        try {
            rs = run_replays(vt, vo);
        } catch (const Stopped& e) {
            // No score without the whole replay; --json keeps the job and what was derived, marked as stopped.
            j["stopped_by_signal"] = e.signo;
            j["verify"] = {{"stopped_by_signal", e.signo}, {"replay_events", events_named}};
            write_json();
            // The private directory goes at the end (nothing was scored): the message must not send the user there.
            if (dir && !dir->kept())
                throw Stopped(e.signo, "distill --verify: stopped by signal " + std::to_string(e.signo) +
                                           " (the traced fio run was ended; --keep-files keeps its log)");
            throw;
        } catch (const Error&) {
            // A refused target ran nothing (the directory holds the job only); a replay that ran and failed is named
            // by its log, which stays.
            if (dir && std::filesystem::exists(vo.events_out + ".log")) dir->keep_after_failure();
            throw;
        }
        double worst_tv = 0;
        nlohmann::json per_dev = nlohmann::json::array();
        for (size_t i = 0; i < ps.size(); ++i) {
            Fidelity f = score(ps[i], rs[i].profile);
            // The detector's own limits, not --max-phases.
            TimeFidelity tf = score_over_time(data_cmds(evs[i].cmds), data_cmds(rs[i].trace.cmds));
            nlohmann::json v = to_json(f);
            v["time_resolved"] = to_json(tf);
            v["replay_events"] = events_named;
            v["summary"] = summary_line(f, tf);
            const nlohmann::json kinds = trim_flush_fidelity(ps[i], rs[i].profile);
            v.update(kinds);
            worst_tv = std::max({worst_tv, f.size_tv_read, f.size_tv_write, tf.worst_size_tv});
            if (multi) {
                v["dev"] = ps[i].dev;
                v["disk"] = ps[i].disk;
                v["target"] = targets[i];
            }
            per_dev.push_back(v);
            if (!json_stdout) {
                if (multi) std::printf("device %s (%s):\n", ps[i].dev.c_str(), ps[i].disk.c_str());
                print_fidelity(dir && !dir->kept() ? "the job" : job_path, targets[i],
                               events_named.is_null() ? "removed at the end: --keep-files keeps it" : vo.events_out, f,
                               tf);
                if (ps[i].discard_cmds || rs[i].profile.discard_cmds)
                    std::printf("  discards         %lu -> %lu, size TV %.4f\n", (unsigned long)ps[i].discard_cmds,
                                (unsigned long)rs[i].profile.discard_cmds, v["discards"]["size_tv"].get<double>());
            }
        }
        j["verify"] = multi ? nlohmann::json{{"devices", per_dev}, {"replay_events", events_named}} : per_dev[0];
        if (a.max_tv >= 0) {
            missed = worst_tv > a.max_tv;
            j["verify"]["max_tv"] = {{"limit", a.max_tv}, {"worst", worst_tv}, {"met", !missed}};
        }
        if (!json_stdout && a.max_tv >= 0)
            std::printf("--max-tv %.4f: worst size TV %.4f, %s\n", a.max_tv, worst_tv, missed ? "MISSED" : "met");
    }
    write_json();
    if (!json_stdout) {
        if (!a.out.empty()) {
            std::printf("wrote %s:", a.out.c_str());
            if (!job.sections.empty()) {
                size_t phases = 0;
                for (const auto& d : plans)
                    for (const auto& pc : d.pieces) phases += pc.phases.size();
                std::printf(" %s (%s", count_noun(job.sections.size(), "section").c_str(),
                            count_noun(phases, "phase").c_str());
                size_t trims = 0;
                for (const auto& d : plans) trims += d.trims.size();
                if (trims) std::printf(", %s", count_noun(trims, "trim phase").c_str());
                if (multi) std::printf(", %s", count_noun(plans.size(), "device").c_str());
                std::printf(")");
            }
            for (const char* k : {"rw", "rwmixread", "bssplit", "iodepth", "numjobs", "thinktime", "rate_process"})
                if (!job.get(k).empty()) std::printf(" %s=%s", k, job.get(k).c_str());
            std::printf("\n");
        }
        if (!a.iolog.empty())
            std::printf("wrote %s: %s (fio iolog v3)\n", a.iolog.c_str(),
                        count_noun(iolog_lines, "I/O", "I/Os").c_str());
    }
    if (missed) {
        std::fprintf(stderr, "kvio distill: the replay's worst size TV exceeds --max-tv %.4f\n", a.max_tv);
        throw CLI::RuntimeError(1);
    }
}
}  // namespace

void add_distill_command(CLI::App& app) {
    auto a = std::make_shared<DistillArgs>();
    auto* sub = app.add_subcommand(
        "distill",
        "Turn a device trace into a fio job (and an exact fio iolog), and score how faithfully it replays.\n"
        "Every job value is derived from the trace; the job's header says from what, and what could not be inferred.\n"
        "Rules: docs/distill.md.");
    sub->add_option("--events", a->events,
                    "kvio.events/1 JSONL (or a kvio.events.bin/1 capture) from `kvio trace --events` (preferred)");
    sub->add_option("--trace-json", a->trace_json,
                    "kvio.trace/1 from `kvio trace --json` (histograms; used without --events)");
    sub->add_option("--dev", a->dev,
                    "distill only this device, \"MAJ:MIN\" or name (default: every device of the trace, each with "
                    "its own sections)");
    sub->add_option("--pid", a->pid, "keep only commands submitted by this pid");
    sub->add_option("--comm", a->comm, "keep only commands submitted by tasks with this comm");
    sub->add_option("-o,--output", a->out, "write the fio job here (default: print it)");
    sub->add_option(
           "--filename", a->filenames,
           "fio target (file or block device), never defaulted; without it the job sets no filename (give it on fio's "
           "command line); needed by --verify and --iolog. Several devices: DEV=PATH for each (DEV as --dev takes it), "
           "repeatable")
        ->allow_extra_args(false);
    sub->add_option("--mode", a->mode,
                    "how each section ends: count (the trace's number of commands, number_ios) or time (the trace's "
                    "duration, runtime)")
        ->capture_default_str()
        ->check(CLI::IsMember({"count", "time"}));
    sub->add_option("--runtime", a->runtime,
                    "the whole job's runtime in seconds (implies --mode time; phases get their share)")
        ->check(positive_integer());
    sub->add_option("--max-phases", a->max_phases, "at most this many phases (1: one flat section for the whole trace)")
        ->capture_default_str()
        ->check(positive_integer());
    sub->add_option("--nr-requests", a->nr_requests,
                    "the source device's tag count, caps iodepth (default: /sys/block/DISK/queue/nr_requests when the "
                    "traced disk exists here)");
    sub->add_option("--iolog", a->iolog,
                    "also write an exact replay log in fio iolog v3 format (timestamps µs, offsets bytes)");
    sub->add_flag(
        "--verify", a->verify,
        "run the job with fio on --filename (a block device, not the traced one) under `kvio trace`, and print the "
        "fidelity score, whole run and window by window: size TV per direction, read-share error, queue-depth TV, "
        "sequential-share error, the phase sequence, D2C ratios");
    sub->add_flag("--force", a->force,
                  "with --verify: let a job that writes overwrite a target whose first MiB holds data (a filesystem "
                  "signature, a partition table, an earlier job's bytes); a mounted, in-use or read-only target is "
                  "always refused");
    sub->add_flag(
        "--keep-files", a->keep_files,
        "with --verify and no -o: keep the private directory (under $TMPDIR, else /tmp) holding the job, the "
        "replay's trace, fio JSON and log, and name it on stderr (default: removed at the end; with -o they are "
        "written next to the job and kept)");
    sub->add_option(
           "--max-tv", a->max_tv,
           "with --verify: exit 1 when the replay's worst size TV (whole run or any window) is above this (for CI)")
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--json", a->json_out,
                    "write the derived options, phases (and the fidelity numbers) as JSON to FILE; - = stdout "
                    "(instead of the text output)");
    sub->callback([a] { run_distill(*a); });
}

}  // namespace kvio::cli
