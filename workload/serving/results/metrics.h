// What a simulation run measured per request, and the results document built from it (docs/mlperf-benchmark.md,
// "Metrics and the results JSON": the benchmark's keys, same units). One object, one place where the key list lives.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/request.h"

namespace kvio::serving {

/// One completed request, as the worker measured it. Latencies in seconds (CLOCK_MONOTONIC).
struct RequestRecord {
    const InferenceRequest* request = nullptr;
    double e2e_s = 0;         ///< L1: creation → after the generation sleep
    double storage_s = 0;     ///< L2: Σ timing.total of every read/write the request issued
    double generation_s = 0;  ///< the simulated generation sleep
    bool cut = false;         ///< one of its cache ops was cut by the stop: the request is abandoned, not recorded
    std::optional<double> prefill_s;  ///< step-3 write latency (0 when the key existed); unset when not written
    std::optional<double> decode_s;   ///< probe + batched decode reads; unset when the request has no decode step
    uint64_t multi_turn_hits = 0, multi_turn_misses = 0;
    // kvio's per-request accounting (kvio.requests)
    uint32_t reads = 0, writes = 0;  ///< cache reads that hit / writes that succeeded
    uint32_t decode_reads = 0;       ///< probe + batched reads that hit
    uint32_t failed_ops = 0;         ///< writes or reads that failed (counted, the request still completes)
    uint64_t bytes_read = 0, bytes_written = 0;
};

/// Per-request totals and lists of a run, or of many clients merged (merge_results.h). Latencies in seconds.
struct RequestTotals {
    uint64_t completed = 0, tokens = 0, mt_hits = 0, mt_misses = 0;
    double storage_total = 0, generation_total = 0;
    std::vector<double> e2e, storage, generation, prefill, decode;
};

/// The benchmark's top level (docs/mlperf-benchmark.md, "Metrics and the results JSON") without "summary" of `t` (see
/// RunMetrics::top_level_json).
nlohmann::ordered_json top_level_json(const RequestTotals& t, const nlohmann::ordered_json& seed);
/// summary's head (docs/mlperf-benchmark.md, "Metrics and the results JSON") of `t` over `elapsed_s` seconds (see
/// RunMetrics::summary_head_json).
nlohmann::ordered_json summary_head_json(const RequestTotals& t, double elapsed_s);
/// multi_turn_stats {cache_hits, cache_misses, hit_rate = hits / max(hits + misses, 1)} of `t`.
nlohmann::ordered_json multi_turn_json(const RequestTotals& t);

/// The results' per-request lists and totals. record() is thread-safe.
class RunMetrics {
public:
    /// A completed request: its latencies, tokens and row (not its multi-turn reads: count_multi_turn has them).
    void record(const RequestRecord& r);
    /// One multi-turn read, counted when it happens (as the benchmark counts multi_turn_cache_hits/_misses), so a
    /// request the stop cut later still has its reads in the top level, like cache_stats.multi_turn_hits.
    void count_multi_turn(bool hit);
    uint64_t completed() const;
    uint64_t tokens() const;

    /// The benchmark's top level (docs/mlperf-benchmark.md, "Metrics and the results JSON") up to and without
    /// "summary": requests_completed, total_tokens_generated, total_storage_io_latency, total_generation_latency,
    /// end_to_end_latencies, storage_latencies, generation_latencies, throughput_timeline, prefill_latencies,
    /// decode_latencies, multi_turn_cache_hits, multi_turn_cache_misses, seed.
    nlohmann::ordered_json top_level_json(std::optional<int64_t> seed) const;
    /// summary (docs/mlperf-benchmark.md, "Metrics and the results JSON") without
    /// cache_stats/qos_metrics/prefix_cache_stats (the caller adds those in order): total_requests, total_tokens,
    /// elapsed_time, avg_throughput_tokens_per_sec, total_storage_io_time, storage_throughput_tokens_per_sec,
    /// requests_per_second, end_to_end_latency_ms, storage_io_latency_ms, generation_latency_ms.
    nlohmann::ordered_json summary_head_json(double elapsed_s) const;
    /// multi_turn_stats {cache_hits, cache_misses, hit_rate = hits / max(hits + misses, 1)}.
    nlohmann::ordered_json multi_turn_json() const;
    /// kvio.requests: one array per field over completed requests, in completion order (user_id, qos, phase,
    /// turn, context_tokens, generate_tokens, reads, decode_reads, writes, failed_ops, bytes_read, bytes_written).
    nlohmann::ordered_json requests_json() const;

private:
    struct Row {
        std::string user_id;
        QosClass qos;
        RequestPhase phase;
        int turn;
        bool is_rag;
        int64_t context_tokens, generate_tokens;
        uint32_t reads, decode_reads, writes, failed_ops;
        uint64_t bytes_read, bytes_written;
    };
    mutable std::mutex mu_;
    RequestTotals t_;
    std::vector<Row> rows_;
};

}  // namespace kvio::serving
