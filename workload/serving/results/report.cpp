#include "workload/serving/results/report.h"

#include <cstdio>
#include <string>
#include <vector>

namespace kvio::serving {

namespace {

const char* kRule = "================================================================================\n";

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

double num(const nlohmann::ordered_json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

void latency_line(std::ostream& os, const char* label, const nlohmann::ordered_json& s) {
    os << "  " << label << ": mean " << fmt("%.2f", num(s, "mean")) << " ms, P50 " << fmt("%.2f", num(s, "p50"))
       << ", P95 " << fmt("%.2f", num(s, "p95")) << ", P99 " << fmt("%.2f", num(s, "p99")) << "\n";
}

}  // namespace

void print_banner(std::ostream& os, const SimConfig& c, const workload::ModelConfig& model, uint64_t bytes_per_token,
                  const std::vector<UserProfile>& users, const MultiTierCache& cache, uint64_t seed_used) {
    os << kRule << "INTEGRATED MULTI-USER KV CACHE BENCHMARK - MLPerf Edition (kvio simulate)\n" << kRule;
    os << "Model: " << c.model << " (" << model.num_layers << " layers, " << bytes_per_token << " bytes/token)\n";
    os << "Users: " << c.num_users << ", workers: " << std::min<int64_t>(c.num_users, 500) << "\n";
    os << "Duration: " << c.duration << " s"
       << (c.max_requests ? ", max requests " + std::to_string(c.max_requests) : "") << "\n";
    os << "GPU Memory: " << c.gpu_mem_gb << " GiB x " << c.num_gpus << " -> " << cache.gpu_tier_description() << "\n";
    os << "CPU Memory: " << c.cpu_mem_gb << " GiB\n";
    os << "Storage: " << cache.storage_description() << "\n";
    os << "Generation mode: " << c.generation_mode << ", performance profile: " << c.performance_profile << "\n";
    os << "Features: multi-turn " << (c.disable_multi_turn ? "off" : "on") << ", prefix caching "
       << (c.disable_prefix_caching ? "off" : "on") << ", RAG " << (c.enable_rag ? "on" : "off")
       << (c.prefill_only ? ", prefill-only" : "") << (c.decode_only ? ", decode-only" : "")
       << (c.precondition ? ", precondition" : "")
       << (c.enable_autoscaling
               ? ", autoscaling " + c.autoscaler_mode + " every " + fmt("%g", c.autoscaler_interval_s) + " s"
               : "")
       << "\n";
    if (!c.dataset_path.empty())
        os << "Arrivals: ShareGPT " << c.dataset_path << " (first " << c.max_conversations << " conversations, "
           << (c.request_rate > 0 ? std::to_string(c.request_rate) + " req/s" : std::string("unpaced")) << ", "
           << (c.replay_cycles ? std::to_string(c.replay_cycles) + " passes" : std::string("until the duration"))
           << ")\n";
    else if (c.use_burst_trace)
        os << "Arrivals: BurstGPT " << c.burst_trace_path << " (speedup " << c.trace_speedup << ", "
           << (c.replay_cycles ? std::to_string(c.replay_cycles) + " passes" : std::string("until the duration"))
           << ")\n";
    os << "Seed: " << seed_used << (c.seed ? "" : " (random: no --seed)") << "\n";
    os << "IMPORTANT: All storage latencies are per KV cache BLOCK (one whole entry per read or write).\n";
    std::string table = users_summary(users);
    os << kRule << table << (table.empty() || table.back() == '\n' ? "" : "\n");
    os << kRule << std::flush;
}

std::string stop_note(const nlohmann::ordered_json& r) {
    const auto k = r.find("kvio");
    if (k == r.end() || !k->is_object()) return "";
    // One client: kvio.stop; merged clients: the first client a signal stopped (kvio.clients[].stop).
    std::vector<const nlohmann::ordered_json*> stops;
    if (auto st = k->find("stop"); st != k->end() && st->is_object()) stops.push_back(&*st);
    if (auto cl = k->find("clients"); cl != k->end() && cl->is_array())
        for (const auto& c : *cl)
            if (auto st = c.find("stop"); st != c.end() && st->is_object()) stops.push_back(&*st);
    for (const auto* st : stops) {
        const int sig = st->value("signal", 0);
        if (sig <= 0) continue;
        std::string note = "Stopped by signal " + std::to_string(sig) + " after " +
                           fmt("%.1f", num(*st, "stop_requested_at_s")) + " s";
        const auto flags =
            k->value("config", nlohmann::ordered_json::object()).value("flags", nlohmann::ordered_json::object());
        if (auto d = flags.find("duration"); d != flags.end() && d->is_number())
            note += " of " + fmt("%.0f", d->get<double>()) + " s";
        return note + ": figures cover the part that ran\n";
    }
    return "";
}

void print_report(std::ostream& os, const nlohmann::ordered_json& r) {
    const auto& s = r.at("summary");
    os << kRule << "BENCHMARK RESULTS\n" << kRule << stop_note(r);
    os << "Requests completed: " << r.value("requests_completed", 0) << "\n";
    os << "Total tokens generated: " << r.value("total_tokens_generated", 0) << "\n";
    os << "Elapsed time: " << fmt("%.2f", num(s, "elapsed_time")) << " s\n";
    os << "Avg throughput: " << fmt("%.2f", num(s, "avg_throughput_tokens_per_sec")) << " tokens/s\n";
    os << "Storage throughput: " << fmt("%.2f", num(s, "storage_throughput_tokens_per_sec"))
       << " tokens/s (tokens per summed I/O second)\n";
    os << "Requests/sec: " << fmt("%.2f", num(s, "requests_per_second")) << "\n";
    if (const auto a = s.find("autoscaling_summary"); a != s.end() && a->is_object()) {
        os << "Autoscaling: " << a->value("initial_users", 0) << " -> " << a->value("final_users", 0) << " users, "
           << a->value("total_scale_events", 0) << " events";
        if (a->contains("peak_throughput_tokens_per_sec"))
            os << ", peak " << fmt("%.2f", num(*a, "peak_throughput_tokens_per_sec")) << " tokens/s at "
               << a->value("peak_user_count", 0) << " users";
        os << "\n";
    }
    if (const auto v = r.find("validation"); v != r.end() && v->is_object())
        os << "Validation vs trace: hit rate error " << fmt("%.2f", num(*v, "avg_error_pct")) << " % -> "
           << (v->value("passed", false) ? "PASSED" : "FAILED") << "\n";
    latency_line(os, "End-to-end latency", s.at("end_to_end_latency_ms"));
    latency_line(os, "Storage I/O latency", s.at("storage_io_latency_ms"));
    latency_line(os, "Generation latency", s.at("generation_latency_ms"));

    const auto& cs = s.at("cache_stats");
    os << kRule << "CACHE STATISTICS\n" << kRule;
    os << "Cache hit rate: " << fmt("%.1f", 100 * num(cs, "cache_hit_rate")) << " % (" << cs.value("cache_hits", 0)
       << " hits, " << cs.value("cache_misses", 0) << " misses)\n";
    os << "Entries: GPU " << cs.value("gpu_entries", 0) << ", CPU " << cs.value("cpu_entries", 0) << ", storage "
       << cs.value("storage_entries", 0) << "\n";
    os << "Read: " << fmt("%.2f", num(cs, "total_read_gb"))
       << " GiB, written: " << fmt("%.2f", num(cs, "total_write_gb")) << " GiB, R/W ratio "
       << fmt("%.2f", num(cs, "read_write_ratio")) << "\n";
    os << "  (per tier: direct ops and demotions; the totals above count direct ops only)\n";
    for (const char* t : {"gpu", "cpu", "storage"}) {
        std::string n = t;
        os << "  " << n << ": read " << fmt("%.2f", num(cs, ("tier_" + n + "_kv_bytes_read_gb").c_str())) << " GiB ("
           << fmt("%.3f", num(cs, ("tier_" + n + "_read_bandwidth_gbps").c_str())) << " GiB/s), written "
           << fmt("%.2f", num(cs, ("tier_" + n + "_kv_bytes_written_gb").c_str())) << " GiB ("
           << fmt("%.3f", num(cs, ("tier_" + n + "_write_bandwidth_gbps").c_str())) << " GiB/s)\n";
    }
    for (const char* k : {"storage_read_device_p95_ms", "storage_read_host_p95_ms", "storage_write_device_p95_ms",
                          "storage_write_host_p95_ms"})
        if (cs.contains(k)) os << "  " << k << ": " << fmt("%.2f", num(cs, k)) << "\n";
    if (r.contains("kvio") && r["kvio"].contains("cache")) {
        const auto& kc = r["kvio"]["cache"];
        uint64_t fw = kc.value("failed_writes", uint64_t(0)), fr = kc.value("failed_reads", uint64_t(0));
        if (fw || fr)
            os << "WARNING: " << fw << " writes and " << fr
               << " reads failed (not counted as done); first error: " << kc.value("first_error", std::string("?"))
               << "\n";
        if (const uint64_t g = kc.value("gather_fallbacks", uint64_t(0)))
            os << "NOTE: " << g << " storage write chunks took the slower gather path (iovecs per 4 KiB block): all "
               << (kc.contains("noise_pool_copies") ? std::to_string(kc.value("noise_pool_copies", uint64_t(0))) + " "
                                                    : "")
               << "noise-pool copies were in use\n";
    }
    const auto& mt = s.at("multi_turn_stats");
    os << "Multi-turn: " << mt.value("cache_hits", 0) << " hits, " << mt.value("cache_misses", 0) << " misses\n";

    os << kRule << "QOS METRICS\n" << kRule;
    for (auto it = s.at("qos_metrics").begin(); it != s.at("qos_metrics").end(); ++it) {
        const auto& q = it.value();
        if (q.value("no_data", false)) {
            os << "  " << it.key() << ": no data\n";
            continue;
        }
        const auto& sla = q.at("sla");
        os << "  " << it.key() << ": " << q.value("total_requests", 0) << " requests, P95 "
           << fmt("%.2f", num(sla, "actual_p95_ms")) << " ms (target " << fmt("%.0f", num(sla, "target_p95_ms"))
           << "), compliance " << fmt("%.1f", 100 * num(sla, "compliance")) << " % "
           << (sla.value("met", false) ? "MET" : "NOT MET") << "\n";
    }

    os << kRule << "STORAGE PERFORMANCE ASSESSMENT\n" << kRule;
    if (auto h = cs.find("storage_health"); h != cs.end() && h->is_object()) {
        os << "Overall: " << h->value("overall_status", std::string("?")) << " (" << h->value("passed_count", 0) << "/"
           << h->value("total_count", 0) << " criteria)\n";
        if (auto cr = h->find("criteria"); cr != h->end() && cr->is_array())
            for (const auto& c : *cr)
                os << "  " << (c.value("passed", false) ? "PASS" : "FAIL") << "  " << format_criterion(c)
                   << (c.contains("basis") ? " [" + c.value("basis", std::string()) + "]" : std::string()) << "\n";
    }
    os << "(The MLCommons maintainers say these criteria are not part of the benchmark, #624.)\n"
       << kRule << std::flush;
}

std::string format_criterion(const nlohmann::ordered_json& c) {
    const std::string unit = c.value("unit", std::string());
    auto text = [&](const char* key) {
        if (!c.contains(key)) return std::string("None");
        const auto& v = c[key];
        if (!v.is_number()) return v.is_string() ? v.get<std::string>() : v.dump();
        char b[64];
        if (unit == "ratio")
            std::snprintf(b, sizeof b, "%.1f%%", v.get<double>() * 100);
        else
            std::snprintf(b, sizeof b, "%.2f%s", v.get<double>(), unit.c_str());
        return std::string(b);
    };
    return c.value("name", std::string()) + ": " + text("actual") + " (target: " + text("target") + ")";
}

}  // namespace kvio::serving
