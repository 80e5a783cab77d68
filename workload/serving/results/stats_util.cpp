#include "workload/serving/results/stats_util.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvio::serving {

double percentile_sorted(const std::vector<double>& s, double q) {
    if (s.empty()) return 0;
    double idx = double(s.size() - 1) * q / 100.0;
    size_t lo = size_t(std::floor(idx));
    size_t hi = std::min(lo + 1, s.size() - 1);
    double frac = idx - double(lo);
    return s[lo] + (s[hi] - s[lo]) * frac;
}

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return percentile_sorted(v, q);
}

nlohmann::ordered_json latency_summary_ms(const std::vector<double>& v_s) {
    std::vector<double> s(v_s);
    std::sort(s.begin(), s.end());
    double mean = s.empty() ? 0 : std::accumulate(s.begin(), s.end(), 0.0) / double(s.size());
    nlohmann::ordered_json j;
    j["mean"] = mean * 1000;
    j["p50"] = percentile_sorted(s, 50) * 1000;
    j["p95"] = percentile_sorted(s, 95) * 1000;
    j["p99"] = percentile_sorted(s, 99) * 1000;
    j["p999"] = percentile_sorted(s, 99.9) * 1000;
    j["p9999"] = percentile_sorted(s, 99.99) * 1000;
    return j;
}

nlohmann::ordered_json entry_sizes_json(const std::vector<uint64_t>& sizes) {
    nlohmann::ordered_json j;
    j["count"] = sizes.size();
    if (sizes.empty()) {
        for (const char* k : {"min_bytes", "mean_bytes", "p95_bytes", "max_bytes"}) j[k] = nullptr;
        return j;
    }
    std::vector<double> s(sizes.begin(), sizes.end());
    std::sort(s.begin(), s.end());
    j["min_bytes"] = s.front();
    j["mean_bytes"] = std::accumulate(s.begin(), s.end(), 0.0) / double(s.size());
    j["p95_bytes"] = percentile_sorted(s, 95);
    j["max_bytes"] = s.back();
    return j;
}

}  // namespace kvio::serving
