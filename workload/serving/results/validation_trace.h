// --validation-trace (docs/mlperf-benchmark.md, "Trace replay and special modes"; benchmark workload.py
// ValidationEngine): a JSON list of RealTraceEntry records (timestamp, request_id, user_id, context_tokens,
// generation_tokens, phase, cache_hit, cache_tier, read_bytes, write_bytes, read_latency_ms, write_latency_ms,
// model_name, ...) whose cache hit rate the run is compared with.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::serving {

/// What the trace says. Bytes are bytes, latencies ms (as the trace records them).
struct ValidationTrace {
    std::string path;
    uint64_t entries = 0, cache_hits = 0;
    double cache_hit_rate = 0;                                   ///< cache_hits / entries
    uint64_t read_bytes = 0, write_bytes = 0;                    ///< Σ of the entries that have them
    double mean_read_latency_ms = 0, mean_write_latency_ms = 0;  ///< over the entries that have them
};

/// Loads and checks the trace: a JSON array of objects, each with a boolean `cache_hit`; read_bytes, write_bytes,
/// read_latency_ms, write_latency_ms, when present, numbers >= 0. Throws kvio::Error naming the file and the
/// entry ("PATH: entry 3: field 'cache_hit': expected true or false"), or the JSON parse error's position. A
/// missing file is an error (the benchmark falls back to built-in statistics, hit rate 0.65).
ValidationTrace load_validation_trace(const std::string& path);

/// results.validation: {passed, avg_error_pct, comparison: {cache_hit_rate: {benchmark, trace, error_pct,
/// within_5pct}}, trace_stats: {source, entries, cache_hits, cache_hit_rate, read_bytes, write_bytes,
/// mean_read_latency_ms, mean_write_latency_ms}}. error_pct = |benchmark − trace| / trace × 100 (trace 0: 0 when
/// the run's rate is 0 too, else 100); passed when error_pct <= 5.
nlohmann::ordered_json compare_with_trace(const ValidationTrace& t, double benchmark_hit_rate);

}  // namespace kvio::serving
