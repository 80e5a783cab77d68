// `kvio simulate --mlperf-closed`: the MLPerf Storage KV-cache CLOSED protocol run natively (docs/mlperf-benchmark.md,
// "Running a CLOSED submission with kvio"): each chosen Option of closed_rules.h, 3 trials with seed 42, every trial
// N client processes (--num-clients), or the N ranks of `mpirun -np N kvio simulate --mpi` (one client per rank), with
// their own <cache-dir>/rank_<N>/ and
// <results-dir>/option_<O>/trial_<T>/rank_<N>/kvcache_results_<time>.json, 90 s between Options, then
// <results-dir>/kvcache_run_summary_<time>.json shaped as mlpstorage writes it, with kvio's metadata and provenance.
#pragma once
#include <iosfwd>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"

namespace kvio::serving {

/// What the command line chose beyond the SimConfig.
struct ClosedRunOptions {
    std::string results_dir;               ///< required; on another filesystem than --cache-dir
    std::string option = "all";            ///< "1" | "2" | "3" | "all"
    std::optional<int64_t> trial_seconds;  ///< test runs: each trial's --duration instead of 300 s
    std::optional<double> pause_seconds;   ///< test runs: the pause between Options instead of 90 s
    /// test runs: Option 2's CPU tier (GiB) instead of 4 (a 4 GiB tier is filled by memcpy on every trial: 35-100 s
    /// per trial on the 2-CPU VM under load, docs/mlperf-benchmark.md); Options 1 and 3 keep 0.
    std::optional<double> test_cpu_mem_gb;
    /// test runs (--test-memory-cache): a cache backed by memory (memory_backing) is run instead of refused; every
    /// output file then says it is not a CLOSED submission.
    bool test_memory_cache = false;
    /// --system-name: the system under test, recorded in the summary's kvio.metadata and every rank file's
    /// kvio.mlperf_closed (one of what the rules let a submitter vary, docs/mlperf-benchmark.md); checked by
    /// system_name_error when `system_name_given`.
    std::string system_name;
    bool system_name_given = false;
    std::vector<std::string> given_flags;  ///< every `kvio simulate` flag typed ("--config"), for closed_refusals
    std::string kvio_version;              ///< `kvio --version`'s text, recorded in the provenance
    /// Set by run_mlperf_closed, not by the caller: the run's id, in every file it writes (kvio.mlperf_closed.run_id,
    /// the summary's kvio.metadata.run_id), so that mlperf-check tells a rank file of another run.
    std::string run_id;
};

/// What the run wrote.
struct ClosedRunResult {
    std::string summary_path;        ///< kvcache_run_summary_<time>.json
    nlohmann::ordered_json summary;  ///< its contents
    int exit_code = 0;               ///< 0; 1 when a client failed; 128 + signal when stopped (summary still written)
};

/// Where place_marked_file left a client's results.
enum class Placement {
    Absent,  ///< `from` did not exist: nothing to place
    Placed,  ///< `to` holds the results with the marks
    Failed,  ///< the marked copy could not be written (a full results disk): `from` removed, nothing at `to`
};

/// Places a client's results file `from` at `to` (its rank file, or `from` itself for the trial's merged file): reads
/// it, calls `on_read` (when set) with the document, adds `mark` as kvio.mlperf_closed (with the stop of a client a
/// signal stopped) and `to` as kvio.config.flags.output, writes it whole at `to` (a temporary name, renamed) and
/// removes `from`. When the marked copy cannot be written (a full results disk) no unmarked file stays under either
/// name: `from` is removed and "mlperf-closed: TO: not written: REASON (FROM removed: ...)" goes to `progress`, and
/// to `why` (when set) "TO: not written: REASON".
Placement place_marked_file(const std::string& from, const std::string& to, const nlohmann::ordered_json& mark,
                            std::ostream& progress,
                            const std::function<void(const nlohmann::ordered_json&)>& on_read = nullptr,
                            std::string* why = nullptr);

/// The longest --system-name, in characters (UTF-8 code points).
inline constexpr size_t kMaxSystemNameChars = 128;

/// Why `name` cannot be a --system-name, as a one-line error naming the flag ("--system-name: must not be empty"), or
/// "" when it can (or when `given` is false): not empty, at most kMaxSystemNameChars bytes, no '/' and no control
/// character (below 0x20, or 0x7f).
std::string system_name_error(const std::string& name, bool given);

/// Why a run with these options is not a CLOSED submission ("" when it is one): a trial length other than 300 s, a
/// pause other than 90 s, another CPU tier for Option 2, not all three Options, or --test-memory-cache.
std::string not_a_submission_reason(const ClosedRunOptions& o);

/// Checks everything before the first client starts (kvio::Error, every refusal one per line, each naming its
/// rule): the flags CLOSED forbids (closed_refusals), --cache-dir and --results-dir both set, --option one of
/// 1|2|3|all, positive --trial-seconds, --pause-seconds >= 0, each directory existing or its parent existing
/// ("--cache-dir DIR: No such file or directory", "Not a directory"), each writable (a probe file created and
/// removed: "--results-dir DIR: not writable: Read-only file system"), no earlier CLOSED run in --results-dir, and the
/// two on different filesystems (rule kvcachePosixCacheDir: their st_dev differ), and the cache not backed by memory
/// (rule kvioCacheOnMemory: "--cache-dir DIR is backed by memory (WHAT): ...", memory_backing of its
/// filesystem_provenance; allowed with test_memory_cache). Only then is the cache directory
/// created (one level) and each client's <cache-dir>/rank_<N>.lock locked (flock; another run holding one is refused
/// with its pid, rule kvcachePerClientIsolation; here the locks are released at return, run_mlperf_closed holds them
/// for its whole run), then the results directory created; a refused run creates nothing. Returns the Options to
/// run, in order.
std::vector<int> check_closed_run(const SimConfig& base, const ClosedRunOptions& o);

/// Runs the protocol: check_closed_run, then for each Option and trial serving::run_clients (with SimConfig::mpi:
/// this process is one rank, serving::run_mpi_client, its result in its own rank_<rank>/, rank 0 aggregating and
/// writing the summary; every rank checks its own directories and all agree before the first trial, after each trial
/// and after each pause, so a refusal, a failure or a stop signal on one rank is every rank's) with the Option's
/// config (closed_option_config), its clients' results moved into the rank directories with kvio.mlperf_closed
/// ({option, trial, rank, closed_submission, not_a_closed_submission}) added, the pause between Options (a stop
/// signal ends it), and the summary written whole (temporary name, renamed). Progress lines ("mlperf-closed: option
/// 1 (...) trial_0 (1/3): ...") go to `progress`. The directories are made absolute and normalised first. A stop
/// signal (handled from the first moment, before any fork, also when SIGINT was inherited as ignored) ends the run
/// after the trial in flight; the summary then holds what ran. A failed trial still removes its caches and moves
/// every whole rank file into place; one that produced no rank file ends the protocol; a summary that cannot be
/// written is named on `progress` (summary_path "", exit code 1). The summary's kvio.trial_failures names each client
/// that failed in a trial and why (under MPI every rank's reason gathered on rank 0 after each trial), and
/// kvio.invalid_rank_files each rank file that is no valid trial (rank_storage_failures) and why. Before the first
/// trial each group of clients that share a cache filesystem (all of --num-clients; under MPI the ranks of one host,
/// ranks_sharing) is warned once when their share is too small for an Option (sizing_warning).
///
/// `console` (stdout; nullptr with --quiet, and on every rank but 0) gets the run's progress for a person: each trial
/// as it starts ("mlperf-closed: option 1 (Max Storage Stress) trial 1/3: 2 client(s), 300 s"), the pause between
/// Options and its countdown (at most one line per 10 s), and at the end each Option's headline figures and where the
/// summary is (docs/mlperf-benchmark.md, "Running a CLOSED submission with kvio"). Warnings, errors and the detailed
/// log stay on `progress`.
ClosedRunResult run_mlperf_closed(const SimConfig& base, const ClosedRunOptions& o, std::ostream& progress,
                                  std::ostream* console = nullptr);

}  // namespace kvio::serving
