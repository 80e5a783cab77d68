// QoS service-level accounting (benchmark monitoring.py:QoSMonitor, docs/mlperf-benchmark.md, "Users and the request
// stream", "Metrics and the results JSON" qos_metrics).
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"
#include "workload/serving/arrivals/users.h"

namespace kvio::serving {

/// Per-class end-to-end latencies and SLA violations. A completed request whose end-to-end latency exceeds its
/// class's P95 target counts one violation (a per-request threshold test, as in the benchmark);
/// compliance = 1 − violations/total; met = compliance >= 0.95. Thread-safe.
class QosMonitor {
public:
    explicit QosMonitor(const std::map<std::string, QosProfile>& profiles) : profiles_(profiles) {}
    void record(QosClass q, double e2e_s);
    /// qos_metrics: per class {no_data: true} or {total_requests, latency_ms{mean,p50,p95,p99,max},
    /// sla{target_p95_ms, actual_p95_ms, compliance, met}}, classes interactive, responsive, batch.
    nlohmann::ordered_json to_json() const;

private:
    std::map<std::string, QosProfile> profiles_;
    mutable std::mutex mu_;
    std::vector<double> e2e_s_[3];
    uint64_t violations_[3] = {};
};

}  // namespace kvio::serving
