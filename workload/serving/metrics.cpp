#include "workload/serving/metrics.h"

#include "workload/serving/stats_util.h"

namespace kvio::serving {

void RunMetrics::record(const RequestRecord& r) {
    const InferenceRequest& q = *r.request;
    std::lock_guard lk(mu_);
    ++completed_;
    tokens_ += uint64_t(q.generate_tokens);
    storage_total_ += r.storage_s;
    generation_total_ += r.generation_s;
    e2e_.push_back(r.e2e_s);
    storage_.push_back(r.storage_s);
    generation_.push_back(r.generation_s);
    if (r.prefill_s) prefill_.push_back(*r.prefill_s);
    if (r.decode_s) decode_.push_back(*r.decode_s);
    mt_hits_ += r.multi_turn_hits;
    mt_misses_ += r.multi_turn_misses;
    rows_.push_back({q.user_id, q.qos, q.phase, q.turn_number, q.is_rag, q.context_tokens, q.generate_tokens, r.reads,
                     r.decode_reads, r.writes, r.failed_ops, r.bytes_read, r.bytes_written});
}

uint64_t RunMetrics::completed() const {
    std::lock_guard lk(mu_);
    return completed_;
}

uint64_t RunMetrics::tokens() const {
    std::lock_guard lk(mu_);
    return tokens_;
}

nlohmann::ordered_json RunMetrics::top_level_json(std::optional<int64_t> seed) const {
    std::lock_guard lk(mu_);
    nlohmann::ordered_json j;
    j["requests_completed"] = completed_;
    j["total_tokens_generated"] = tokens_;
    j["total_storage_io_latency"] = storage_total_;
    j["total_generation_latency"] = generation_total_;
    j["end_to_end_latencies"] = e2e_;
    j["storage_latencies"] = storage_;
    j["generation_latencies"] = generation_;
    j["throughput_timeline"] = nlohmann::ordered_json::array();
    j["prefill_latencies"] = prefill_;
    j["decode_latencies"] = decode_;
    j["multi_turn_cache_hits"] = mt_hits_;
    j["multi_turn_cache_misses"] = mt_misses_;
    j["seed"] = seed ? nlohmann::ordered_json(*seed) : nlohmann::ordered_json(nullptr);
    return j;
}

nlohmann::ordered_json RunMetrics::summary_head_json(double elapsed_s) const {
    std::lock_guard lk(mu_);
    nlohmann::ordered_json s;
    s["total_requests"] = completed_;
    s["total_tokens"] = tokens_;
    s["elapsed_time"] = elapsed_s;
    s["avg_throughput_tokens_per_sec"] = elapsed_s > 0 ? double(tokens_) / elapsed_s : 0.0;
    s["total_storage_io_time"] = storage_total_;
    s["storage_throughput_tokens_per_sec"] = storage_total_ > 0 ? double(tokens_) / storage_total_ : 0.0;
    s["requests_per_second"] = elapsed_s > 0 ? double(completed_) / elapsed_s : 0.0;
    s["end_to_end_latency_ms"] = latency_summary_ms(e2e_);
    s["storage_io_latency_ms"] = latency_summary_ms(storage_);
    s["generation_latency_ms"] = latency_summary_ms(generation_);
    return s;
}

nlohmann::ordered_json RunMetrics::multi_turn_json() const {
    std::lock_guard lk(mu_);
    uint64_t n = mt_hits_ + mt_misses_;
    return {{"cache_hits", mt_hits_},
            {"cache_misses", mt_misses_},
            {"hit_rate", double(mt_hits_) / double(n ? n : 1)}};
}

nlohmann::ordered_json RunMetrics::requests_json() const {
    std::lock_guard lk(mu_);
    nlohmann::ordered_json user = nlohmann::ordered_json::array(), qos = user, phase = user, turn = user, rag = user,
                           ctx = user, gen = user, reads = user, dreads = user, writes = user, failed = user,
                           br = user, bw = user;
    for (const Row& r : rows_) {
        user.push_back(r.user_id);
        qos.push_back(qos_name(r.qos));
        phase.push_back(phase_name(r.phase));
        turn.push_back(r.turn);
        rag.push_back(r.is_rag);
        ctx.push_back(r.context_tokens);
        gen.push_back(r.generate_tokens);
        reads.push_back(r.reads);
        dreads.push_back(r.decode_reads);
        writes.push_back(r.writes);
        failed.push_back(r.failed_ops);
        br.push_back(r.bytes_read);
        bw.push_back(r.bytes_written);
    }
    return {{"user_id", user},         {"qos", qos},           {"phase", phase},     {"turn", turn},
            {"is_rag", rag},           {"context_tokens", ctx}, {"generate_tokens", gen}, {"reads", reads},
            {"decode_reads", dreads},  {"writes", writes},     {"failed_ops", failed}, {"bytes_read", br},
            {"bytes_written", bw}};
}

}  // namespace kvio::serving
