// The autoscaler's decisions and saturation (docs/mlperf-benchmark.md, "Autoscaler"; monitoring.py WorkloadAutoscaler
// and StorageMonitor._compute_saturation_from_history), tick by tick with numbers worked out by hand.
#include <gtest/gtest.h>

#include "workload/serving/autoscaler.h"

using namespace kvio::serving;

namespace {
std::vector<StorageSample> samples(std::initializer_list<double> p95, double gibps) {
    std::vector<StorageSample> v;
    for (double p : p95) {
        StorageSample s;
        s.read_p95_ms = p;
        s.read_gibps = gibps;
        v.push_back(s);
    }
    return v;
}
}  // namespace

TEST(Autoscaler, SaturationNeedsTenSamplesAndAPlateauWithRisingLatency) {
    EXPECT_EQ(saturation_level(samples({500, 500, 500}, 1.0), 10, 100), 0.0);  // < 10 samples
    // Rising P95 (slope > 0), flat throughput (std 0): latency factor min(140/100, 1) = 1, plateau 1.0.
    EXPECT_DOUBLE_EQ(saturation_level(samples({50, 60, 70, 80, 90, 100, 110, 120, 130, 140}, 1.0), 10, 100), 1.0);
    // Same latencies falling: plateau 0.5.
    EXPECT_DOUBLE_EQ(saturation_level(samples({140, 130, 120, 110, 100, 90, 80, 70, 60, 50}, 1.0), 10, 100), 0.5);
    // Rising but only to 40 ms: 0.4 × 1.0; only the last 10 samples count.
    EXPECT_DOUBLE_EQ(saturation_level(samples({900, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40}, 1.0), 10, 100), 0.4);
    // Throughput swinging (cv = std/(mean + 0.01) >= 0.1): plateau 0.5 even with rising latency.
    auto v = samples({50, 60, 70, 80, 90, 100, 110, 120, 130, 140}, 1.0);
    for (size_t i = 0; i < v.size(); i += 2) v[i].write_gibps = 1.0;
    EXPECT_DOUBLE_EQ(saturation_level(v, 10, 100), 0.5);
}

TEST(Autoscaler, QosModeScalesUpBelowTargetAndDownAfterTwoSaturatedTicksWithCooldown) {
    const YamlSettings y = default_yaml_settings();
    Autoscaler a("qos", 10, 0.8, y);
    EXPECT_EQ(a.decide(true, 0, 0).action, "stable");  // the benchmark's empty first collect_metrics()
    ScaleDecision d = a.decide(false, 0.0, 0);
    EXPECT_EQ(d.action, "scale_up");
    EXPECT_EQ(d.users, 12);                              // int(10 × 1.2)
    EXPECT_EQ(a.decide(false, 0.8, 0).action, "hold");   // 0.72 <= 0.8 <= 0.88
    EXPECT_EQ(a.decide(false, 0.95, 0).action, "hold");  // first saturated tick
    d = a.decide(false, 0.95, 0);
    EXPECT_EQ(d.action, "scale_down");
    EXPECT_EQ(d.users, 9);  // int(12 × 0.8)
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a.decide(false, 0.0, 0).action, "hold") << "cooldown tick " << i;
    EXPECT_EQ(a.decide(false, 0.0, 0).users, 10);  // int(9 × 1.2)
    Autoscaler small("qos", 4, 0.8, y);
    small.decide(true, 0, 0);
    EXPECT_EQ(small.decide(false, 0.0, 0).action,
              "hold");  // int(4 × 1.2) = 4 never grows (docs/mlperf-benchmark.md, "Autoscaler")
}

TEST(Autoscaler, CapacityModeSearchesThePeakAndStopsAfterTwoTicksWithoutOne) {
    Autoscaler a("capacity", 5, 0.8, default_yaml_settings());
    ScaleDecision d = a.decide(false, 0, 100);
    EXPECT_EQ(d.action, "scale_up");
    EXPECT_EQ(d.users, 10);                             // + clamp(int(5 × 0.4), 5, 100)
    d = a.decide(false, 0, 150);                        // new peak (> 1.01 × 100)
    EXPECT_EQ(d.users, 15);                             // + clamp(int(10 × 0.2), 5, 100)
    EXPECT_EQ(a.decide(false, 0, 151).action, "hold");  // not > 1.01 × 150
    EXPECT_EQ(a.decide(false, 0, 149).action, "stop");
    EXPECT_DOUBLE_EQ(a.peak_throughput(), 150);
    EXPECT_EQ(a.peak_user_count(), 10);
    // The applied ceiling is 500 users (monitor_stats clamps to [1, 500]).
    Autoscaler big("capacity", 480, 0.8, default_yaml_settings());
    EXPECT_EQ(big.decide(false, 0, 1).users, 500);
}

// The one rule for the workers (the run's and the remote tier's planned connections): min(users, 500), and the users a
// run may reach: the autoscaler's ceiling (clamped to 500) when it scales and that is higher.
TEST(Autoscaler, WorkersFollowMinUsers500AndTheRunsUserCeiling) {
    EXPECT_EQ(worker_threads(1), 1u);
    EXPECT_EQ(worker_threads(0), 1u);
    EXPECT_EQ(worker_threads(499), 499u);
    EXPECT_EQ(worker_threads(500), 500u);
    EXPECT_EQ(worker_threads(5000), 500u);
    SimConfig c;
    c.num_users = 20;
    c.yaml.autoscaler_max_users = 900;
    EXPECT_EQ(run_user_ceiling(c), 20);  // no autoscaling: --num-users
    c.enable_autoscaling = true;
    EXPECT_EQ(run_user_ceiling(c), 500);  // the autoscaler applies at most 500
    c.yaml.autoscaler_max_users = 60;
    EXPECT_EQ(run_user_ceiling(c), 60);
    c.num_users = 80;
    EXPECT_EQ(run_user_ceiling(c), 80);  // started above the ceiling
    EXPECT_EQ(worker_threads(run_user_ceiling(c)), 80u);
}
