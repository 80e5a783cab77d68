// The MLPerf Storage KV-cache CLOSED protocol as data and arithmetic (docs/mlperf-benchmark.md, "The CLOSED rules"):
// the three Options' immutable parameters, the sequence locks (seed 42, 3 trials, 90 s between Options), which
// `kvio simulate` flags CLOSED refuses and under which rule, the results layout
// (<results>/option_<O>/trial_<T>/rank_<N>/kvcache_results_*.json) and the per-Option aggregation of
// kvcache_run_summary.json. Shared by the protocol run (closed_run.h) and the checker (check.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"

namespace kvio::serving {

/// One row of the rules' Table KVCache-1: what every client (rank) of an Option runs.
struct ClosedOption {
    int option;                     ///< 1, 2, 3
    const char* name;               ///< "Max Storage Stress", ...
    const char* model;              ///< --model
    int64_t num_users;              ///< --num-users, per client
    int64_t duration_s;             ///< --duration, s (300)
    double gpu_mem_gb;              ///< --gpu-mem-gb, GiB (0)
    double cpu_mem_gb;              ///< --cpu-mem-gb, GiB (0 or 4)
    int64_t max_concurrent_allocs;  ///< --max-concurrent-allocs (16 or 4)
    const char* generation_mode;    ///< --generation-mode ("none")
};

/// The sequence locks (rule kvcacheClosedSequenceLocks): seed base 42 (a rank's seed is 42 + rank, as the
/// benchmark's MPI wrapper sets it), 3 trials per Option, 90 s between Options.
inline constexpr int64_t kClosedSeed = 42;
inline constexpr int kClosedTrials = 3;
inline constexpr double kClosedPauseS = 90;

/// Table KVCache-1, Options 1 to 3 in order.
const std::vector<ClosedOption>& closed_options();
/// The row of Option `o`; throws kvio::Error for another number.
const ClosedOption& closed_option(int o);

/// `base` with Option `o`'s parameters, seed 42, no --config and no autoscaling; duration `duration_s`.
SimConfig closed_option_config(const SimConfig& base, const ClosedOption& o, int64_t duration_s);

/// The refusals for a CLOSED run given these `kvio simulate` flags (long names as typed, "--config") and seed: one
/// sentence per flag naming it and the rule that forbids it (kvcacheClosedSequenceLocks for --config and a seed
/// other than 42, kvcacheAutoscalingProhibited for the autoscaler's flags, kvcacheFixedWorkloadPerOption for an
/// Option parameter, kvcacheClosedImmutable for anything else). Allowed: --cache-dir, --num-clients, --mpi, --quiet,
/// --progress-interval, --log-level, --seed 42. Empty when the command line is CLOSED.
std::vector<std::string> closed_refusals(const std::vector<std::string>& given_flags, std::optional<int64_t> seed);

/// The CLOSED protocol as `kvio simulate --help` says it, built from this table and closed_refusals' allowed flags:
/// the Options' parameters, trials, seed and pause, the directories it needs, what is allowed and refused, the test
/// flags, and its exit statuses. Lines of at most ~120 characters, "\n" between them, none at the end.
std::string closed_protocol_help();

/// The parameters an Option's rank must have recorded, as the keys of kvio's results (kvio.config.flags):
/// {model, num_users, duration, gpu_mem_gb, cpu_mem_gb, max_concurrent_allocs, generation_mode}.
nlohmann::ordered_json closed_option_parameters(const ClosedOption& o, int64_t duration_s);

/// "option_<O>/trial_<T>/rank_<N>" (trials count from 0, as mlpstorage names them).
std::string rank_dir_name(int option, int trial, int rank);
/// The rank results files of `rank_dir`: its kvcache_results_*.json, sorted; empty when none (or no directory).
std::vector<std::string> rank_result_files(const std::string& rank_dir);

/// One Option's aggregate over its trials' rank files, as mlpstorage computes options[<O>] of
/// kvcache_run_summary.json (rules kvcacheAggregateBandwidth, kvcacheAggregateThroughput,
/// kvcacheAggregateDeviceLatency, kvcacheLatencyValidity): per trial the ranks' cache_stats
/// tier_storage_read/write_bandwidth_gbps (GB/s) and summary.storage_throughput_tokens_per_sec /
/// avg_throughput_tokens_per_sec are summed and the trials' sums averaged; the device P95s
/// (cache_stats.storage_read/write_device_p95_ms, an absent key counts 0) are the maximum over ranks and trials. A
/// missing or unreadable rank file is listed in missing_files (partial_failure), a rank with
/// cache_stats.storage_entries == 0 in cpu_tier_ranks. A trial any of whose rank files a stop signal ended
/// (kvio.mlperf_closed.stopped, or kvio.stop with a signal) measured part of a trial: it is left out of every
/// aggregated_* figure and listed in stopped_trials_excluded. A failed trial (a rank file missing or unreadable, or one
/// recording storage I/O errors, rank_storage_failures) is no complete trial: summing its ranks would count the failed
/// one as zero, so it is left out too and listed in failed_trials_excluded ({trial, why}); the Option is then `valid`
/// false with `invalid_reason` (docs/mlperf-benchmark.md, "A failed trial"). A rank file that completed no request
/// (`requests_completed` 0) measured nothing: in a trial of the rules' 300 s (its kvio.config.flags.duration) it fails
/// the trial ("rank_0: 0 requests completed"); in a shortened test trial the trial is scored and `notes` says so
/// (docs/mlperf-benchmark.md, "A trial that measured nothing"). Keys: option,
/// aggregated_read_bandwidth_gbps, aggregated_write_bandwidth_gbps, aggregated_avg_throughput_tokens_per_sec,
/// aggregated_storage_throughput_tokens_per_sec, aggregated_device_read_p95_ms, aggregated_device_write_p95_ms (each
/// null without a scored trial), rank_count, trial_count (trials run), scored_trial_count, stopped_trials_excluded,
/// failed_trials_excluded, valid, invalid_reason (only when not valid), partial_failure, missing_files,
/// cpu_tier_ranks, per_trial (kvio's: each trial's sums and maxima, `stopped`, `rank_files` read) and notes
/// (strings, `[]` when none).
nlohmann::ordered_json aggregate_option(const std::string& results_dir, int option, int trials, int ranks);

/// The share of a trial's write bytes that capacity refusals may reach before a rank file is no valid trial
/// (docs/mlperf-benchmark.md, "Checking a results directory: kvio mlperf-check").
inline constexpr double kMaxRefusedShare = 0.01;

/// The failed storage operations a kvio rank file records (kvio.cache), as the protocol's end line and mlperf-check
/// judge them: I/O errors of a tier that had room (write_io_errors, or failed_writes in a file of a kvio that did not
/// split the kinds; failed_reads) and capacity refusals with their bytes (capacity_refused_bytes, the sum over the
/// refused entries) and their share of the trial's write bytes, refused / (refused + summary.cache_stats.
/// total_write_bytes).
struct RankStorageFailures {
    bool recorded = false;  ///< the file has kvio.cache (a file not written by kvio records nothing to judge)
    bool split = false;     ///< kvio.cache has capacity_refusals (the kinds counted apart)
    uint64_t io_writes = 0, io_reads = 0, refusals = 0, refused_bytes = 0;
    double refused_share = 0;  ///< 0..1; 1 when the trial wrote nothing else
    /// Whether the rank file is no valid trial: any I/O error, or refusals above kMaxRefusedShare.
    bool invalid() const { return io_writes + io_reads > 0 || (refusals > 0 && refused_share > kMaxRefusedShare); }
};
/// The failures rank file `doc` records.
RankStorageFailures rank_storage_failures(const nlohmann::ordered_json& doc);

/// The figures of aggregate_option that the checker compares (the aggregated_* keys).
const std::vector<const char*>& aggregated_keys();

}  // namespace kvio::serving
