// `kvio drives --simulate '<kvio simulate flags>'`: the serving workload itself (docs/simulate.md) run on each drive,
// its own metrics read back from its results JSON (docs/mlperf-benchmark.md, "Metrics and the results JSON").
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::drives {

/// The flags as words: split at blanks, '...' and "..." keep blanks inside a word (no other shell syntax). Throws
/// kvio::UsageError naming `text` for an unclosed quote.
std::vector<std::string> split_words(const std::string& text);

/// Checks the words against `kvio simulate`'s flag table (serving::flag_table; a flag's unique prefix is the flag,
/// as argparse takes it, and `--flag=value` its value): every `--` word must be a flag of the table, and the flags
/// kvio drives sets per target are refused (`--cache-dir`, `--output`, `--force`: from kvio drives' own `--force`;
/// `--num-clients`, `--mpi`: one process per drive; `--enable-latency-tracing`: kvio drives traces each run itself).
/// Returns the value of `--storage-io` ("" when not given). Throws kvio::UsageError naming the word.
std::string check_simulate_flags(const std::vector<std::string>& words);

/// The serving workload's figures of one run, from its results JSON: `summary.storage_throughput_tokens_per_sec`
/// (tokens over the summed storage I/O time, the MLCommons headline's "storage tokens/s"),
/// `summary.avg_throughput_tokens_per_sec`, `summary.cache_stats.tier_storage_{read,write}_bandwidth_gbps`
/// (GiB/s), `storage_{read,write}_device_p95_ms` (ms, 0 when the list is empty), `summary.storage_io_latency_ms.p95`,
/// `tier_storage_kv_bytes_{read,written}_gb` (GiB), `requests_completed`, `summary.elapsed_time` (s), and the
/// results' `kvio.bandwidth_timeline` (storage GiB/s per second).
struct SimFigures {
    double requests = 0, elapsed_s = 0;
    double storage_tokens_per_s = 0, avg_tokens_per_s = 0;
    double read_gib_s = 0, write_gib_s = 0;
    double read_device_p95_ms = 0, write_device_p95_ms = 0, storage_io_p95_ms = 0;
    double read_gib = 0, write_gib = 0;
    /// `kvio.cache`: storage reads and writes that failed on a tier that had room (write_io_errors + failed_reads +
    /// corrupted_reads; a file without write_io_errors: failed_writes), entries no tier could hold
    /// (capacity_refusals, capacity_refused_bytes), and the bytes the run wrote
    /// (summary.cache_stats.total_write_bytes).
    double io_errors = 0, capacity_refusals = 0, capacity_refused_bytes = 0, write_bytes = 0;
    std::string first_error;  ///< kvio.cache.first_write_error / first_read_error / first_error
    /// {t (s), read GiB/s, write GiB/s} per second of the run.
    std::vector<std::vector<double>> timeline;
};

/// Reads a results JSON of `kvio simulate`. `source` names it in errors. Throws kvio::Error when it has no summary
/// (no request completed).
SimFigures parse_sim_results(const nlohmann::json& j, const std::string& source);

/// Why a --simulate run measured no drive, "" when it did: it served no request, did no storage I/O (its entries fit
/// the tiers above storage), had storage I/O errors, or refused more than serving::kMaxRefusedShare of its write
/// bytes for room, the share kvio mlperf-check allows (docs/drives.md, "The serving workload").
std::string sim_run_problem(const SimFigures& f);

}  // namespace kvio::drives
