#include "distiller/distill.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/count_noun.h"
#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "distiller/fidelity.h"
#include "distiller/file_level.h"
#include "distiller/file_verify.h"
#include "distiller/stream_scores.h"
#include "distiller/iolog.h"
#include "distiller/phased_job.h"
#include "distiller/timeline.h"
#include "distiller/trims.h"
#include "distiller/target_limits.h"
#include "distiller/verify.h"

namespace kvio::distiller {

namespace {

// printf into a string: the console lines keep their printf formats.
[[gnu::format(printf, 1, 2)]] std::string strf(const char* f, ...) {
    va_list ap, ap2;
    va_start(ap, f);
    va_copy(ap2, ap);
    const int n = std::vsnprintf(nullptr, 0, f, ap);
    va_end(ap);
    std::string s(size_t(std::max(n, 0)) + 1, '\0');
    std::vsnprintf(s.data(), s.size(), f, ap2);
    va_end(ap2);
    s.resize(size_t(std::max(n, 0)));
    return s;
}

void put(std::ostream* os, const std::string& text) {
    if (os) *os << text;
}

/// --verify without -o: a private directory (mkdtemp under $TMPDIR, else /tmp) for the job and the replay's files
/// (trace, fio JSON, log), so two runs at once never share a name. Removed at destruction unless `keep` or
/// keep_after_failure() (a replay that ran and failed: its message names the replay's log there); a kept directory is
/// named on `diag`.
class VerifyDir {
public:
    VerifyDir(bool keep, std::ostream* diag) : keep_(keep), diag_(diag) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "kvio-distill-verify-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw Error("distill --verify: cannot create a directory " + tmpl + ": " + std::strerror(errno));
        path_ = tmpl;
    }
    ~VerifyDir() {
        if (keep_ || failed_) {
            put(diag_, "kvio distill: --verify's job and replay files are kept in " + path_ + "\n");
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
    std::ostream* diag_;
};

void write_file(const std::string& path, const std::string& text) {
    try {
        write_text_file(path, text);
    } catch (const Error& e) {
        throw Error(std::string("distill: ") + e.what());
    }
}

// Fails before any work when an output cannot be written (a bad path must not cost a traced replay).
void probe_writable(const std::string& path) {
    if (path.empty() || path == "-") return;
    const bool existed = std::filesystem::exists(path);
    std::ofstream f(path, std::ios::app);
    if (!f) throw Error("distill: cannot write " + path + ": " + std::strerror(errno));
    f.close();
    if (!existed) std::filesystem::remove(path);  // only a probe: no empty file is left if the run fails later
}

// The option combinations `kvio distill` refuses, before anything is read or written.
void check_options(const DistillOptions& a) {
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
    const bool file_only = a.level == DistillLevel::File;
    if (a.level != DistillLevel::Device && !a.events.empty() && a.verify && a.filenames.empty() && a.target.empty())
        throw UsageError(
            "--verify: needs --filename TARGET (a device-level job's device) or --target DEV (a block device a "
            "file-level job's filesystem is made on)");
    if (!a.target.empty() && !a.verify) throw UsageError("--target: needs --verify (the file level's replay device)");
    if (file_only && !a.iolog.empty())
        throw UsageError("--iolog: the device level's exact replay log; --level file writes its own iologs");
    if (a.filenames.empty() && (a.verify || !a.iolog.empty()) && !file_only && a.target.empty())
        throw UsageError(std::string(a.verify ? "--verify" : "--iolog") +
                         ": needs --filename TARGET (the device the job runs on / the iolog names)");
    if (a.max_tv >= 0 && !a.verify) throw UsageError("--max-tv: needs --verify (it bounds the replay's size TV)");
    if (a.force && !a.verify) throw UsageError("--force: needs --verify (only the replay writes to a device)");
    if (a.keep_files && !a.verify) throw UsageError("--keep-files: needs --verify (only the replay writes files)");
}

// `--filename` values: "PATH" (the only device's target) or "DEV=PATH" (DEV as --dev takes it: MAJ:MIN or name).
// Returns the target of each device of `devs`, "" when none was given.
std::vector<std::string> map_targets(const std::vector<std::string>& given, const std::vector<Profile>& devs) {
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
void warn_shared_targets(const std::vector<std::string>& targets, const std::vector<Profile>& devs,
                         std::ostream* diag) {
    for (size_t i = 0; i < targets.size(); ++i)
        for (size_t k = i + 1; k < targets.size(); ++k)
            if (!targets[i].empty() && !targets[k].empty() && same_target(targets[i], targets[k]))
                put(diag, strf("kvio distill: warning: devices %s (%s) and %s (%s) are both mapped to %s: %s; map "
                               "each to a target of its own\n",
                               devs[i].dev.c_str(), devs[i].disk.c_str(), devs[k].dev.c_str(), devs[k].disk.c_str(),
                               targets[k].c_str(),
                               devs[i].write.cmds || devs[k].write.cmds
                                   ? "their sections would write over each other's data there"
                                   : "their sections would read it together, so neither device's mix is replayed "
                                     "alone"));
}

// The source device's tag count: --nr-requests, else recorded in the trace, else sysfs when the traced disk is here.
void device_tags(const Profile& p, uint32_t given, JobOptions& jo) {
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

// The --verify scores of one device, as printed.
std::string fidelity_text(const std::string& job_path, const std::string& target, const std::string& events,
                          const Fidelity& f, const TimeFidelity& tf) {
    std::string s =
        strf("fidelity of %s replayed on %s (replay trace %s):\n", job_path.c_str(), target.c_str(), events.c_str());
    s += strf("                   whole run                     worst of %s (by commands)\n",
              count_noun(tf.windows, "window").c_str());
    s +=
        strf("  size TV          read %.4f  write %.4f      %.4f\n", f.size_tv_read, f.size_tv_write, tf.worst_size_tv);
    s += strf("  read share       %.1f -> %.1f %%, error %.2f    %.2f points\n", f.rwmix_orig, f.rwmix_replay,
              f.rwmix_err, tf.worst_read_err);
    s += strf("  queue depth TV   %.4f                        %.4f\n", f.qd_tv, tf.worst_depth_tv);
    s += strf("  sequential share %.1f -> %.1f %%, error %.2f    %.2f points\n", f.seq_orig, f.seq_replay, f.seq_err,
              tf.worst_seq_err);
    s += strf("  phases           %zu -> %zu, %s, volume error <= %.2f %%", tf.phases.orig, tf.phases.replay,
              tf.phases.in_order ? "in order" : "NOT matching", tf.worst_volume_err);
    if (tf.phases.replay_detected != tf.phases.replay)  // the replay's own detection, before judging it
        s += strf(" (the replay's detector alone: %zu)", tf.phases.replay_detected);
    s += "\n";
    s += strf("  D2C replay/orig  p50 %.2f  p99 %.2f\n", f.d2c_p50_ratio, f.d2c_p99_ratio);
    s += "fidelity: " + summary_line(f, tf) + "\n";
    return s;
}

// verify.queue: what the trace recorded and each setting on the target (docs/distill.md, "Queue settings the file
// level copies"); "" is null (not recorded, no such setting, not read, reproduced).
nlohmann::json queue_json(const QueueSettings& recorded, const std::vector<QueueSettingResult>& results) {
    auto str = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
    nlohmann::json settings = nlohmann::json::array(), missed = nlohmann::json::array();
    for (const auto& q : results) {
        settings.push_back({{"name", q.name},
                            {"traced", str(q.traced)},
                            {"target_before", str(q.target_before)},
                            {"applied", str(q.applied)},
                            {"after_replay", str(q.after_replay)},
                            {"error", str(q.error)}});
        if (!q.reproduced()) missed.push_back(q.name);
    }
    return {{"recorded", queue_settings_json(recorded)}, {"settings", settings}, {"not_reproduced", missed}};
}

// The console's lines on the queue settings the replay ran with, each not reproduced named with what it means.
std::string queue_text(const std::string& target, const std::vector<QueueSettingResult>& results) {
    if (results.empty()) return "queue settings: not recorded in the trace: " + target + " ran with its own\n";
    std::string s = "queue settings on " + target + " (traced -> target's own -> during the replay; its own written " +
                    "back after):\n";
    size_t missed = 0;
    for (const auto& q : results) {
        const std::string during = q.after_replay.empty() ? q.applied : q.after_replay;
        s += strf("  %-15s %s -> %s -> %s\n", q.name.c_str(), q.traced.c_str(),
                  q.target_before.empty() ? "(none)" : q.target_before.c_str(),
                  during.empty() ? "(none)" : during.c_str());
        if (!q.reproduced()) {
            s += "    not reproduced: " + q.error + "\n";
            ++missed;
        }
    }
    s += missed ? "queue settings: " + std::to_string(missed) + " of " + std::to_string(results.size()) +
                      " not reproduced on the target (above): the scores compare those settings too\n"
                : "queue settings: all " + std::to_string(results.size()) + " reproduced on the target\n";
    return s;
}

// One distillation in progress: the options, what was read, and the result being filled.
struct Run {
    const DistillOptions& a;
    DistillResult& r;
    bool multi = false;
    LevelChoice choice;
    FileJob file_job;
    bool json_stdout() const { return a.json_out == "-"; }

    Stopped stopped(const char* what) const {
        const int sig = int(*a.stop);
        return Stopped(sig, "distill: stopped by signal " + std::to_string(sig) + " while " + what + " " +
                                (a.events.empty() ? a.trace_json : a.events));
    }
    void poll(const char* what) const {
        if (a.stop && *a.stop) throw stopped(what);
    }

    // The trace's devices and their profiles (a stop while a large trace is read ends it with Stopped).
    void load() {
        if (!a.events.empty()) {
            if (!a.loaded.empty()) {
                r.traces = a.loaded;
            } else {
                try {
                    r.traces = load_all_events(a.events, EventFilter{a.dev, a.pid, a.comm}, a.stop);
                } catch (const Stopped&) {
                    throw stopped("loading");
                }
            }
            for (const auto& ev : r.traces) r.profiles.push_back(profile_events(ev));
            if (!r.traces.front().has_summary)
                put(a.diag, "kvio distill: warning: " + a.events +
                                " has no summary record: the trace was cut off, its last commands are missing and its "
                                "loss check could not be made\n");
        } else {
            if (a.pid || !a.comm.empty())
                throw UsageError(
                    "--pid/--comm need --events (kvio.trace/1 histograms are per device, not per process)");
            r.profiles.push_back(profile_trace_json(a.trace_json, a.dev));
        }
    }

    // Each device's target, checked against what the outputs need.
    void map() {
        const auto& ps = r.profiles;
        r.targets = map_targets(a.filenames, ps);
        if (!a.verify) warn_shared_targets(r.targets, ps, a.diag);  // --verify refuses one disk for two devices
        multi = ps.size() > 1;
        if (multi && !a.iolog.empty())
            throw Error("distill --iolog: the trace has " + std::to_string(ps.size()) +
                        " devices; an iolog replays one: choose it with --dev");
        if (verify_device() || !a.iolog.empty())
            for (size_t i = 0; i < ps.size(); ++i)
                if (r.targets[i].empty())
                    throw Error(std::string("distill ") + (a.verify ? "--verify" : "--iolog") + ": device " +
                                ps[i].dev + " (" + ps[i].disk + ") has no target: give --filename " + ps[i].dev +
                                "=PATH for it");
    }

    // --verify of the device-level job: chosen, and a --filename given (or no --target: then map() asks for one).
    bool verify_device() const { return a.verify && choice.device && (!a.filenames.empty() || a.target.empty()); }
    bool verify_file() const { return a.verify && choice.file && !a.target.empty(); }

    // The level (docs/distill.md, "Two levels"), and what --verify can do with it.
    void choose() {
        choice = choose_level(a, r.profiles);
        r.level = choice.level_name();
        r.level_reason = choice.reason;
        // Said when the file level was chosen, or when auto fell back although the trace has syscall records.
        if (choice.file || (a.level == DistillLevel::Auto && choice.syscalls)) {
            const std::string note = "level " + r.level + ": " + r.level_reason;
            put(a.diag, "kvio distill: note: " + note + "\n");
            r.notes.push_back(note);
        }
        if (a.verify && !verify_device() && !verify_file())
            throw Error(choice.file ? "distill --verify: the file level's replay makes a filesystem on a block device: "
                                      "give --target DEV"
                                    : "distill --verify: the level is device (" + choice.reason +
                                          "): its replay needs --filename TARGET");
        if (choice.file && a.out.empty() && !a.verify)
            throw Error("distill --level " + r.level +
                        ": the file-level job reads iologs written beside it: give -o FILE");
    }

    // Where the file-level job goes: -o (file level), or -o's name with ".file.fio" (both levels); "" with no -o.
    std::string file_job_path() const {
        if (a.out.empty()) return "";
        if (!choice.device) return a.out;
        std::string stem = a.out;
        for (const char* ext : {".fio", ".ini"})
            if (stem.size() > std::strlen(ext) && stem.ends_with(ext)) stem.resize(stem.size() - std::strlen(ext));
        return stem + ".file.fio";
    }

    // The file-level job (its iologs are named after the job's path, absolute: fio opens them from its cwd).
    void derive_file() {
        FileJobOptions fo;
        fo.job_name = a.job_name;
        fo.directory = a.directory.empty() ? "/mnt/kvio-file" : a.directory;
        fo.header = choice.header_lines(r.profiles[choice.dev_index]);
        for (const auto& l : queue_settings_header(traced_queue())) fo.header.push_back(l);
        if (a.directory.empty())
            fo.header.push_back("directory: /mnt/kvio-file (no --directory given): the iologs name files there");
        r.file_job_path = file_job_path();
        if (!r.file_job_path.empty()) {
            std::string stem = std::filesystem::absolute(r.file_job_path).string();
            if (stem.ends_with(".fio")) stem.resize(stem.size() - 4);
            fo.iolog_prefix = stem + ".";
        }
        if (r.file_job_path.empty()) fo.iolog_prefix = "/tmp/kvio-file-job.";  // printed only (--verify makes its own)
        file_job = make_file_job(choice.pattern, fo);
        r.file_job_text = file_job.text;
    }

    // The job: every device's phases and trim runs (make_job), or one section from histograms (make_fio_job).
    void derive() {
        if (choice.file) derive_file();
        if (!choice.device) return poll("distilling");
        std::vector<DeviceJobInput> inputs(r.profiles.size());
        for (size_t i = 0; i < r.profiles.size(); ++i) {
            JobOptions& jo = inputs[i].opt;
            jo.filename = r.targets[i];
            jo.target_is_block = !r.targets[i].empty() && is_block_device(r.targets[i]);
            jo.mode = a.mode == JobMode::Time || a.runtime_s ? JobMode::Time : JobMode::Count;
            jo.runtime_s = a.runtime_s;
            jo.job_name = a.job_name;
            device_tags(r.profiles[i], a.nr_requests, jo);
            inputs[i].whole = &r.profiles[i];
            if (!r.traces.empty()) inputs[i].trace = &r.traces[i];
        }
        PhaseOptions po;
        po.max_phases = a.max_phases;
        poll("loading");
        r.job = a.events.empty() ? make_fio_job(r.profiles[0], inputs[0].opt)
                                 : make_job(inputs, inputs[0].opt, po, &r.plans);
        poll("distilling");
    }

    // The job file and the iolog. The iolog path is checked before either is written: a bad --iolog leaves no job.
    void write_outputs() {
        if (!a.iolog.empty()) {
            if (a.events.empty()) throw UsageError("--iolog: needs --events (histograms hold no individual commands)");
            probe_writable(a.iolog);  // a bad path fails before the job is written
        }
        if (!a.out.empty() && choice.device) write_file(a.out, r.job.text);
        if (choice.file && !r.file_job_path.empty()) {
            for (const auto& [path, text] : file_job.iologs) write_file(path, text);
            write_file(r.file_job_path, file_job.text);
        }
        if (!a.iolog.empty()) {
            // Written as IOLOG.tmp-PID and renamed when complete: a full disk or a kill leaves no cut log.
            std::ostringstream iolog;
            r.iolog_ios = write_iolog(iolog, r.traces[0].cmds, r.targets[0]);
            write_file(a.iolog, iolog.str());
        }
    }

    // The kvio.distill/1 document, without --verify's part; the notes go to `diag` as they are found.
    void summarize() {
        const Profile& p = r.profiles[0];
        const auto& plans = r.plans;
        nlohmann::json& j = r.summary;
        if (!choice.device) {  // the file level alone: no device job, its phases or notes
            j = {{"schema", "kvio.distill/1"},
                 {"source", p.source},
                 {"format", p.format},
                 {"dev", p.dev},
                 {"disk", p.disk},
                 {"level", choice.to_json()}};
            file_summary();
            return;
        }
        j = {{"schema", "kvio.distill/1"},
             {"source", p.source},
             {"format", p.format},
             {"dev", p.dev},
             {"disk", p.disk},
             {"cmds", {{"read", p.read.cmds}, {"write", p.write.cmds}, {"other", p.other_cmds}}}};
        if (multi) {
            j["dev"] = j["disk"] = nullptr;
            j.erase("cmds");
        }
        j["job"] = job_json(r.job);
        j["not_inferred"] = r.job.not_inferred;
        if (!a.events.empty() && !multi && plans[0].pieces.size() == 1) j["phases"] = phases_json(plans[0].pieces[0]);
        if (!a.events.empty() && (multi || plans[0].pieces.size() != 1 || !plans[0].trims.empty()))
            j["devices"] = devices_json(plans);
        if (!a.out.empty()) j["job_file"] = a.out;
        for (const auto& d : plans)
            for (const auto& pc : d.pieces)
                if (!pc.note.empty()) {
                    const std::string note = multi ? d.dev + ": " + pc.note : pc.note;
                    put(a.diag, "kvio distill: note: " + note + "\n");
                    j["notes"].push_back(note);
                    r.notes.push_back(note);
                }
        if (!a.iolog.empty()) j["iolog"] = {{"file", a.iolog}, {"ios", r.iolog_ios}};
        if (a.level != DistillLevel::Device) j["level"] = choice.to_json();
        if (a.level == DistillLevel::Auto && choice.syscalls)
            j["notes"].push_back("level " + r.level + ": " + r.level_reason);
        if (choice.file) file_summary();
    }

    void file_summary() {
        nlohmann::json f = {{"sections", file_job.replay_sections}, {"needs_bytes", file_job.needs_bytes}};
        f["layout_section"] =
            file_job.layout_section.empty() ? nlohmann::json(nullptr) : nlohmann::json(file_job.layout_section);
        f["job_file"] = r.file_job_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.file_job_path);
        for (const auto& [path, text] : file_job.iologs)
            if (!r.file_job_path.empty()) f["iologs"].push_back(path);
        r.summary["file_job"] = f;
    }

    void write_json() const {
        if (a.json_out.empty()) return;
        if (json_stdout())
            put(a.print, r.summary.dump(2) + "\n");
        else
            write_json_file(a.json_out, r.summary);
    }

    // --verify: the job replayed under `kvio trace` on the targets, scored device by device.
    void verify() {
        const auto& ps = r.profiles;
        nlohmann::json& j = r.summary;
        std::optional<VerifyDir> dir;
        if (a.out.empty()) dir.emplace(a.keep_files, a.diag);
        const std::string job_path = dir ? dir->path() + "/job.ini" : a.out;
        if (dir) write_file(job_path, r.job.text);
        VerifyOptions vo;
        vo.kvio_exe = a.kvio_exe;
        vo.job_path = job_path;
        vo.events_out = job_path + ".replay.jsonl";
        // What the output names: a file that stays, or null when the private directory is removed at the end.
        const nlohmann::json events_named =
            !dir || dir->kept() ? nlohmann::json(vo.events_out) : nlohmann::json(nullptr);
        std::vector<VerifyTarget> vt;
        vo.force = a.force;
        vo.huge_pages = huge_pages_needed(r.job);
        for (size_t i = 0; i < ps.size(); ++i)
            vt.push_back({&ps[i], r.targets[i], multi ? r.plans[i].needs_bytes : r.job.needs_bytes(),
                          recorded_queue_settings(a.events, ps[i].dev)});
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
            TimeFidelity tf = score_over_time(data_cmds(r.traces[i].cmds), data_cmds(rs[i].trace.cmds));
            nlohmann::json v = to_json(f);
            v["time_resolved"] = to_json(tf);
            v["replay_events"] = events_named;
            v["summary"] = summary_line(f, tf);
            const nlohmann::json kinds = trim_flush_fidelity(ps[i], rs[i].profile);
            v.update(kinds);
            v["queue"] = queue_json(vt[i].queue, rs[i].queue);
            worst_tv = std::max({worst_tv, f.size_tv_read, f.size_tv_write, tf.worst_size_tv});
            if (multi) {
                v["dev"] = ps[i].dev;
                v["disk"] = ps[i].disk;
                v["target"] = r.targets[i];
            }
            per_dev.push_back(v);
            if (!json_stdout()) {
                if (multi) put(a.print, "device " + ps[i].dev + " (" + ps[i].disk + "):\n");
                put(a.print,
                    fidelity_text(dir && !dir->kept() ? "the job" : job_path, r.targets[i],
                                  events_named.is_null() ? "removed at the end: --keep-files keeps it" : vo.events_out,
                                  f, tf));
                if (ps[i].discard_cmds || rs[i].profile.discard_cmds)
                    put(a.print,
                        strf("  discards         %lu -> %lu, size TV %.4f\n", (unsigned long)ps[i].discard_cmds,
                             (unsigned long)rs[i].profile.discard_cmds, v["discards"]["size_tv"].get<double>()));
                put(a.print, queue_text(r.targets[i], rs[i].queue));
            }
        }
        j["verify"] = multi ? nlohmann::json{{"devices", per_dev}, {"replay_events", events_named}} : per_dev[0];
        if (a.max_tv >= 0) {
            r.missed = worst_tv > a.max_tv;
            j["verify"]["max_tv"] = {{"limit", a.max_tv}, {"worst", worst_tv}, {"met", !r.missed}};
        }
        if (!json_stdout() && a.max_tv >= 0)
            put(a.print,
                strf("--max-tv %.4f: worst size TV %.4f, %s\n", a.max_tv, worst_tv, r.missed ? "MISSED" : "met"));
    }

    // The traced device's queue settings as the trace recorded them (empty: not recorded).
    QueueSettings traced_queue() const {
        return a.events.empty() ? QueueSettings{} : recorded_queue_settings(a.events, r.profiles[choice.dev_index].dev);
    }

    // --verify of the file-level job: a filesystem made on --target, the streams run there under `kvio trace`,
    // scored against the traced device's commands as the device level's replay is.
    void verify_file_level() {
        const size_t i = choice.dev_index;
        const Profile& orig = r.profiles[i];
        VerifyDir dir(a.keep_files, a.diag);
        FileVerifyOptions fo;
        fo.kvio_exe = a.kvio_exe;
        fo.target = a.target;
        fo.fs_type = a.fs_type.empty() ? "ext4" : a.fs_type;
        fo.work_dir = dir.path();
        fo.force = a.force;
        fo.job.job_name = a.job_name;
        fo.job.header = choice.header_lines(orig);
        fo.queue = traced_queue();
        for (const auto& l : queue_settings_header(fo.queue)) fo.job.header.push_back(l);
        nlohmann::json& j = r.summary;
        const char* key = choice.device ? "verify_file" : "verify";
        FileReplay fr;
        try {
            fr = run_file_replay(orig, choice.pattern, fo);
        } catch (const Stopped& e) {
            j["stopped_by_signal"] = e.signo;
            j[key] = {{"stopped_by_signal", e.signo}};
            write_json();
            throw;
        } catch (const Error&) {
            if (std::filesystem::exists(dir.path() + "/replay.log") ||
                std::filesystem::exists(dir.path() + "/mkfs.log"))
                dir.keep_after_failure();
            throw;
        }
        const nlohmann::json events_named = dir.kept() ? nlohmann::json(fr.events_out) : nlohmann::json(nullptr);
        Fidelity f = score(orig, fr.replay.profile);
        TimeFidelity tf = score_over_time(data_cmds(r.traces[i].cmds), data_cmds(fr.replay.trace.cmds));
        nlohmann::json v = to_json(f);
        v["time_resolved"] = to_json(tf);
        v["replay_events"] = events_named;
        v["summary"] = summary_line(f, tf);
        v["level"] = "file";
        v["target"] = a.target;
        v["fs"] = fo.fs_type;
        v["queue"] = queue_json(fo.queue, fr.queue);
        const auto streams = score_streams(r.traces[i], choice.pattern, fr.replay.trace, fr.stream_pids);
        v["streams"] = streams_json(streams);
        j[key] = v;
        double worst_tv = std::max({f.size_tv_read, f.size_tv_write, tf.worst_size_tv});
        if (a.max_tv >= 0) {
            r.missed = r.missed || worst_tv > a.max_tv;
            j[key]["max_tv"] = {{"limit", a.max_tv}, {"worst", worst_tv}, {"met", worst_tv <= a.max_tv}};
        }
        if (json_stdout()) return;
        put(a.print, "file level, on " + fo.fs_type + " made on " + a.target + ":\n");
        put(a.print,
            fidelity_text(dir.kept() ? fr.job_path : "the file-level job", a.target,
                          events_named.is_null() ? "removed at the end: --keep-files keeps it" : fr.events_out, f, tf));
        put(a.print, "per stream (traced pid/tid, commands read/write traced -> replayed):\n" + streams_text(streams));
        put(a.print, queue_text(a.target, fr.queue));
        if (a.max_tv >= 0)
            put(a.print, strf("--max-tv %.4f: worst size TV %.4f, %s\n", a.max_tv, worst_tv,
                              worst_tv > a.max_tv ? "MISSED" : "met"));
    }

    // The "wrote" lines of the job file and the iolog.
    std::string wrote_text() const {
        std::string s;
        const auto& plans = r.plans;
        if (!r.file_job_path.empty())
            s += "wrote " + r.file_job_path + ": the file-level job, " +
                 count_noun(file_job.replay_sections.size(), "thread section") +
                 (file_job.layout_section.empty() ? "" : " after a layout section") + ", " +
                 count_noun(file_job.iologs.size(), "iolog") + " beside it\n";
        if (!a.out.empty() && choice.device) {
            s += "wrote " + a.out + ":";
            if (!r.job.sections.empty()) {
                size_t phases = 0, trims = 0;
                for (const auto& d : plans) {
                    for (const auto& pc : d.pieces) phases += pc.phases.size();
                    trims += d.trims.size();
                }
                s += " " + count_noun(r.job.sections.size(), "section") + " (" + count_noun(phases, "phase");
                if (trims) s += ", " + count_noun(trims, "trim phase");
                if (multi) s += ", " + count_noun(plans.size(), "device");
                s += ")";
            }
            for (const char* k : {"rw", "rwmixread", "bssplit", "iodepth", "numjobs", "thinktime", "rate_process"})
                if (!r.job.get(k).empty()) s += std::string(" ") + k + "=" + r.job.get(k);
            s += "\n";
        }
        if (!a.iolog.empty())
            s += "wrote " + a.iolog + ": " + count_noun(r.iolog_ios, "I/O", "I/Os") + " (fio iolog v3)\n";
        return s;
    }
};

}  // namespace

DistillResult distill(const DistillOptions& o) {
    check_options(o);
    DistillResult r;
    Run run{o, r};
    probe_writable(o.json_out);
    run.load();
    run.choose();
    if (run.choice.device) run.map();
    run.derive();
    if (o.on_derived) o.on_derived();
    run.write_outputs();
    run.summarize();
    // Without -o the job is printed, --verify or not (before --verify's fidelity table); --json - replaces both.
    if (!run.json_stdout() && o.out.empty() && o.print)
        *o.print << (run.choice.device ? r.job.text : r.file_job_text) << std::flush;
    if (run.verify_device()) run.verify();
    if (run.verify_file()) run.verify_file_level();
    run.write_json();
    if (!run.json_stdout()) put(o.print, run.wrote_text());
    return r;
}

}  // namespace kvio::distiller
