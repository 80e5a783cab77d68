// One target of `kvio drives`: what it is, the checks before anything is written, its ceiling probe and one traced
// run of the job on it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drives/figures.h"
#include "drives/job_text.h"
#include "drives/sim_workload.h"

namespace kvio::drives {

/// The result of one run of the job on one target.
struct RunResult {
    int round = 0;
    std::string mode;  ///< "closed" | "trace" (a fio job) | "simulate" (kvio simulate)
    bool ok = false;
    std::string error;                ///< why not ok
    FioRun fio;                       ///< a fio run's figures
    SimFigures sim;                   ///< a simulate run's figures
    DeviceFigures dev;                ///< present only when traced
    std::string trace_error;          ///< why a traced run has no device figures (the fio figures stand)
    std::string files;                ///< path prefix of this run's files (.job.fio, .fio.json, .trace.json, .log)
    double start_ms = 0, end_ms = 0;  ///< the workload process's start and end, ms since the epoch (system clock)
};

/// A target and everything measured on it.
struct Target {
    DriveSpec spec;
    TargetField field = TargetField::Filename;
    std::string disk;             ///< whole-disk name traced for a local target; empty: not traceable
    std::string no_trace_reason;  ///< why `disk` is empty
    bool created_file = false;    ///< a file target that did not exist before (removed at the end)
    nlohmann::json info;          ///< kind, model/serial/firmware, limits (sysfs)
    nlohmann::json ceiling;       ///< the probe's figures, or {"error": ...}
    std::vector<RunResult> runs;
    std::string failed;       ///< the first failure's reason; empty while all went well
    std::string interrupted;  ///< why a stop signal left it short of every round; empty when not
};

/// Inspects a local target and applies the rules of gen and replay (workload::check_device_safe): a mounted or
/// read-only device, or one holding data in its first MiB without `force`, is refused with kvio::Error. A block
/// device, file or directory; a file or directory on a filesystem with no block device (tmpfs) runs untraced.
Target prepare_local_target(const DriveSpec& spec, bool force);
/// A remote target: only what the command line says (the remote fio refuses what it cannot open).
Target prepare_remote_target(const DriveSpec& spec);

/// How to run fio and kvio for the targets.
struct RunEnv {
    std::string fio;
    std::string kvio_exe;  ///< resolved (not /proc/self/exe)
    std::string dir;       ///< the run directory
    double probe_seconds = 1;
    uint64_t probe_bytes = 64ull << 20;
    double remote_timeout_s = 0;
    std::vector<std::string> sim_words;  ///< `--simulate`'s flags as words (sim_workload.h)
    bool force = false;                  ///< passed on to kvio simulate for a block device
    bool keep_thinktime = false;         ///< the closed loop keeps the job's thinktime (Pacing::ClosedKeepThinktime)
    bool trace_every_command = false;    ///< the tracer runs without kTraceDuty
};

/// Bytes at the start of a block device the ceiling probe leaves alone: the first MiB, where the safety check looks
/// for data (workload::check_device_safe), so the probe's own writes never make the next run refuse the drive.
inline constexpr uint64_t kProbeSkip = 1ull << 20;

/// The three ceiling probes, one after another on each target and on every target of `ts` at once (a lab's hosts are
/// probed together; give local targets one at a time, they would share this host): sequential read and write at
/// 1 MiB, depth 32, and 4 KiB random reads at depth 64 (libaio, O_DIRECT), each `probe_seconds` over `probe_bytes`
/// (a block device: from kProbeSkip, capped at its end). Sets each t.ceiling {"seq_read_mb_s", "seq_write_mb_s",
/// "rand_read_4k_iops", "seconds", "bytes", "offset"} or {"error": ...}; no probe starts after a stop signal. A
/// directory target's probe file is removed on every path. `ts` are all remote or all local.
void probe_ceilings(const std::vector<Target*>& ts, const RunEnv& env);

/// The job text rewritten for `t` and `mode` (job_for_target; the closed loop's pacing from env.keep_thinktime),
/// with a bandwidth log to `bw_log` when not empty.
std::string job_text_for(const Target& t, const std::string& job, const std::string& mode, const RunEnv& env,
                         const std::string& bw_log = "");

/// The tracer reads the queue depth at 1 issue in this many (`kvio trace --qd-sample`, each sample counted this
/// many times: the mean depth drives reports is kept; docs/drives.md "What the tracer costs"). Reading every
/// command's depth also reads the completing CPU's in-flight counter, ~40-95 ns per command (docs/performance.md
/// "Two in-flight counters"); a direction with commands but no sampled dispatch has depth 0: unknown.
inline constexpr int kQdSample = 16;
/// Where the tracer's depth comes from the kernel's own per-disk finished counts (trace/probe.h
/// kernel_finished_counts, the disk's queue/iostats on), it times 1 request in this many instead (`kvio trace
/// --d2c-sample`: D2C, Q2D and depth of those, each counted this many times; commands, bytes and sizes exact), about
/// half the BPF time per command (docs/performance.md "kvio drives: where the cost goes").
inline constexpr int kD2cSample = 16;
/// The tracer's block programs are attached 0.5 s in every 5 s (`kvio trace --duty`, trace/duty.h): on a CPU-bound
/// device their time per command is throughput lost, so paid a tenth of the time it costs a tenth (docs/drives.md
/// "What the tracer costs"). The D2C, Q2D and depth histograms come from the windows; commands, bytes and the mean
/// depth from the disk's stat file over the whole run. 0.5/5, not 1/10: a run of a few seconds still has ~10 %
/// traced. --trace-every-command turns it off.
inline constexpr const char* kTraceDuty = "0.5/5";
/// The sampling flags of drives' tracer on `disk` (a name under /sys/block): `--d2c-sample kD2cSample` where its
/// depth is exact without per-request state, else `--qd-sample kQdSample`.
std::vector<std::string> tracer_sampling(const std::string& disk);

/// One run of `job` on a local target, to its end, fio writing a bandwidth log per job to r.files + "_bw.N.log": `kvio
/// trace -d DISK --block-only SAMPLING --json` (tracer_sampling) started first (waited for until attached), then fio,
/// then the trace ended with SIGTERM (which writes its JSON). The whole disk is traced, not fio's processes: a
/// throttled bio is issued by the kernel's throttle worker, not by fio. Untraceable targets: fio alone. Returns fio's
/// wait status; a trace that failed is recorded in r.error by finish_run.
int run_local(const Target& t, const std::string& job, RunResult& r, const RunEnv& env);
/// One run of the serving workload on a local target, traced as run_local traces fio: `kvio simulate WORDS
/// --cache-dir C --output FILES.sim.json` with C the block device itself or DIR/kvio-drives-sim under a directory
/// target (removed afterwards by clean_local_target), `--force` when kvio drives has it. Returns simulate's status.
int run_local_simulate(const Target& t, RunResult& r, const RunEnv& env);
/// Starts one run of `job` on a remote target through `fio --client=HOST,PORT`.
pid_t start_remote_run(const Target& t, const std::string& job, RunResult& r, const RunEnv& env);
/// Reads fio's JSON (kvio simulate's results for mode "simulate"), a local fio run's bandwidth logs
/// (FILES_bw.N.log, parse_bw_logs) and the trace of an ended run with wait status `status`; sets r.ok or r.error.
void finish_run(const Target& t, RunResult& r, int status, bool timed_out);
/// Removes what runs left on a local target: every entry new in a directory target (files fio laid out, kvio
/// simulate's cache directory), a file target kvio drives created.
void clean_local_target(const Target& t, const std::vector<std::string>& dir_before);
/// The entries of a directory target now (for clean_local_target); empty for other targets.
std::vector<std::string> dir_entries(const Target& t);

}  // namespace kvio::drives
