#include "workload/serving/results/storage_op_stats.h"

#include <algorithm>

#include "workload/serving/results/stats_util.h"

namespace kvio::serving {
namespace {

nlohmann::ordered_json kind_json(const std::vector<StorageOpSample>& ops, bool write, double elapsed_s) {
    uint64_t n = 0, bytes = 0;
    double busy = 0;
    std::vector<double> sizes;
    for (const auto& o : ops) {
        if (o.write != write) continue;
        n += 1, bytes += o.bytes, busy += o.wall_s;
        sizes.push_back(double(o.bytes));
    }
    std::sort(sizes.begin(), sizes.end());
    nlohmann::ordered_json q = nlohmann::ordered_json::array();
    if (!sizes.empty())
        for (int p = 0; p <= 100; p += 5) q.push_back(uint64_t(percentile_sorted(sizes, p)));
    return {{"ops", n},
            {"bytes", bytes},
            {"busy_s", busy},
            {"mean_in_flight", elapsed_s > 0 ? busy / elapsed_s : 0.0},
            {"size_quantiles_bytes", q}};
}

nlohmann::ordered_json overhead_json(const std::vector<StorageOpSample>& ops, bool write, uint64_t large) {
    uint64_t n = 0;
    std::vector<double> sys, over, gen, ratio;
    double sum_sys = 0, sum_over = 0;
    for (const auto& o : ops) {
        if (o.write != write || o.bytes < large) continue;
        n += 1;
        if (o.syscall_s < 0) continue;
        double ov = std::max(0.0, o.wall_s - o.syscall_s - o.gen_s);
        sys.push_back(o.syscall_s), over.push_back(ov), gen.push_back(o.gen_s);
        sum_sys += o.syscall_s, sum_over += ov;
        if (o.syscall_s > 0) ratio.push_back(ov / o.syscall_s);
    }
    auto ms = [](const std::vector<double>& v) {
        return v.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(percentile(v, 50) * 1e3);
    };
    nlohmann::ordered_json r = nullptr;
    if (!ratio.empty())
        r = {{"p50", percentile(ratio, 50)},
             {"p95", percentile(ratio, 95)},
             {"total", sum_sys > 0 ? sum_over / sum_sys : 0.0}};
    return {{"ops", n},
            {"measured_ops", sys.size()},
            {"syscall_ms", ms(sys)},
            {"overhead_ms", ms(over)},
            {"generation_ms", ms(gen)},
            {"overhead_over_syscall", r}};
}

}  // namespace

nlohmann::ordered_json storage_ops_json(const std::vector<StorageOpSample>& ops, double elapsed_s,
                                        uint64_t large_bytes) {
    double busy = 0;
    for (const auto& o : ops) busy += o.wall_s;
    nlohmann::ordered_json j;
    j["mean_in_flight"] = elapsed_s > 0 ? busy / elapsed_s : 0.0;
    j["write"] = kind_json(ops, true, elapsed_s);
    j["read"] = kind_json(ops, false, elapsed_s);
    j["large_entries"] = {{"min_bytes", large_bytes},
                          {"write", overhead_json(ops, true, large_bytes)},
                          {"read", overhead_json(ops, false, large_bytes)}};
    return j;
}

}  // namespace kvio::serving
