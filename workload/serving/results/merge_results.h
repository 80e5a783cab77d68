// One results document from many clients of `kvio simulate` (docs/mlperf-benchmark.md, "Multi-client runs"): the
// processes of --num-clients on one host and the ranks of an mpirun job both end here. Sums of counts, bytes and
// tokens; percentiles over every client's requests and cache ops (from the concatenated raw lists, never an average of
// percentiles); one section per client; and the MLCommons aggregation figures (mlpstorage
// kvcache.py:_aggregate_option_results).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/cache.h"

namespace kvio::serving {

/// What one client produced, as the launcher collected it.
struct ClientResult {
    int rank = 0;                ///< 0..N-1: --num-clients index or MPI_Comm_rank
    std::string host;            ///< host name the client ran on
    std::string output_path;     ///< its own results JSON (on its host)
    int exit_code = 0;           ///< its run_simulation exit code (130/143/129 after a signal), 1 when it failed
    std::string error;           ///< non-empty: it failed and `doc` is null
    nlohmann::ordered_json doc;  ///< its results document, with kvio.merge_state (SimHooks::keep_merge_state)
};

/// The merged results document of `clients` (in rank order), with docs/mlperf-benchmark.md, "Metrics and the results
/// JSON" keys of a single run:
/// - top level: requests_completed, total_tokens_generated, total_*_latency summed; the per-request lists
///   concatenated in rank order; multi-turn hits/misses summed; seed = rank 0's (the base); throughput_timeline [].
/// - summary: totals summed; elapsed_time = the longest client's (the clients ran side by side);
///   avg_throughput_tokens_per_sec and requests_per_second over it; latency summaries over the concatenated lists;
///   cache_stats = cache_stats_json of the clients' summed CacheStats over that elapsed time (so per-op percentiles
///   come from every client's ops); qos_metrics recomputed per request from end_to_end_latencies and
///   kvio.requests.qos with the clients' SLA targets; prefix_cache_stats summed; multi_turn_stats recomputed;
///   autoscaling_stats [] and autoscaling_summary null (each client's are in its section).
/// - kvio: format, "merged" {launcher, clients, failed_ranks, partial_failure}, "mlcommons_aggregation"
///   {aggregated_bandwidth_gbps = Σ summary.cache_stats.tier_storage_read_bandwidth_gbps, aggregated_p95_latency_ms
///   = max summary.storage_io_latency_ms.p95, total_ranks, ranks_served_from_cpu_tier (storage_entries == 0),
///   partial_failure}, "clients" [{rank, host, output, exit_code, error, seed_used, cache_dir, summary, stop}],
///   stop counters summed, cache failures summed, requests (kvio.requests concatenated plus a "client" column),
///   config = rank 0's (its cache subdirectory and seed; num_clients and mpi as the launcher ran them).
/// `launcher` is "processes" (--num-clients) or "mpi". A client with an error counts in failed_ranks and
/// partial_failure and adds nothing else. Throws kvio::Error naming the rank and the field for a malformed doc.
nlohmann::ordered_json merge_client_results(const std::vector<ClientResult>& clients, const std::string& launcher);

/// Per-client results path of a multi-client run: "<output without .json>.rank<r>.json" (output "" = the
/// default name).
std::string client_output_path(const std::string& output, int rank);

}  // namespace kvio::serving
