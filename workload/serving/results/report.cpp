#include "workload/serving/results/report.h"

#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <sstream>
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
    if (!cache.remote_description().empty()) os << "Remote: " << cache.remote_description() << "\n";
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
    if (!c.io_trace_log.empty())
        os << "  - I/O TRACE MODE: ACTIVE - writing trace to " << c.io_trace_log
           << "\n    (No real GPU/CPU/NVMe I/O will be performed)\n";
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

namespace {

using J = nlohmann::ordered_json;

const J& obj(const J& j, const char* key) {
    static const J empty = J::object();
    auto it = j.find(key);
    return it != j.end() && it->is_object() ? *it : empty;
}

bool has_num(const J& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number();
}

std::string mib(double bytes) { return fmt("%.1f", bytes / 1048576.0) + "MiB"; }

/// "  Mean: X ms" / P50 / P95 / P99 lines of a summary.*_latency_ms object, as the benchmark prints them.
void latency_block(std::ostream& os, const J& l, bool p99 = true) {
    os << "  Mean: " << fmt("%.2f", num(l, "mean")) << " ms\n";
    os << "  P50:  " << fmt("%.2f", num(l, "p50")) << " ms\n";
    os << "  P95:  " << fmt("%.2f", num(l, "p95")) << " ms\n";
    if (p99) os << "  P99:  " << fmt("%.2f", num(l, "p99")) << " ms\n";
}

/// The per-block note and the block-size statistics of the live cache entries (kvio.cache.entry_sizes; the average
/// written entry when absent, as the benchmark falls back to).
void block_context(std::ostream& os, const J& r, const J& cs) {
    const J& kv = obj(r, "kvio");
    const double bpt = num(obj(kv, "model"), "bytes_per_token");
    os << "\nIMPORTANT: All storage latencies below are measured per KV cache BLOCK,\n"
          "not per token or per disk page.  Each block holds the full KV state for\n"
          "one request (all layers, all heads, full sequence length).\n";
    if (bpt > 0)
        os << "  Model KV bytes/token: " << fmt("%.0f", bpt) << " bytes (" << fmt("%.1f", bpt / 1024) << "KiB)\n";
    const J& es = obj(obj(kv, "cache"), "entry_sizes");
    if (num(es, "count") > 0) {
        os << "  Entries in cache: " << es.value("count", uint64_t(0)) << "\n";
        os << "  Block size min:   " << mib(num(es, "min_bytes")) << "\n";
        os << "  Block size mean:  " << mib(num(es, "mean_bytes")) << "\n";
        os << "  Block size P95:   " << mib(num(es, "p95_bytes")) << "\n";
        os << "  Block size max:   " << mib(num(es, "max_bytes")) << "\n";
    } else if (num(cs, "write_iops") > 0) {
        os << "  Avg block size:   " << mib(num(cs, "total_write_bytes") / num(cs, "write_iops")) << " (from "
           << fmt("%.0f", num(cs, "write_iops")) << " writes)\n";
    }
    os << "  Compare latencies against block sizes, not against 4KiB page I/O.\n";
}

/// OVERALL PERFORMANCE and the three latency sections.
void performance_sections(std::ostream& os, const J& r, const J& s, double ms_per_token) {
    os << "\n### OVERALL PERFORMANCE ###\n";
    os << "Requests Completed: " << r.value("requests_completed", 0) << "\n";
    os << "Total Tokens Generated: " << r.value("total_tokens_generated", 0) << "\n";
    os << "Throughput (wall-clock): " << fmt("%.2f", num(s, "avg_throughput_tokens_per_sec")) << " tokens/sec\n";
    os << "Throughput (storage I/O): " << fmt("%.2f", num(s, "storage_throughput_tokens_per_sec")) << " tokens/sec\n";
    os << "Requests/sec: " << fmt("%.2f", num(s, "requests_per_second")) << "\n";
    os << "Elapsed time: " << fmt("%.2f", num(s, "elapsed_time")) << " s\n";
    os << "\n### END-TO-END LATENCY (Queue Wait + Storage I/O + Generation) ###\n";
    latency_block(os, obj(s, "end_to_end_latency_ms"));
    os << "\n### PER-REQUEST STORAGE LATENCY (All I/O ops for one request) ###\n";
    latency_block(os, obj(s, "storage_io_latency_ms"));
    os << "  (= 1 prefill write + N decode reads per request)\n";
    if (ms_per_token > 0) {
        os << "\n### TOKEN GENERATION LATENCY (Simulated @ " << fmt("%.1f", ms_per_token) << "ms/token) ###\n";
        latency_block(os, obj(s, "generation_latency_ms"), false);
    }
}

/// STORAGE PERFORMANCE, CACHE TIER DISTRIBUTION, TIER-SPECIFIC KV BYTES and STORAGE KV BANDWIDTH.
void storage_sections(std::ostream& os, const J& cs, double duration_s) {
    os << "\n### STORAGE PERFORMANCE ###\n";
    os << "  Cache Hit Rate: " << fmt("%.1f", 100 * num(cs, "cache_hit_rate")) << "%\n";
    os << "  Total Read: " << fmt("%.2f", num(cs, "total_read_gb")) << "GiB\n";
    os << "  Total Write: " << fmt("%.2f", num(cs, "total_write_gb")) << "GiB\n";
    const double rw = num(cs, "read_write_ratio");
    os << "  Read/Write Ratio: "
       << (rw > 1e9    ? std::string("∞ (read-only)")
           : rw < 1e-9 ? std::string("0 (write-only)")
                       : fmt("%.2f", rw))
       << "\n";
    if (duration_s > 0) {
        os << "  Storage KV Read Operations/sec: " << fmt("%.2f", num(cs, "read_iops") / duration_s) << "\n";
        os << "  Storage KV Write Operations/sec: " << fmt("%.2f", num(cs, "write_iops") / duration_s) << "\n";
    }
    os << "\n### CACHE TIER DISTRIBUTION ###\n";
    os << "  GPU Entries: " << cs.value("gpu_entries", 0) << " (" << fmt("%.2f", num(cs, "gpu_memory_used_gb"))
       << "GiB)\n";
    os << "  CPU Entries: " << cs.value("cpu_entries", 0) << " (" << fmt("%.2f", num(cs, "cpu_memory_used_gb"))
       << "GiB)\n";
    os << "  Storage Entries: " << cs.value("storage_entries", 0) << "\n";
    if (cs.contains("remote_entries"))
        os << "  Remote Entries: " << cs.value("remote_entries", 0) << " ("
           << fmt("%.2f", num(cs, "remote_memory_used_gb")) << "GiB)\n";
    static const char* kTiers[4][2] = {{"gpu", "GPU"}, {"cpu", "CPU"}, {"storage", "Storage"}, {"remote", "Remote"}};
    os << "\n### TIER-SPECIFIC KV BYTES ###\n";
    for (const auto& t : kTiers)
        for (const char* dir : {"written", "read"}) {
            const std::string key = std::string("tier_") + t[0] + "_kv_bytes_" + dir + "_gb";
            if (num(cs, key.c_str()) > 0)
                os << "  " << t[1] << " KV Bytes " << (dir[0] == 'w' ? "Written" : "Read") << ": "
                   << fmt("%.2f", num(cs, key.c_str())) << "GiB\n";
        }
    os << "\n### STORAGE KV BANDWIDTH ###\n";
    for (const auto& t : kTiers)
        for (const char* dir : {"read", "write"}) {
            const std::string key = std::string("tier_") + t[0] + "_" + dir + "_bandwidth_gbps";
            if (num(cs, key.c_str()) > 0)
                os << "  " << t[1] << " KV " << (dir[0] == 'r' ? "Read" : "Write")
                   << " Bandwidth: " << fmt("%.2f", num(cs, key.c_str())) << "GiB/s\n";
        }
}

/// TIER-SPECIFIC LATENCIES (the P95 of every tier and direction present) and STORAGE TIER LATENCY BREAKDOWN.
void tier_latency_sections(std::ostream& os, const J& cs) {
    os << "\n### TIER-SPECIFIC LATENCIES (Total = Host + Device) ###\n";
    for (const char* tier : {"gpu", "cpu", "storage", "remote"})
        for (const char* op : {"read", "write"}) {
            const std::string key = std::string(tier) + "_" + op + "_p95_ms";
            if (!has_num(cs, key.c_str())) continue;
            const std::string label = tier[0] == 's'   ? "Storage"
                                      : tier[0] == 'g' ? "GPU"
                                      : tier[0] == 'r' ? "Remote"
                                                       : "CPU";
            os << "  " << label << " " << (op[0] == 'r' ? "Read" : "Write")
               << " P95 (Total): " << fmt("%.2f", num(cs, key.c_str())) << " ms\n";
        }
    for (const char* op : {"read", "write"}) {  // the remote tier's spread (kvio: a network hop has a tail)
        const std::string p = std::string("remote_") + op;
        if (!has_num(cs, (p + "_p50_ms").c_str())) continue;
        os << "  Remote " << (op[0] == 'r' ? "Read" : "Write")
           << " P50/P95/P99: " << fmt("%.2f", num(cs, (p + "_p50_ms").c_str())) << " / "
           << fmt("%.2f", num(cs, (p + "_p95_ms").c_str())) << " / " << fmt("%.2f", num(cs, (p + "_p99_ms").c_str()))
           << " ms\n";
    }
    os << "\n### STORAGE TIER LATENCY BREAKDOWN (Device = Disk I/O, Host = Serialization) ###\n";
    for (const std::string op : {"read", "write"}) {
        const std::string dev = "storage_" + op + "_device_p95_ms", host = "storage_" + op + "_host_p95_ms",
                          total = "storage_" + op + "_p95_ms";
        if (!has_num(cs, dev.c_str())) continue;
        os << "  Storage " << (op == "read" ? "Read" : "Write") << ":\n";
        os << "    - Device P95 (Disk I/O): " << fmt("%.2f", num(cs, dev.c_str())) << " ms\n";
        if (has_num(cs, host.c_str()))
            os << "    - Host P95 (Serialization): " << fmt("%.2f", num(cs, host.c_str())) << " ms\n";
        if (has_num(cs, total.c_str())) os << "    - Total P95: " << fmt("%.2f", num(cs, total.c_str())) << " ms\n";
    }
}

/// CACHE TYPE BREAKDOWNS, PREFIX CACHING and MULTI-TURN CONVERSATIONS (the last two when they had hits).
void cache_type_sections(std::ostream& os, const J& s, const J& cs) {
    os << "\n### CACHE TYPE BREAKDOWNS ###\n";
    os << "  System Prompt Hits: " << cs.value("system_prompt_hits", 0) << "\n";
    os << "  Common Phrase Hits: " << cs.value("common_phrase_hits", 0) << "\n";
    os << "  User Cache Hits: " << cs.value("user_cache_hits", 0) << "\n";
    os << "  Multi-turn Hits: " << cs.value("multi_turn_hits", 0) << "\n";
    const J& pc = obj(s, "prefix_cache_stats");
    if (num(pc, "prefix_hits") > 0) {
        os << "\n### PREFIX CACHING ###\n";
        os << "  Prefix Hits: " << pc.value("prefix_hits", 0) << "\n";
        os << "  Prefix Misses: " << pc.value("prefix_misses", 0) << "\n";
        os << "  System Prompt Reuse: " << pc.value("system_prompt_reuse", 0) << "\n";
        os << "  Bytes Saved: " << fmt("%.2f", num(pc, "bytes_saved") / 1073741824.0) << "GiB\n";
    }
    const J& mt = obj(s, "multi_turn_stats");
    if (num(mt, "cache_hits") > 0) {
        os << "\n### MULTI-TURN CONVERSATIONS ###\n";
        os << "  Multi-turn Cache Hits: " << mt.value("cache_hits", 0) << "\n";
        os << "  Multi-turn Cache Misses: " << mt.value("cache_misses", 0) << "\n";
        os << "  Multi-turn Hit Rate: " << fmt("%.1f", 100 * num(mt, "hit_rate")) << "%\n";
    }
}

/// QOS LATENCY METRICS (not with the throughput profile, as the benchmark), AUTOSCALING and VALIDATION.
void qos_autoscaling_validation(std::ostream& os, const J& r, const J& s, const std::string& profile) {
    if (profile != "throughput") {
        os << "\n### QOS LATENCY METRICS (Informational - includes simulated generation) ###\n";
        for (const auto& [level, q] : obj(s, "qos_metrics").items()) {
            if (q.value("no_data", false)) continue;
            std::string up = level;
            for (auto& ch : up) ch = char(std::toupper(static_cast<unsigned char>(ch)));
            os << "\n  " << up << ":\n";
            os << "    Requests: " << q.value("total_requests", 0) << "\n";
            os << "    Latency P95: " << fmt("%.2f", num(obj(q, "latency_ms"), "p95")) << " ms\n";
            os << "    Latency P99: " << fmt("%.2f", num(obj(q, "latency_ms"), "p99")) << " ms\n";
            if (const J& sla = obj(q, "sla"); !sla.empty())
                os << "    SLA Met: " << (sla.value("met", false) ? "[OK]" : "[X]")
                   << " (compliance: " << fmt("%.1f", 100 * num(sla, "compliance")) << "%)\n";
        }
    }
    if (const J& a = obj(s, "autoscaling_summary"); !a.empty()) {
        os << "\n### AUTOSCALING ###\n";
        os << "  Scaling Events: " << a.value("total_scale_events", 0) << "\n";
        os << "  Final User Count: " << a.value("final_users", 0) << "\n";
        if (a.contains("peak_throughput_tokens_per_sec"))
            os << "  Peak Capacity Found: " << fmt("%.2f", num(a, "peak_throughput_tokens_per_sec")) << " tok/s at "
               << a.value("peak_user_count", 0) << " users\n";
    }
    if (const J& v = obj(r, "validation"); !v.empty()) {
        os << "\n### VALIDATION ###\n";
        os << "  Validation: " << (v.value("passed", false) ? "PASSED [OK]" : "FAILED [X]") << "\n";
        os << "  Average Error: " << fmt("%.2f", num(v, "avg_error_pct")) << "%\n";
    }
}

/// "N <what>" with an s after `what` unless N is 1.
std::string counted(uint64_t n, const std::string& what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

/// kvio's own lines: failed ops, gather fallbacks, warnings; then the assessment the benchmark no longer prints.
void kvio_sections(std::ostream& os, const J& r, const J& cs) {
    const J& kc = obj(obj(r, "kvio"), "cache");
    const uint64_t fw = kc.value("failed_writes", uint64_t(0)), fr = kc.value("failed_reads", uint64_t(0)),
                   bad = kc.value("corrupted_reads", uint64_t(0));
    // Each kind with its own first error (a write's ENOSPC does not explain a read's EIO).
    auto first = [&](const char* key) { return kc.value(key, kc.value("first_error", std::string("?"))); };
    if (fw) os << "\nWARNING: " << failed_writes_phrase(kc) << " (not counted as done)\n";
    if (fr > bad)
        os << (fw ? "" : "\n") << "WARNING: " << fr - bad
           << " reads failed (not counted as done); first error: " << first("first_read_error") << "\n";
    if (bad)
        os << (fw || fr > bad ? "" : "\n") << "ERROR: " << bad
           << " reads returned other bytes than were written (--verify-reads); first: " << first("first_corruption")
           << "\n";
    else if (const J& v = obj(kc, "verify_reads"); !v.empty())
        os << "\nRead check (--verify-reads): " << v.value("checked_bytes", uint64_t(0))
           << " bytes read back from storage were the bytes written\n";
    // Ops in flight at the end stop at their next transfer: on a stalled disk they can be all the storage did.
    if (const uint64_t cut = kc.value("cut_ops", uint64_t(0)))
        os << "NOTE: " << cut << " cache ops were cut at the end of the run (in flight when it stopped; "
           << kc.value("cut_bytes_moved", uint64_t(0))
           << " bytes moved by them): counted in kvio.cache.cut_ops, not as done\n";
    if (const uint64_t g = kc.value("gather_fallbacks", uint64_t(0)))
        os << "NOTE: " << g << " storage write chunks took the slower gather path (iovecs per 4 KiB block): all "
           << (kc.contains("noise_pool_copies") ? std::to_string(kc.value("noise_pool_copies", uint64_t(0))) + " " : "")
           << "noise-pool copies were in use\n";
    const J& h = obj(cs, "storage_health");
    if (h.empty()) return;
    os << "\n### STORAGE PERFORMANCE ASSESSMENT (informational: not part of MLPerf Storage v3.0) ###\n";
    os << "  Overall: " << h.value("overall_status", std::string("?")) << " (" << h.value("passed_count", 0) << "/"
       << h.value("total_count", 0) << " criteria)\n";
    if (auto cr = h.find("criteria"); cr != h.end() && cr->is_array())
        for (const auto& c : *cr)
            os << "  " << (c.value("passed", false) ? "[OK]" : "[X]") << " " << format_criterion(c)
               << (c.contains("basis") ? " [" + c.value("basis", std::string()) + "]" : std::string()) << "\n";
}

/// The bucket [lo, hi) holding the p-th percentile of kvio.trace/1 buckets [[lo, hi, count], ...]: the first whose
/// cumulative count reaches p % of the total (the benchmark's _hist_percentile on its bpftrace buckets).
std::pair<uint64_t, uint64_t> bucket_at(const J& buckets, double p, uint64_t total) {
    uint64_t cum = 0;
    for (const auto& b : buckets) {
        cum += b.at(2).get<uint64_t>();
        if (double(cum) * 100 >= p * double(total)) return {b.at(0).get<uint64_t>(), b.at(1).get<uint64_t>()};
    }
    return {0, 0};
}

/// One histogram as the benchmark prints it: samples and the buckets of the asked percentiles, values divided by
/// `div` (ns -> us: 1000; bytes -> KiB: 1024).
void hist_lines(std::ostream& os, const J& hists, const char* name, const char* label, const char* unit,
                std::initializer_list<double> ps, double div) {
    const J& h = obj(hists, name);
    auto b = h.find("buckets");
    uint64_t total = 0;
    if (b != h.end() && b->is_array())
        for (const auto& x : *b) total += x.at(2).get<uint64_t>();
    if (total == 0) return;
    os << "\n  " << label << ":\n    Samples: " << total << "\n";
    for (double p : ps) {
        auto [lo, hi] = bucket_at(*b, p, total);
        os << "    P" << fmt("%.0f", p) << ": [" << fmt("%.0f", double(lo) / div) << ", "
           << fmt("%.0f", double(hi) / div) << ")" << unit << "\n";
    }
}

/// With --enable-latency-tracing: DEVICE LATENCY TRACING from `device_latency_tracing` (kvio.trace/1 histograms of
/// the cache's disk and the process side) and GENERATED FIO WORKLOAD (`fio_workload`), as the benchmark prints them.
void device_tracing_sections(std::ostream& os, const J& r) {
    const J& t = obj(r, "device_latency_tracing");
    if (!t.empty()) {
        os << "\n### DEVICE LATENCY TRACING (kvio trace) ###\n";
        const std::string disk = t.value("device", std::string());
        os << "  Device: " << disk << "\n";
        J dev = J::object();
        if (auto d = t.find("devices"); d != t.end() && d->is_array())
            for (const auto& x : *d)
                if (x.value("disk", std::string()) == disk) dev = x.value("histograms", J::object());
        const J& proc = obj(t, "process");
        hist_lines(os, dev, "d2c_read", "D2C Read (device hardware time)", " us", {50, 95, 99}, 1000);
        hist_lines(os, dev, "d2c_write", "D2C Write (device hardware time)", " us", {50, 95, 99}, 1000);
        hist_lines(os, dev, "q2d_read", "Q2D Read (I/O scheduler queue)", " us", {50, 95, 99}, 1000);
        hist_lines(os, dev, "q2d_write", "Q2D Write (I/O scheduler queue)", " us", {50, 95, 99}, 1000);
        hist_lines(os, proc, "vfs_read", "VFS Read (application-visible)", " us", {50, 95, 99}, 1000);
        hist_lines(os, proc, "vfs_write", "VFS Write (application-visible)", " us", {50, 95, 99}, 1000);
        hist_lines(os, proc, "fsync", "fsync (device flush)", " us", {50, 95, 99}, 1000);
        hist_lines(os, proc, "write_fsync_gap", "Write-to-fsync gap (CPU serialization)", " us", {50, 95, 99}, 1000);
        hist_lines(os, proc, "fadvise_read_gap", "fadvise-to-read gap (cache drop)", " us", {50, 95, 99}, 1000);
        hist_lines(os, dev, "bssplit_read", "Block Size Distribution (Reads)", "KiB", {50}, 1024);
        hist_lines(os, dev, "bssplit_write", "Block Size Distribution (Writes)", "KiB", {50}, 1024);
        hist_lines(os, dev, "qd_read", "Queue Depth at Dispatch (Reads)", "", {50, 95}, 1);
        hist_lines(os, dev, "qd_write", "Queue Depth at Dispatch (Writes)", "", {50, 95}, 1);
    }
    if (auto f = r.find("fio_workload"); f != r.end() && f->is_string()) {
        os << "\n### GENERATED FIO WORKLOAD ###\n";
        std::istringstream in(f->get<std::string>());
        for (std::string line; std::getline(in, line);) os << "  " << line << "\n";
    }
}

}  // namespace

void print_report(std::ostream& os, const nlohmann::ordered_json& r) {
    const J& s = obj(r, "summary");
    const J& cs = obj(s, "cache_stats");
    const J& kv = obj(r, "kvio");
    const J& flags = obj(obj(kv, "config"), "flags");
    const double ms_per_token = num(obj(kv, "model"), "generation_ms_per_token");
    os << kRule << "BENCHMARK RESULTS - MLPerf KV Cache Storage Benchmark (kvio simulate)\n";
    os << "Generation Mode: " << flags.value("generation_mode", std::string("?")) << " (" << fmt("%.1f", ms_per_token)
       << "ms/token)\n"
       << kRule << stop_note(r);
    block_context(os, r, cs);
    performance_sections(os, r, s, ms_per_token);
    storage_sections(os, cs, num(flags, "duration"));
    tier_latency_sections(os, cs);
    cache_type_sections(os, s, cs);
    qos_autoscaling_validation(os, r, s, flags.value("performance_profile", std::string("latency")));
    kvio_sections(os, r, cs);
    device_tracing_sections(os, r);
    os << "\n" << kRule << "NOTES:\n";
    os << (ms_per_token > 0 ? "  - End-to-end latency includes simulated GPU inference\n"
                            : "  - Pure storage I/O benchmark (no generation simulation)\n");
    os << kRule << std::flush;
}

std::string failed_writes_phrase(const J& kc) {
    const uint64_t failed = kc.value("failed_writes", uint64_t(0));
    if (!failed) return "";
    const bool split = kc.contains("capacity_refusals");
    const uint64_t refused = split ? kc.value("capacity_refusals", uint64_t(0)) : 0;
    const uint64_t io = split ? kc.value("write_io_errors", uint64_t(0)) : failed;
    // Without a storage tier (--remote-tier without --cache-dir: kvio.cache.storage "absent ...") the remote tier is
    // the last one, and the failed writes are its own: named so, not "storage".
    const bool remote_last = kc.value("storage", std::string()).rfind("absent", 0) == 0;
    std::string t = counted(failed, remote_last ? "remote-tier write" : "storage write") +
                    " failed: " + counted(refused, "capacity refusal");
    if (refused) {
        t += " (" + std::to_string(kc.value("capacity_refused_bytes", uint64_t(0))) +
             " bytes in all, no tier could hold them, refused unwritten";
        if (const std::string f = kc.value("first_capacity_refusal", std::string()); !f.empty()) t += "; first: " + f;
        t += ")";
    }
    t += ", " + counted(io, "I/O error");
    if (io) t += " (first: " + kc.value("first_write_error", kc.value("first_error", std::string("?"))) + ")";
    return t;
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
