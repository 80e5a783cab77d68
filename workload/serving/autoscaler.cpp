#include "workload/serving/autoscaler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "common/error.h"
#include "workload/serving/results/stats_util.h"

namespace kvio::serving {

namespace {
// monitor_stats applies at most 500 users (its clamp to [1, 500]); the workers follow min(users, 500).
constexpr int64_t kAppliedUserCap = 500;
// WorkloadAutoscaler's fixed numbers: cooldown_period 3, capacity_initial_fraction 0.4, capacity_scale_fraction
// 0.2, capacity_min_step 5, capacity_max_step 100, and the 1.01 "new peak" margin.
constexpr int kCooldownTicks = 3;
constexpr double kCapacityFirstFraction = 0.4, kCapacityFraction = 0.2, kNewPeakMargin = 1.01;
constexpr int64_t kCapacityMinStep = 5, kCapacityMaxStep = 100;
}  // namespace

double saturation_level(const std::vector<StorageSample>& history, size_t window, double read_threshold_ms) {
    if (window == 0 || history.size() < window) return 0.0;
    const size_t n = window, off = history.size() - window;
    double max_p95 = 0, sum_t = 0;
    for (size_t i = 0; i < n; ++i) {
        max_p95 = std::max(max_p95, history[off + i].read_p95_ms);
        sum_t += history[off + i].read_gibps + history[off + i].write_gibps;
    }
    const double mean_t = sum_t / double(n);
    double var = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = history[off + i].read_gibps + history[off + i].write_gibps - mean_t;
        var += d * d;
    }
    const double cv = std::sqrt(var / double(n)) / (mean_t + 0.01);  // numpy std (population) / (mean + 0.01)
    // np.polyfit(range(n), p95, 1)[0]: the least-squares slope.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
        const double x = double(i), y = history[off + i].read_p95_ms;
        sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double den = double(n) * sxx - sx * sx;
    const double slope = den != 0 ? (double(n) * sxy - sx * sy) / den : 0.0;
    const double latency_factor = std::min(max_p95 / (read_threshold_ms > 0 ? read_threshold_ms : 100.0), 1.0);
    const double plateau_factor = cv < 0.1 && slope > 0 ? 1.0 : 0.5;
    return std::min(latency_factor * plateau_factor, 1.0);
}

size_t worker_threads(int64_t users) { return size_t(std::clamp<int64_t>(users, 1, kAppliedUserCap)); }

int64_t run_user_ceiling(const SimConfig& c) {
    if (!c.enable_autoscaling) return c.num_users;
    return std::max<int64_t>(c.num_users,
                             Autoscaler(c.autoscaler_mode, c.num_users, c.target_saturation, c.yaml).max_users());
}

Autoscaler::Autoscaler(const std::string& mode, int64_t initial_users, double target_saturation, const YamlSettings& y)
    : mode_(mode),
      users_(initial_users),
      target_(target_saturation),
      min_users_(std::max<int64_t>(1, y.autoscaler_min_users)),
      max_users_(std::max<int64_t>(1, std::min<int64_t>(y.autoscaler_max_users, kAppliedUserCap))),
      up_(y.autoscaler_scale_up_factor),
      down_(y.autoscaler_scale_down_factor),
      consecutive_(std::max(1, y.autoscaler_consecutive_samples_required)) {
    if (mode_ != "qos" && mode_ != "capacity")
        throw Error("--autoscaler-mode '" + mode_ + "' is not one of qos|capacity");
}

int64_t Autoscaler::capacity_step(double fraction) const {
    return std::min(std::max(int64_t(double(users_) * fraction), kCapacityMinStep), kCapacityMaxStep);
}

ScaleDecision Autoscaler::decide(bool first, double saturation, double throughput) {
    if (mode_ == "qos") {
        if (first) return {"stable", users_};
        if (cooldown_ > 0) {
            --cooldown_;
            return {"hold", users_};
        }
        if (saturation > target_ * 1.1) {
            if (++trend_ >= consecutive_) {
                const int64_t t = std::max(int64_t(double(users_) * down_), min_users_);
                if (t < users_) {
                    users_ = t;
                    cooldown_ = kCooldownTicks;
                    return {"scale_down", users_};
                }
            }
            return {"hold", users_};
        }
        trend_ = 0;
        if (saturation < target_ * 0.9) {
            const int64_t t = std::min(int64_t(double(users_) * up_), max_users_);
            if (t > users_) {
                users_ = t;
                return {"scale_up", users_};
            }
        }
        return {"hold", users_};
    }
    // capacity
    if (!seen_first_throughput_) {
        seen_first_throughput_ = true;
        peak_ = throughput;
        peak_users_ = users_;
        const int64_t t = std::min(users_ + capacity_step(kCapacityFirstFraction), max_users_);
        if (t > users_) {
            users_ = t;
            return {"scale_up", users_};
        }
        return {"hold", users_};
    }
    if (throughput > peak_ * kNewPeakMargin) {
        peak_ = throughput;
        peak_users_ = users_;
        trend_ = 0;
        const int64_t t = std::min(users_ + capacity_step(kCapacityFraction), max_users_);
        if (t > users_) {
            users_ = t;
            return {"scale_up", users_};
        }
        return {"hold", users_};
    }
    if (++trend_ >= 2) return {"stop", users_};
    return {"hold", users_};
}

