// `kvio distill` as a library call: trace -> profile -> fio job (+ exact iolog), the closed-loop fidelity check
// (--verify) and the kvio.distill/1 summary. `kvio distill`, `kvio run` and `kvio simulate --enable-latency-tracing`
// all derive their job here, so one trace gives one job whoever asks. Rules: docs/distill.md.
#pragma once
#include <csignal>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_trace.h"
#include "distiller/fio_job.h"
#include "distiller/multi_job.h"
#include "distiller/profile.h"

namespace kvio::distiller {

/// Which job `kvio distill` writes (docs/distill.md, "Two levels"): the device's commands (Device, today's job), the
/// application's file calls (File), both, or the one the trace calls for (Auto: File when most of the traced device's
/// bytes came from buffered calls with file identity on its filesystem).
enum class DistillLevel { Auto, Device, File, Both };

/// What `kvio distill` is asked (its flags, one field each), plus what a library caller decides.
struct DistillOptions {
    std::string events;                  ///< --events: kvio.events/1 JSONL or a kvio.events.bin/1 capture (preferred)
    std::string trace_json;              ///< --trace-json: kvio.trace/1 histograms (used without events)
    std::string dev;                     ///< --dev: "MAJ:MIN" or name; "" = every device of the trace
    uint32_t pid = 0;                    ///< --pid: keep only this submitter's commands (0: all)
    std::string comm;                    ///< --comm: keep only commands of tasks with this comm ("" : all)
    std::string out;                     ///< -o: the job file; "" = the job is printed on `print`
    std::vector<std::string> filenames;  ///< --filename: PATH, or DEV=PATH per device (DEV: MAJ:MIN or name)
    JobMode mode = JobMode::Count;       ///< --mode (--runtime implies Time)
    uint32_t runtime_s = 0;              ///< --runtime: the whole job's seconds (0: the trace span)
    uint32_t max_phases = 16;            ///< --max-phases (1: one flat section)
    uint32_t nr_requests = 0;  ///< --nr-requests: the source device's tags (0: the trace's record, else sysfs)
    std::string iolog;         ///< --iolog: also an exact fio iolog v3 here ("" : none)
    std::string json_out;      ///< --json: the kvio.distill/1 summary here; "-" = on `print`, instead of the text
    bool verify = false;       ///< --verify: replay the job under `kvio trace` on the target and score it
    bool force = false;        ///< --force: --verify may write over data in its target's first MiB
    bool keep_files = false;   ///< --keep-files: --verify without `out` keeps its private directory
    double max_tv = -1;        ///< --max-tv: the replay's worst size TV allowed (< 0: no limit)
    DistillLevel level = DistillLevel::Device;  ///< --level (the CLI's default is Auto)
    std::string directory;  ///< --directory: where a file-level job's files live ("" : /mnt/kvio-file, said so)
    std::string target;     ///< --target: the block device --verify makes a filesystem on for a file-level job
    std::string fs_type;    ///< --fs: that filesystem ("" : ext4)
    std::string job_name = "kvio-distilled";  ///< the job's section name (prefix of a phased job's sections)
    std::string kvio_exe = "/proc/self/exe";  ///< the kvio binary --verify runs `trace` with

    /// Already-loaded device traces (kvio run has read the events to size its verify device): used instead of
    /// reading `events`, which then only names them. Each sorted by issue, one per device; none: `events` is read.
    std::vector<EventTrace> loaded;
    /// Polled while the trace is read and the job derived: non-zero (a signal number) ends the call with Stopped.
    const volatile sig_atomic_t* stop = nullptr;
    /// Called once the job is derived, before any output is written (the CLI ends its stop-on-signal scope there).
    std::function<void()> on_derived;
    /// What `kvio distill` prints on stdout, as it goes (the job, --verify's fidelity table, the "wrote" lines, or
    /// the JSON with json_out "-"); null: nothing is printed. The job is printed before --verify's replay starts.
    std::ostream* print = nullptr;
    /// Its stderr lines (warnings, notes, a kept --verify directory); null: not printed (they are in the result).
    std::ostream* diag = nullptr;
};

/// What was derived and written: the job, what it was built from, the summary `--json` writes.
struct DistillResult {
    FioJob job;                        ///< the job (its text is what -o holds)
    std::vector<Profile> profiles;     ///< each device's whole-run profile, in the trace's device order
    std::vector<EventTrace> traces;    ///< each device's commands (empty for trace_json input)
    std::vector<DevicePlan> plans;     ///< each device's phases and trim runs (empty for trace_json input)
    std::vector<std::string> targets;  ///< each device's --filename target ("" when none)
    std::vector<std::string> notes;    ///< the "kvio distill: note:" lines (device-prefixed with several devices)
    size_t iolog_ios = 0;              ///< lines written to the iolog
    nlohmann::json summary;            ///< the kvio.distill/1 document (--json)
    bool missed = false;               ///< --max-tv was given and the replay's worst size TV exceeds it
    std::string level;                 ///< the level chosen: "device", "file" or "both"
    std::string level_reason;          ///< why (one line, also in the job's header and the summary)
    std::string file_job_text;         ///< the file-level job ("" when the level has none)
    std::string file_job_path;         ///< where it was written ("" : not written)
};

/// Runs all of `kvio distill`: checks the options (UsageError for a bad combination, before anything is read or
/// written; --verify needs root), reads the events (or the histograms), derives one job for all devices (make_job;
/// make_fio_job for histograms), writes `out`, `iolog` and `json_out`, runs and scores --verify. Throws kvio::Error
/// for unreadable or implausible traces and unwritable outputs, Stopped when `stop` is raised or --verify's replay
/// is ended by a signal (the JSON, when asked, is written first, marked "stopped_by_signal").
DistillResult distill(const DistillOptions& o);

}  // namespace kvio::distiller
