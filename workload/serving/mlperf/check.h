// `kvio mlperf-check DIR`: checks a KV-cache CLOSED results directory (docs/mlperf-benchmark.md, "Checking a results
// directory: kvio mlperf-check") written by `kvio simulate --mlperf-closed` or by mlpstorage over the Python benchmark
// (the same layout: option_<O>/trial_<T>/rank_<N>/kvcache_results_*.json and kvcache_run_summary_*.json).
#pragma once
#include <string>
#include <vector>

namespace kvio::serving {

/// `kvio mlperf-check`'s exit status when the directory holds a CLOSED run and no problem was found
/// (docs/mlperf-benchmark.md, "Checking a results directory: kvio mlperf-check").
inline constexpr int kCheckClean = 0;
/// Its exit status when a problem was found (one line each on stdout), a directory holding no CLOSED run included.
/// A usage error (no DIR, DIR missing or not a directory) exits kvio::cli::kUsageError (2).
inline constexpr int kCheckProblems = 1;

/// How strict the check is.
struct CheckOptions {
    /// Accept a run kvio marked as not a CLOSED submission (--trial-seconds, --pause-seconds, one Option): its
    /// recorded trial length and Options are then the expected ones. Off: such a run is a problem.
    bool allow_shortened = false;
};

/// What the check found.
struct CheckReport {
    std::vector<std::string> problems;       ///< one line each: "PATH: what is wrong (rule NAME)"
    std::vector<std::string> notes;          ///< what was not checkable (a rank file that records no parameters)
    int options = 0, trials = 0, ranks = 0;  ///< what was expected (Options, trials, ranks)
    int rank_files = 0;  ///< rank files read: found and parsed as a JSON object (a broken one is a problem, not read)
    int options_found = 0;       ///< of the `options` expected, how many have their option_<O>/ directory
    bool no_run = false;         ///< `dir` holds neither a summary nor option_<O>/: no CLOSED run (one problem says so)
    int stopped_rank_files = 0;  ///< rank files whose trial a stop signal ended (kvio.stop)
    int killed_trials = 0;       ///< trial directories holding files a killed run left (unplaced results, temporaries)
    /// the run was stopped before its end: a stopped rank file, a killed trial, or the summary says so
    bool stopped = false;
};

/// Checks `dir`: the summary (kvcache_run_summary*.json; the newest by name), every Option's trial and rank
/// directory (a missing rank or trial file, two results files in one rank), each rank file's seed (42 + rank) and,
/// where the file records them (kvio's kvio.config.flags), its parameters against the Option's (Table KVCache-1), every
/// other flag closed_refusals refuses against kvio simulate's default, and its cache directory (one per rank; on
/// another filesystem than `dir`), the recorded filesystems of the summary's provenance, the sequence locks (3 trials),
/// and the summary's aggregates against aggregate_option over the rank files (relative difference 1e-9), and each
/// mlpstorage metadata file (*_metadata.json in `dir`): every Option parameter it records must be what the Options ran;
/// one that records mlpstorage's CLI default instead (gpu_mem_gb 16, generation_mode "realistic", ...) is named as
/// such. Throws kvio::UsageError ("DIR: No such file or directory", "DIR: Not a directory") when `dir` is not a
/// directory.
CheckReport check_results_dir(const std::string& dir, const CheckOptions& o);

}  // namespace kvio::serving
