// The benchmark's autoscaler (docs/mlperf-benchmark.md, "Autoscaler"; monitoring.py StorageMonitor +
// WorkloadAutoscaler, benchmark.py monitor_stats) as a pure decision object: one tick per interval takes what the
// interval measured and returns the action and the user count. The simulation (benchmark.cpp) applies the count by
// starting or parking user threads, so the offered load follows the decision (the benchmark only changes a number).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"

namespace kvio::serving {

/// What one monitor interval measured (StorageMetrics of the benchmark, per interval).
struct StorageSample {
    double t_s = 0;            ///< elapsed since the run started, s (CLOCK_MONOTONIC)
    double read_gibps = 0;     ///< Δ total_read_bytes / interval, GiB/s (all tiers, as the benchmark)
    double write_gibps = 0;    ///< Δ total_write_bytes / interval, GiB/s
    double read_p95_ms = 0;    ///< storage-tier read latency P95 of the reads completed in the interval, ms
    double write_p95_ms = 0;   ///< storage-tier write latency P95 of the interval, ms
    uint64_t queue_depth = 0;  ///< requests waiting in the queue at the tick
};

/// Storage saturation 0..1 from the last samples (monitoring.py _compute_saturation_from_history): 0 with
/// fewer than `window` (saturation_detection.history_window_size, 10) samples; else
/// min(max(read P95 of the window) / read_threshold_ms, 1) × (1.0 if std/(mean + 0.01) of read+write GiB/s < 0.1
/// and the least-squares slope of the window's read P95 > 0, else 0.5).
double saturation_level(const std::vector<StorageSample>& history, size_t window, double read_threshold_ms);

/// One decision.
struct ScaleDecision {
    std::string action;  ///< "stable" | "hold" | "scale_up" | "scale_down" | "stop"
    int64_t users = 0;   ///< the user count after the decision
};

/// Worker threads that serve `users` users: min(users, 500), at least 1 (docs/mlperf-benchmark.md, "Users and the
/// request stream"; a scale step applies it to the new user count).
size_t worker_threads(int64_t users);
/// Users a run may reach: --num-users, or with --enable-autoscaling the autoscaler's ceiling (Autoscaler::max_users)
/// when that is higher. The user table is drawn to it; worker_threads() of it is the most workers the run starts.
int64_t run_user_ceiling(const SimConfig& c);

/// WorkloadAutoscaler: mode "qos" (latency-driven: saturation above 1.1 × target for
/// consecutive_samples_required ticks → users × scale_down_factor and a 3-tick cooldown; below 0.9 × target →
/// users × scale_up_factor; int() truncation, so ≤ 4 users never grow at ×1.2) or "capacity" (first tick: peak =
/// throughput, + clamp(int(users × 0.4), 5, 100) users; later: throughput > 1.01 × peak → new peak and
/// + clamp(int(users × 0.2), 5, 100); otherwise after 2 ticks without a new peak "stop"). Users stay in
/// [min_users, min(max_users, 500)] (the benchmark clamps the applied count to [1, 500]).
class Autoscaler {
public:
    Autoscaler(const std::string& mode, int64_t initial_users, double target_saturation, const YamlSettings& y);

    /// One tick. `first` is the benchmark's empty first collect_metrics() (qos mode answers "stable");
    /// `throughput_tokens_per_s` is what capacity mode compares (kvio: the interval's, not the cumulative average).
    ScaleDecision decide(bool first, double saturation, double throughput_tokens_per_s);

    const std::string& mode() const { return mode_; }
    int64_t users() const { return users_; }
    int64_t max_users() const { return max_users_; }
    double peak_throughput() const { return peak_; }
    int64_t peak_user_count() const { return peak_users_; }

private:
    int64_t capacity_step(double fraction) const;
    std::string mode_;
    int64_t users_;
    double target_;
    int64_t min_users_, max_users_;
    double up_, down_;
    int consecutive_;
    int cooldown_ = 0, trend_ = 0;
    bool seen_first_throughput_ = false;
    double peak_ = 0;
    int64_t peak_users_ = 0;
};

/// What the simulation counted up to a tick (cumulative counters; the monitor takes the differences).
struct MonitorCounters {
    double t_s = 0;                                          ///< elapsed since the run started, s
    uint64_t tokens = 0;                                     ///< generated tokens of completed requests
    uint64_t completed = 0, issued = 0;                      ///< requests completed / enqueued
    uint64_t read_bytes = 0, write_bytes = 0;                ///< total_read_bytes / total_write_bytes of the cache
    const std::vector<double>* storage_read_lat = nullptr;   ///< every storage read latency so far, s (append order)
    const std::vector<double>* storage_write_lat = nullptr;  ///< every storage write latency so far, s
    uint64_t queue_depth = 0;
    int64_t active_users = 0;      ///< user threads issuing requests during the interval just ended
    double offered_req_per_s = 0;  ///< Σ 1/think_time of those users
};

/// monitor_stats with the autoscaler: one tick() per interval builds the interval's StorageSample, the
/// saturation and the decision, and keeps what the results report: throughput_timeline (the benchmark's
/// cumulative tokens/s per tick), autoscaling_stats (scale and stop events, with the benchmark's keys plus
/// interval_throughput_tokens_per_sec: the per-interval tokens/s the decision used), autoscaling_summary, and
/// kvio.autoscaler.intervals (one row per tick: users, offered and measured request rates, tokens/s, GiB/s, P95s,
/// saturation, action).
class AutoscaleMonitor {
public:
    explicit AutoscaleMonitor(const SimConfig& c);
    /// One tick at `now`; returns the decision (users = the count to apply).
    ScaleDecision tick(const MonitorCounters& now);
    nlohmann::ordered_json throughput_timeline() const { return timeline_; }
    nlohmann::ordered_json stats_json() const { return history_; }
    nlohmann::ordered_json summary_json(int64_t final_users) const;
    nlohmann::ordered_json intervals_json() const { return intervals_; }
    const Autoscaler& scaler() const { return scaler_; }

private:
    Autoscaler scaler_;
    int64_t initial_users_;
    size_t window_;
    double read_threshold_ms_;
    bool have_baseline_ = false;
    MonitorCounters last_{};
    size_t last_reads_ = 0, last_writes_ = 0;
    std::vector<StorageSample> samples_;
    nlohmann::ordered_json timeline_ = nlohmann::ordered_json::array();
    nlohmann::ordered_json history_ = nlohmann::ordered_json::array();
    nlohmann::ordered_json intervals_ = nlohmann::ordered_json::array();
};

}  // namespace kvio::serving
