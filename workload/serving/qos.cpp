#include "workload/serving/qos.h"

#include <algorithm>
#include <numeric>

#include "workload/serving/results/stats_util.h"

namespace kvio::serving {

namespace {
double target_p95_ms(const std::map<std::string, QosProfile>& p, QosClass q) {
    auto it = p.find(qos_name(q));
    return it == p.end() ? 0 : it->second.target_latency_p95_ms;
}
}  // namespace

void QosMonitor::record(QosClass q, double e2e_s) {
    double target = target_p95_ms(profiles_, q);
    std::lock_guard lk(mu_);
    e2e_s_[int(q)].push_back(e2e_s);
    if (e2e_s * 1000.0 > target) ++violations_[int(q)];
}

nlohmann::ordered_json QosMonitor::to_json() const {
    std::lock_guard lk(mu_);
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (QosClass q : {QosClass::Interactive, QosClass::Responsive, QosClass::Batch}) {
        std::vector<double> ms = e2e_s_[int(q)];
        if (ms.empty()) {
            out[qos_name(q)] = {{"no_data", true}};
            continue;
        }
        for (double& x : ms) x *= 1000.0;
        std::sort(ms.begin(), ms.end());
        double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size());
        double compliance = 1.0 - double(violations_[int(q)]) / double(ms.size());
        double p95 = percentile_sorted(ms, 95);
        out[qos_name(q)] = {{"total_requests", ms.size()},
                            {"latency_ms",
                             {{"mean", mean},
                              {"p50", percentile_sorted(ms, 50)},
                              {"p95", p95},
                              {"p99", percentile_sorted(ms, 99)},
                              {"max", ms.back()}}},
                            {"sla",
                             {{"target_p95_ms", target_p95_ms(profiles_, q)},
                              {"actual_p95_ms", p95},
                              {"compliance", compliance},
                              {"met", compliance >= 0.95}}}};
    }
    return out;
}

}  // namespace kvio::serving
