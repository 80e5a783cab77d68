// Percentiles and summaries as the benchmark computes them (numpy.percentile, linear interpolation).
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::serving {

/// numpy.percentile(v, q) with the default 'linear' method: sorted v, index (n − 1) × q / 100, linear
/// interpolation between neighbours. q in [0, 100]. Empty v → 0.
double percentile(std::vector<double> v, double q);
/// Same on an already sorted vector (no copy).
double percentile_sorted(const std::vector<double>& sorted, double q);
/// {mean, p50, p95, p99, p999, p9999} of `v_s` (seconds) in ms (summary.*_latency_ms, docs/mlperf-benchmark.md,
/// "Metrics and the results JSON").
nlohmann::ordered_json latency_summary_ms(const std::vector<double>& v_s);
/// {count, min_bytes, mean_bytes, p95_bytes, max_bytes} of entry sizes (bytes; p95 as numpy.percentile): the
/// benchmark's "Block size" lines, from its live cache entries at the end (kvio.cache.entry_sizes). An empty list
/// gives count 0 and nulls.
nlohmann::ordered_json entry_sizes_json(const std::vector<uint64_t>& sizes);

}  // namespace kvio::serving
