#include "drives/sim_workload.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "workload/serving/config.h"
#include "workload/serving/mlperf/closed_rules.h"

namespace kvio::drives {

using nlohmann::json;

std::vector<std::string> split_words(const std::string& text) {
    std::vector<std::string> words;
    std::string cur;
    bool in_word = false;
    char quote = 0;
    for (char c : text) {
        if (quote) {
            if (c == quote)
                quote = 0;
            else
                cur += c;
        } else if (c == '\'' || c == '"') {
            quote = c, in_word = true;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) words.push_back(cur), cur.clear(), in_word = false;
        } else {
            cur += c, in_word = true;
        }
    }
    if (quote) throw UsageError("--simulate '" + text + "': a quote is not closed");
    if (in_word) words.push_back(cur);
    return words;
}

namespace {

/// The flag of the table a word names: its exact name or the one flag it is a prefix of (argparse's rule, as
/// `kvio simulate` takes its command line: docs/simulate.md "Running it"). Throws UsageError otherwise.
std::string flag_named(const std::string& word) {
    std::vector<std::string> hits;
    for (const auto& f : serving::flag_table()) {
        if (word == f.name) return word;
        if (std::string(f.name).rfind(word, 0) == 0) hits.push_back(f.name);
    }
    if (hits.size() == 1) return hits[0];
    if (hits.empty()) throw UsageError("--simulate: " + word + " is not a kvio simulate flag (kvio simulate --help)");
    std::string all;
    for (const auto& h : hits) all += (all.empty() ? "" : ", ") + h;
    throw UsageError("--simulate: " + word + " is ambiguous (" + all + ")");
}

}  // namespace

std::string check_simulate_flags(const std::vector<std::string>& words) {
    static const std::pair<const char*, const char*> kOwned[] = {
        {"--cache-dir", "kvio drives gives each run its drive (a directory under a directory target, or the device)"},
        {"--output", "kvio drives keeps each run's results in DIR/runs/"},
        {"--force", "give kvio drives' own --force"},
        {"--num-clients", "kvio drives runs one simulation per drive"},
        {"--mpi", "kvio drives runs one simulation per drive"},
        {"--enable-latency-tracing", "kvio drives traces each run at the device itself"},
    };
    std::string storage_io;
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i];
        if (w.rfind("--", 0) != 0) continue;  // a value
        const std::string name = flag_named(w.substr(0, w.find('=')));
        for (auto [owned, why] : kOwned)
            if (name == owned) throw UsageError("--simulate: " + name + " is set by kvio drives: " + why);
        if (name == "--storage-io")
            storage_io = w.find('=') != std::string::npos ? w.substr(w.find('=') + 1)
                         : i + 1 < words.size()           ? words[i + 1]
                                                          : "";
    }
    return storage_io;
}

namespace {

double num(const json& j, const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

SimFigures parse_sim_results(const json& j, const std::string& source) {
    if (!j.is_object() || !j.contains("summary") || !j["summary"].is_object())
        throw Error(source + ": no summary: no request completed");
    const json& s = j["summary"];
    const json& c = s.value("cache_stats", json::object());
    SimFigures f;
    f.requests = num(j, "requests_completed");
    f.elapsed_s = num(s, "elapsed_time");
    f.storage_tokens_per_s = num(s, "storage_throughput_tokens_per_sec");
    f.avg_tokens_per_s = num(s, "avg_throughput_tokens_per_sec");
    f.read_gib_s = num(c, "tier_storage_read_bandwidth_gbps");
    f.write_gib_s = num(c, "tier_storage_write_bandwidth_gbps");
    f.read_device_p95_ms = num(c, "storage_read_device_p95_ms");
    f.write_device_p95_ms = num(c, "storage_write_device_p95_ms");
    f.read_gib = num(c, "tier_storage_kv_bytes_read_gb");
    f.write_gib = num(c, "tier_storage_kv_bytes_written_gb");
    f.write_bytes = num(c, "total_write_bytes");
    if (j.contains("kvio") && j["kvio"].contains("cache") && j["kvio"]["cache"].is_object()) {
        const json& k = j["kvio"]["cache"];
        f.io_errors = (k.contains("write_io_errors") ? num(k, "write_io_errors") : num(k, "failed_writes")) +
                      num(k, "failed_reads") + num(k, "corrupted_reads");
        f.capacity_refusals = num(k, "capacity_refusals");
        f.capacity_refused_bytes = num(k, "capacity_refused_bytes");
        for (const char* e : {"first_write_error", "first_read_error", "first_error"})
            if (f.first_error.empty() && k.contains(e) && k[e].is_string()) f.first_error = k[e].get<std::string>();
    }
    if (s.contains("storage_io_latency_ms") && s["storage_io_latency_ms"].is_object())
        f.storage_io_p95_ms = num(s["storage_io_latency_ms"], "p95");
    if (j.contains("kvio") && j["kvio"].contains("bandwidth_timeline") && j["kvio"]["bandwidth_timeline"].is_array())
        for (const auto& p : j["kvio"]["bandwidth_timeline"])
            f.timeline.push_back({num(p, "t_s"), num(p, "storage_read_gibps"), num(p, "storage_write_gibps")});
    return f;
}

std::string sim_run_problem(const SimFigures& f) {
    char b[160];
    if (f.requests <= 0) return "the simulation served no request";
    if (f.io_errors > 0) {
        std::snprintf(b, sizeof b, "%.0f storage I/O error(s) in the simulation", f.io_errors);
        return b + (f.first_error.empty() ? std::string() : " (first: " + f.first_error + ")");
    }
    const double share = f.capacity_refused_bytes / std::max(f.capacity_refused_bytes + f.write_bytes, 1.0);
    if (f.capacity_refusals > 0 && share > serving::kMaxRefusedShare) {
        std::snprintf(b, sizeof b,
                      "%.0f entr%s (%.1f %% of the write bytes) larger than the drive could hold, refused unwritten: "
                      "the drive is too small for this workload",
                      f.capacity_refusals, f.capacity_refusals == 1 ? "y" : "ies", 100 * share);
        return b;
    }
    if (f.read_gib <= 0 && f.write_gib <= 0)
        return "the simulation did no storage I/O (its entries fit the tiers above storage: give --gpu-mem-gb 0 "
               "--cpu-mem-gb 0 in --simulate)";
    return "";
}

}  // namespace kvio::drives
