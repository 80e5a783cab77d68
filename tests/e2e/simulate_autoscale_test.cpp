// End-to-end tests of `kvio simulate --enable-autoscaling` (docs/mlperf-benchmark.md, "Autoscaler") on a tmpfs: qos
// mode scales up while the storage is fast and the measured request rate follows the user count (a scale step really
// starts user threads), scales down when a throttled storage tier (--storage-throttle-mibps, a slow device) saturates,
// and capacity mode stops at the peak ("Peak capacity found"). Ticks are 0.5–1 s (--autoscaler-interval) instead of 10
// s.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/e2e/helpers.h"
#include "tests/e2e/simulate_helpers.h"

using namespace kvio::test;
using nlohmann::json;

namespace {

/// A 256 B/token model and users with 0.2–0.3 s think times and 512–2048-token contexts: ~0.3 MiB entries,
/// ~4 requests/s per user, so a run of a few seconds has hundreds of storage ops per tick.
std::string micro_config(const TempDir& dir) {
    const std::string path = dir.file("micro.yaml");
    std::ofstream f(path);
    f << "model_configs:\n  micro:\n    name: micro\n    num_layers: 1\n    hidden_dim: 128\n    num_heads: 2\n"
         "    kv_heads: 1\n    kv_dim_per_head: 64\n    dtype: float16\nuser_templates:\n";
    for (const char* t : {"chatbot", "coding", "document"})
        f << "  " << t << ":\n    context_range: [512, 2048]\n    generation_range: [16, 32]\n"
          << "    think_time_range: [0.2, 0.3]\n";
    return path;
}

std::string autoscale_args(const TempDir& dir, const std::string& cache, int duration, const std::string& extra) {
    return "--config " + micro_config(dir) + " --model micro --num-users 5 --duration " + std::to_string(duration) +
           " --gpu-mem-gb 0 --cpu-mem-gb 0 --generation-mode none --seed 1 --disable-multi-turn --cache-dir " + cache +
           " --enable-autoscaling --progress-interval 0 " + extra;
}

/// The scale events of autoscaling_stats with `action`.
std::vector<json> events(const json& r, const std::string& action) {
    std::vector<json> v;
    for (const auto& e : r["summary"]["autoscaling_stats"])
        if (e["action"] == action) v.push_back(e);
    return v;
}

}  // namespace