namespace {
/// datetime.now().isoformat() of the benchmark's history entries (local time, microseconds).
std::string iso_now() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const long us =
        long(std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64], out[80];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(out, sizeof out, "%s.%06ld", buf, us);
    return out;
}

/// P95 in ms of the latencies (s) appended to `all` since index `from`.
double p95_ms_since(const std::vector<double>* all, size_t from) {
    if (!all || all->size() <= from) return 0.0;
    return percentile(std::vector<double>(all->begin() + long(from), all->end()), 95) * 1000.0;
}

double per_s(uint64_t now, uint64_t before, double dt) { return dt > 0 ? double(now - before) / dt : 0.0; }
}  // namespace

AutoscaleMonitor::AutoscaleMonitor(const SimConfig& c)
    : scaler_(c.autoscaler_mode, c.num_users, c.target_saturation, c.yaml),
      initial_users_(c.num_users),
      window_(size_t(std::max(1, c.yaml.sat_history_window_size))),
      read_threshold_ms_(c.yaml.sat_read_latency_p95_threshold_ms) {}

ScaleDecision AutoscaleMonitor::tick(const MonitorCounters& now) {
    constexpr double kGiB = double(1ull << 30);
    const double dt = now.t_s - last_.t_s;
    const double cumulative_tps = now.t_s > 0 ? double(now.tokens) / now.t_s : 0.0;
    const double interval_tps = per_s(now.tokens, last_.tokens, dt);
    timeline_.push_back({{"timestamp", now.t_s}, {"throughput_tokens_per_sec", cumulative_tps}});

    // The benchmark's first collect_metrics() only takes the baseline (no sample, qos answers "stable").
    const bool first = !have_baseline_;
    StorageSample s;
    s.t_s = now.t_s;
    s.queue_depth = now.queue_depth;
    if (!first) {
        s.read_gibps = dt > 0 ? double(now.read_bytes - last_.read_bytes) / kGiB / dt : 0.0;
        s.write_gibps = dt > 0 ? double(now.write_bytes - last_.write_bytes) / kGiB / dt : 0.0;
        s.read_p95_ms = p95_ms_since(now.storage_read_lat, last_reads_);
        s.write_p95_ms = p95_ms_since(now.storage_write_lat, last_writes_);
        samples_.push_back(s);
    }
    const double saturation = saturation_level(samples_, window_, read_threshold_ms_);
    const int64_t users_before = scaler_.users();
    ScaleDecision d = scaler_.decide(first, saturation, interval_tps);

    nlohmann::ordered_json row;
    row["t_s"] = now.t_s;
    row["interval_s"] = dt;
    row["users"] = now.active_users;
    row["offered_req_per_s"] = now.offered_req_per_s;
    row["issued_req_per_s"] = per_s(now.issued, last_.issued, dt);
    row["completed_req_per_s"] = per_s(now.completed, last_.completed, dt);
    row["interval_throughput_tokens_per_sec"] = interval_tps;
    row["cumulative_throughput_tokens_per_sec"] = cumulative_tps;
    row["read_gibps"] = s.read_gibps;
    row["write_gibps"] = s.write_gibps;
    row["read_latency_p95_ms"] = s.read_p95_ms;
    row["write_latency_p95_ms"] = s.write_p95_ms;
    row["queue_depth"] = now.queue_depth;
    row["saturation_level"] = saturation;
    row["action"] = d.action;
    row["users_after"] = d.users;
    intervals_.push_back(row);

    if ((d.action == "scale_up" || d.action == "scale_down") && d.users != users_before) {
        nlohmann::ordered_json e;
        e["timestamp"] = iso_now();
        e["mode"] = scaler_.mode();
        e["action"] = d.action;
        e["users"] = d.users;
        e["saturation_level"] = saturation;
        if (first) {
            e["read_latency_p95_ms"] = nullptr;
            e["write_latency_p95_ms"] = nullptr;
        } else {
            e["read_latency_p95_ms"] = s.read_p95_ms;
            e["write_latency_p95_ms"] = s.write_p95_ms;
        }
        e["throughput_tokens_per_sec"] = cumulative_tps;
        e["interval_throughput_tokens_per_sec"] = interval_tps;
        history_.push_back(e);
    } else if (d.action == "stop") {
        nlohmann::ordered_json e;
        e["timestamp"] = iso_now();
        e["mode"] = scaler_.mode();
        e["action"] = "stop";
        e["users"] = d.users;
        e["saturation_level"] = saturation;
        e["peak_throughput_tokens_per_sec"] = scaler_.peak_throughput();
        e["interval_throughput_tokens_per_sec"] = interval_tps;
        history_.push_back(e);
    }

    have_baseline_ = true;
    last_ = now;
    last_.storage_read_lat = last_.storage_write_lat = nullptr;
    last_reads_ = now.storage_read_lat ? now.storage_read_lat->size() : 0;
    last_writes_ = now.storage_write_lat ? now.storage_write_lat->size() : 0;
    return d;
}

nlohmann::ordered_json AutoscaleMonitor::summary_json(int64_t final_users) const {
    nlohmann::ordered_json s;
    s["initial_users"] = initial_users_;
    s["final_users"] = final_users;
    s["total_scale_events"] = history_.size();  // len(scaling_history): the stop entry included
    if (scaler_.mode() == "capacity") {
        s["peak_user_count"] = scaler_.peak_user_count();
        s["peak_throughput_tokens_per_sec"] = scaler_.peak_throughput();
    }
    return s;
}

}  // namespace kvio::serving
