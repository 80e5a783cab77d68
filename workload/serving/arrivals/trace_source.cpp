#include "workload/serving/arrivals/trace_source.h"

#include <cstdio>

#include "workload/serving/arrivals/burstgpt.h"
#include "workload/serving/pyrandom.h"
#include "workload/serving/arrivals/sharegpt.h"

namespace kvio::serving {

namespace {

std::string numbered(const std::string& prefix, const char* fmt, uint64_t n) {
    char b[32];
    std::snprintf(b, sizeof b, fmt, static_cast<unsigned long long>(n));
    return prefix + b;
}

// docs/mlperf-benchmark.md, "Trace replay and special modes": conversations shuffled, consumed turn by turn, reshuffled
// after the last one.
class ShareGptSource : public TraceSource {
public:
    ShareGptSource(const SimConfig& c, ShareGptDataset ds, uint64_t seed)
        : c_(c), ds_(std::move(ds)), rng_(int64_t(seed)) {
        for (size_t i = 0; i < ds_.conversations.size(); ++i) order_.push_back(i);
        rng_.shuffle(order_);
    }
    std::optional<TraceArrival> next(uint64_t seq) override {
        if (ci_ == order_.size()) {
            ++cycles_;
            if (c_.replay_cycles > 0 && cycles_ >= c_.replay_cycles) return std::nullopt;
            rng_.shuffle(order_);
            ci_ = ti_ = 0;
        }
        const ShareGptConversation& conv = ds_.conversations[order_[ci_]];
        const ShareGptTurn& t = conv.turns[ti_];
        if (++ti_ == conv.turns.size()) ti_ = 0, ++ci_;
        TraceArrival a;
        a.delay_s = produced_++ && c_.request_rate > 0 ? 1.0 / c_.request_rate : 0.0;
        a.context_tokens = t.context_tokens;
        a.generate_tokens = t.generate_tokens;
        a.qos = draw_qos(rng_, c_.yaml);
        a.user_id = numbered("dataset_user_", "%llu", seq % uint64_t(c_.num_users));
        a.request_id = numbered("req_" + a.user_id + "_", "%06llu", seq);
        a.turn_number = t.turn_number;
        // Without multi-turn there are no conversations: one key per request (the benchmark's workers all die
        // here on turn_number None, docs/mlperf-benchmark.md, "Upstream bugs kvio fixes or keeps").
        a.cache_key = c_.disable_multi_turn ? numbered(a.user_id + "_req_", "%06llu", seq)
                                            : conv.id + "_turn_" + std::to_string(t.turn_number);
        return a;
    }
    nlohmann::ordered_json stats_json() const override {
        return {{"source", "sharegpt"},
                {"file", c_.dataset_path},
                {"elements_read", ds_.elements_read},
                {"conversations", ds_.conversations.size()},
                {"elements_without_pairs", ds_.without_pairs},
                {"pairs_skipped_not_human_gpt", ds_.pairs_skipped},
                {"turns", ds_.turns},
                {"request_rate", c_.request_rate},
                {"replay_cycles", c_.replay_cycles},
                {"cycles_completed", cycles_},
                {"requests_produced", produced_}};
    }
    double paced_rate() const override { return c_.request_rate; }

private:
    const SimConfig& c_;
    ShareGptDataset ds_;
    PyRandom rng_;
    std::vector<size_t> order_;
    size_t ci_ = 0, ti_ = 0;
    int64_t cycles_ = 0;
    uint64_t produced_ = 0;
};

// docs/mlperf-benchmark.md, "Trace replay and special modes": rows in file order, paced by the timestamps /
// --trace-speedup; no gap between passes.
class BurstGptSource : public TraceSource {
public:
    BurstGptSource(const SimConfig& c, BurstTrace t, uint64_t seed) : c_(c), t_(std::move(t)), rng_(int64_t(seed)) {}
    std::optional<TraceArrival> next(uint64_t seq) override {
        if (i_ == t_.rows.size()) {
            ++cycles_;
            if (c_.replay_cycles > 0 && cycles_ >= c_.replay_cycles) return std::nullopt;
            i_ = 0;
        }
        const size_t row = i_++;
        const BurstRow& r = t_.rows[row];
        TraceArrival a;
        const double dt = row > 0 ? r.timestamp_s - t_.rows[row - 1].timestamp_s : 0.0;
        a.delay_s = dt > 0 && c_.trace_speedup > 0 ? dt / c_.trace_speedup : 0.0;
        a.context_tokens = std::max<int64_t>(1, r.request_tokens);
        a.generate_tokens = r.response_tokens;
        a.qos = draw_qos(rng_, c_.yaml);
        a.user_id = numbered("trace_user_", "%llu", row % 1000);
        a.request_id = a.cache_key = numbered(a.user_id + "_req_", "%04llu", seq);
        ++produced_;
        return a;
    }
    nlohmann::ordered_json stats_json() const override {
        nlohmann::ordered_json files = nlohmann::ordered_json::array();
        for (size_t i = 0; i < t_.files.size(); ++i)
            files.push_back({{"path", t_.files[i]}, {"rows", t_.rows_per_file[i]}});
        return {{"source", "burstgpt"},
                {"files", files},
                {"rows", t_.rows.size()},
                {"trace_span_s", t_.rows.back().timestamp_s - t_.rows.front().timestamp_s},
                {"trace_speedup", c_.trace_speedup},
                {"replay_cycles", c_.replay_cycles},
                {"cycles_completed", cycles_},
                {"requests_produced", produced_}};
    }

private:
    const SimConfig& c_;
    BurstTrace t_;
    PyRandom rng_;
    size_t i_ = 0;
    int64_t cycles_ = 0;
    uint64_t produced_ = 0;
};

ShareGptLimits sharegpt_limits(const SimConfig& c) {
    ShareGptLimits l;  // the benchmark loader's hard-coded values
    const nlohmann::json& raw = c.yaml.raw;
    if (!raw.is_object() || !raw.contains("sharegpt") || !raw["sharegpt"].is_object()) return l;
    const nlohmann::json& s = raw["sharegpt"];
    if (s.contains("max_context_tokens")) l.max_context_tokens = c.yaml.sharegpt_max_context_tokens;
    if (s.contains("max_generation_tokens")) l.max_generation_tokens = c.yaml.sharegpt_max_generation_tokens;
    if (s.contains("chars_per_token_estimate")) l.chars_per_token = c.yaml.sharegpt_chars_per_token;
    return l;
}

}  // namespace

std::unique_ptr<TraceSource> make_trace_source(const SimConfig& c, uint64_t seed) {
    if (!c.dataset_path.empty())
        return std::make_unique<ShareGptSource>(
            c, load_sharegpt(c.dataset_path, c.max_conversations, sharegpt_limits(c)), seed);
    if (c.use_burst_trace) return std::make_unique<BurstGptSource>(c, load_burst_trace(c.burst_trace_path), seed);
    return nullptr;
}

}  // namespace kvio::serving
