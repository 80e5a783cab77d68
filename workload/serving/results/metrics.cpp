#include "workload/serving/results/metrics.h"

#include "workload/serving/results/stats_util.h"

namespace kvio::serving {

void RunMetrics::record(const RequestRecord& r) {
    const InferenceRequest& q = *r.request;
    std::lock_guard lk(mu_);
    ++t_.completed;
    t_.tokens += uint64_t(q.generate_tokens);
    t_.storage_total += r.storage_s;
    t_.generation_total += r.generation_s;
    t_.e2e.push_back(r.e2e_s);
    t_.storage.push_back(r.storage_s);
    t_.generation.push_back(r.generation_s);
    if (r.prefill_s) t_.prefill.push_back(*r.prefill_s);
    if (r.decode_s) t_.decode.push_back(*r.decode_s);
    rows_.push_back({q.user_id, q.qos, q.phase, q.turn_number, q.is_rag, q.context_tokens, q.generate_tokens, r.reads,
                     r.decode_reads, r.writes, r.failed_ops, r.bytes_read, r.bytes_written});
}

void RunMetrics::count_multi_turn(bool hit) {
    std::lock_guard lk(mu_);
    ++(hit ? t_.mt_hits : t_.mt_misses);
}

uint64_t RunMetrics::completed() const {
    std::lock_guard lk(mu_);
    return t_.completed;
}

uint64_t RunMetrics::tokens() const {
    std::lock_guard lk(mu_);
    return t_.tokens;
}

nlohmann::ordered_json top_level_json(const RequestTotals& t, const nlohmann::ordered_json& seed) {
    nlohmann::ordered_json j;
    j["requests_completed"] = t.completed;
    j["total_tokens_generated"] = t.tokens;
    j["total_storage_io_latency"] = t.storage_total;
    j["total_generation_latency"] = t.generation_total;
    j["end_to_end_latencies"] = t.e2e;
    j["storage_latencies"] = t.storage;
    j["generation_latencies"] = t.generation;
    j["throughput_timeline"] = nlohmann::ordered_json::array();
    j["prefill_latencies"] = t.prefill;
    j["decode_latencies"] = t.decode;
    j["multi_turn_cache_hits"] = t.mt_hits;
    j["multi_turn_cache_misses"] = t.mt_misses;
    j["seed"] = seed;
    return j;
}

nlohmann::ordered_json summary_head_json(const RequestTotals& t, double elapsed_s) {
    nlohmann::ordered_json s;
    s["total_requests"] = t.completed;
    s["total_tokens"] = t.tokens;
    s["elapsed_time"] = elapsed_s;
    s["avg_throughput_tokens_per_sec"] = elapsed_s > 0 ? double(t.tokens) / elapsed_s : 0.0;
    s["total_storage_io_time"] = t.storage_total;
    s["storage_throughput_tokens_per_sec"] = t.storage_total > 0 ? double(t.tokens) / t.storage_total : 0.0;
    s["requests_per_second"] = elapsed_s > 0 ? double(t.completed) / elapsed_s : 0.0;
    s["end_to_end_latency_ms"] = latency_summary_ms(t.e2e);
    s["storage_io_latency_ms"] = latency_summary_ms(t.storage);
    s["generation_latency_ms"] = latency_summary_ms(t.generation);
    return s;
}

nlohmann::ordered_json multi_turn_json(const RequestTotals& t) {
    uint64_t n = t.mt_hits + t.mt_misses;
    return {
        {"cache_hits", t.mt_hits}, {"cache_misses", t.mt_misses}, {"hit_rate", double(t.mt_hits) / double(n ? n : 1)}};
}

nlohmann::ordered_json RunMetrics::top_level_json(std::optional<int64_t> seed) const {
    std::lock_guard lk(mu_);
    return serving::top_level_json(t_, seed ? nlohmann::ordered_json(*seed) : nlohmann::ordered_json(nullptr));
}

nlohmann::ordered_json RunMetrics::summary_head_json(double elapsed_s) const {
    std::lock_guard lk(mu_);
    return serving::summary_head_json(t_, elapsed_s);
}

nlohmann::ordered_json RunMetrics::multi_turn_json() const {
    std::lock_guard lk(mu_);
    return serving::multi_turn_json(t_);
}

nlohmann::ordered_json RunMetrics::requests_json() const {
    std::lock_guard lk(mu_);
    nlohmann::ordered_json user = nlohmann::ordered_json::array(), qos = user, phase = user, turn = user, rag = user,
                           ctx = user, gen = user, reads = user, dreads = user, writes = user, failed = user, br = user,
                           bw = user;
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
    return {{"user_id", user},        {"qos", qos},           {"phase", phase},
            {"turn", turn},           {"is_rag", rag},        {"context_tokens", ctx},
            {"generate_tokens", gen}, {"reads", reads},       {"decode_reads", dreads},
            {"writes", writes},       {"failed_ops", failed}, {"bytes_read", br},
            {"bytes_written", bw}};
}

}  // namespace kvio::serving