TEST(Autoscale, QosModeScalesUpOnFastStorageAndTheRequestRateFollowsTheUsers) {
    TmpfsMount tmpfs(512ull << 20);
    TempDir dir;
    SimRun r = simulate(dir, autoscale_args(dir, tmpfs.dir.path, 6, "--autoscaler-interval 0.5"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const json& sum = r.results["summary"]["autoscaling_summary"];
    EXPECT_EQ(sum["initial_users"], 5);
    ASSERT_GE(sum["final_users"].get<int>(), 12) << sum;  // 5 → 6 → 7 → 8 → 9 → 10 → 12 → ... every tick
    const auto ups = events(r.results, "scale_up");
    ASSERT_GE(ups.size(), 6u);
    for (const char* k : {"timestamp", "mode", "action", "users", "saturation_level", "read_latency_p95_ms",
                          "write_latency_p95_ms", "throughput_tokens_per_sec", "interval_throughput_tokens_per_sec"})
        EXPECT_TRUE(ups.front().contains(k)) << k;
    EXPECT_EQ(sum["total_scale_events"].get<size_t>(), r.results["summary"]["autoscaling_stats"].size());
    const json& iv = r.results["kvio"]["autoscaler"]["intervals"];
    ASSERT_GE(iv.size(), 10u);
    EXPECT_EQ(r.results["throughput_timeline"].size(), iv.size());
    EXPECT_EQ(iv[0]["action"], "stable");  // the benchmark's empty first sample
    // The acceptance check: the measured request rate follows the user count. Interval 1 (5 users) against the
    // last interval (≥ 12 users): the issued and completed rates grow at least 0.6 × as much as the users.
    const json &a = iv[1], &b = iv[iv.size() - 1];
    const double user_ratio = b["users"].get<double>() / a["users"].get<double>();
    ASSERT_GE(user_ratio, 2.0);
    EXPECT_GE(b["issued_req_per_s"].get<double>(), 0.6 * user_ratio * a["issued_req_per_s"].get<double>()) << iv;
    EXPECT_GE(b["completed_req_per_s"].get<double>(), 0.6 * user_ratio * a["completed_req_per_s"].get<double>());
    // Added users continue the seeded table and ran.
    EXPECT_EQ(r.results["kvio"]["autoscaler"]["added_users"].size(),
              r.results["kvio"]["autoscaler"]["max_users_run"].get<size_t>() - 5);
}

TEST(Autoscale, QosModeScalesDownWhenAThrottledStorageSaturates) {
    TmpfsMount tmpfs(512ull << 20);
    TempDir dir;
    // 10 MiB/s, first come first served: throughput stays flat while each added worker lengthens the storage queue,
    // so after the 10-sample window the read P95 (> 100 ms, rising) saturates and two ticks later users drop ×0.8.
    SimRun r =
        simulate(dir, autoscale_args(dir, tmpfs.dir.path, 9, "--autoscaler-interval 0.5 --storage-throttle-mibps 10"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    const auto downs = events(r.results, "scale_down");
    ASSERT_FALSE(downs.empty()) << r.results["kvio"]["autoscaler"]["intervals"];
    EXPECT_GT(downs.front()["saturation_level"].get<double>(), 0.88);
    EXPECT_GT(downs.front()["read_latency_p95_ms"].get<double>(), 100.0);
    // The users after the step really issue less: the interval after the scale-down has fewer users and a lower
    // issued rate than the interval before it.
    const json& iv = r.results["kvio"]["autoscaler"]["intervals"];
    size_t i = 0;
    while (i < iv.size() && iv[i]["action"] != "scale_down") ++i;
    ASSERT_LT(i + 1, iv.size());
    EXPECT_LT(iv[i + 1]["users"].get<int>(), iv[i]["users"].get<int>());
    EXPECT_LT(iv[i + 1]["offered_req_per_s"].get<double>(), iv[i]["offered_req_per_s"].get<double>());
    EXPECT_NE(r.results["kvio"]["storage_tier"].get<std::string>().find("throttled to 10 MiB/s"), std::string::npos);
}

TEST(Autoscale, CapacityModeStopsAtThePeak) {
    TmpfsMount tmpfs(512ull << 20);
    TempDir dir;
    SimRun r =
        simulate(dir, autoscale_args(dir, tmpfs.dir.path, 30,
                                     "--autoscaler-mode capacity --autoscaler-interval 1 --storage-throttle-mibps 10"));
    ASSERT_EQ(r.cmd.status, 0) << r.cmd.err;
    EXPECT_NE(r.cmd.err.find("Peak capacity found at"), std::string::npos) << r.cmd.err;
    EXPECT_EQ(r.results["kvio"]["stop"]["reason"], "autoscaler: peak capacity found");
    EXPECT_LT(r.results["summary"]["elapsed_time"].get<double>(), 20.0);
    const auto stops = events(r.results, "stop");
    ASSERT_EQ(stops.size(), 1u);
    const json& sum = r.results["summary"]["autoscaling_summary"];
    EXPECT_GT(sum["peak_throughput_tokens_per_sec"].get<double>(), 0.0);
    EXPECT_EQ(stops[0]["peak_throughput_tokens_per_sec"], sum["peak_throughput_tokens_per_sec"]);
    EXPECT_GE(sum["peak_user_count"].get<int>(), 5);
    EXPECT_EQ(events(r.results, "scale_up").front()["users"], 10);  // 5 + clamp(int(5 × 0.4), 5, 100)
}
