#include "workload/serving/merge_results.h"

#include <algorithm>
#include <map>
#include <cstdint>
#include <limits>

#include "common/error.h"
#include "workload/serving/metrics.h"
#include "workload/serving/qos.h"
#include "workload/serving/simulate.h"
#include "workload/serving/stats_util.h"

namespace kvio::serving {

namespace {

using Json = nlohmann::ordered_json;
constexpr uint64_t kUnlimitedBytes = std::numeric_limits<uint64_t>::max();

// The CacheStats members that are one counter each, by their merge_state name.
struct CounterField {
    const char* name;
    uint64_t CacheStats::*member;
};
constexpr CounterField kCounters[] = {
    {"cache_hits", &CacheStats::cache_hits},
    {"cache_misses", &CacheStats::cache_misses},
    {"system_prompt_hits", &CacheStats::system_prompt_hits},
    {"common_phrase_hits", &CacheStats::common_phrase_hits},
    {"user_cache_hits", &CacheStats::user_cache_hits},
    {"multi_turn_hits", &CacheStats::multi_turn_hits},
    {"prefill_writes", &CacheStats::prefill_writes},
    {"decode_reads", &CacheStats::decode_reads},
    {"read_operations", &CacheStats::read_operations},
    {"write_operations", &CacheStats::write_operations},
    {"total_read_bytes", &CacheStats::total_read_bytes},
    {"total_write_bytes", &CacheStats::total_write_bytes},
    {"offloads_cpu", &CacheStats::offloads_cpu},
    {"offloads_storage", &CacheStats::offloads_storage},
    {"evictions", &CacheStats::evictions},
    {"deletions", &CacheStats::deletions},
    {"deletion_bytes", &CacheStats::deletion_bytes},
    {"failed_writes", &CacheStats::failed_writes},
    {"failed_reads", &CacheStats::failed_reads},
    {"gather_fallbacks", &CacheStats::gather_fallbacks},
};

// Per-tier counter arrays ([gpu, cpu, storage]).
struct TierField {
    const char* name;
    uint64_t (CacheStats::*member)[3];
};
constexpr TierField kTierCounters[] = {
    {"tier_bytes_written", &CacheStats::tier_bytes_written},
    {"tier_bytes_read", &CacheStats::tier_bytes_read},
    {"entries", &CacheStats::entries},
    {"used_bytes", &CacheStats::used_bytes},
    {"demotions", &CacheStats::demotions},
    {"demotion_bytes", &CacheStats::demotion_bytes},
};

struct ListField {
    const char* name;
    std::vector<double> CacheStats::*member;
};
constexpr ListField kLists[] = {
    {"storage_read_device", &CacheStats::storage_read_device},
    {"storage_read_host", &CacheStats::storage_read_host},
    {"storage_write_device", &CacheStats::storage_write_device},
    {"storage_write_host", &CacheStats::storage_write_host},
};

struct TierListField {
    const char* name;
    std::vector<double> (CacheStats::*member)[3];
};
constexpr TierListField kTierLists[] = {
    {"read_lat", &CacheStats::read_lat},
    {"write_lat", &CacheStats::write_lat},
    {"demotion_lat", &CacheStats::demotion_lat},
};

[[noreturn]] void bad(const std::string& where, const std::string& field, const std::string& what) {
    throw Error(where + ": field '" + field + "': " + what);
}

const Json& need(const Json& j, const char* key, const std::string& where, const std::string& path) {
    if (!j.is_object()) bad(where, path, "is not an object");
    auto it = j.find(key);
    if (it == j.end()) bad(where, path.empty() ? key : path + "." + key, "missing");
    return *it;
}

double need_number(const Json& j, const char* key, const std::string& where, const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_number()) bad(where, path + "." + key, "not a number");
    return v.get<double>();
}

uint64_t need_count(const Json& j, const char* key, const std::string& where, const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        bad(where, path + "." + key, "not a non-negative integer");
    return v.get<uint64_t>();
}

void append_numbers(std::vector<double>& out, const Json& j, const char* key, const std::string& where,
                    const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_array()) bad(where, path + "." + key, "not an array");
    for (const auto& x : v) {
        if (!x.is_number()) bad(where, path + "." + key, "holds a non-number");
        out.push_back(x.get<double>());
    }
}

void append_array(Json& out, const Json& j, const char* key, const std::string& where, const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_array()) bad(where, path + "." + key, "not an array");
    for (const auto& x : v) out.push_back(x);
}

QosClass qos_from_name(const std::string& s, const std::string& where) {
    for (QosClass q : {QosClass::Interactive, QosClass::Responsive, QosClass::Batch})
        if (s == qos_name(q)) return q;
    bad(where, "kvio.requests.qos", "unknown class '" + s + "'");
}

}  // namespace

Json merge_state_json(const CacheStats& s) {
    Json c;
    for (const auto& f : kCounters) c[f.name] = s.*f.member;
    c["storage_tokens_processed"] = s.storage_tokens_processed;
    for (const auto& f : kTierCounters)
        c[f.name] = std::vector<uint64_t>(std::begin(s.*f.member), std::end(s.*f.member));
    Json limits = Json::array();
    for (uint64_t l : s.limit_bytes) limits.push_back(l == kUnlimitedBytes ? Json(nullptr) : Json(l));
    c["limit_bytes"] = limits;
    c["tier_present"] = std::vector<bool>(std::begin(s.tier_present), std::end(s.tier_present));
    for (const auto& f : kLists) c[f.name] = s.*f.member;
    for (const auto& f : kTierLists) {
        Json a = Json::array();
        for (const auto& v : s.*f.member) a.push_back(v);
        c[f.name] = a;
    }
    c["first_error"] = s.first_error;
    return {{"format", "kvio.merge_state/1"}, {"cache_stats", c}};
}

CacheStats cache_stats_from_state(const Json& state, const std::string& where) {
    const std::string p = "kvio.merge_state.cache_stats";
    const Json& c = need(state, "cache_stats", where, "kvio.merge_state");
    CacheStats s;
    for (const auto& f : kCounters) s.*f.member = need_count(c, f.name, where, p);
    s.storage_tokens_processed = need_number(c, "storage_tokens_processed", where, p);
    auto tier_array = [&](const char* name) -> const Json& {
        const Json& a = need(c, name, where, p);
        if (!a.is_array() || a.size() != 3) bad(where, p + "." + name, "not an array of 3 (gpu, cpu, storage)");
        return a;
    };
    for (const auto& f : kTierCounters) {
        const Json& a = tier_array(f.name);
        for (int t = 0; t < 3; ++t) {
            if (!a[t].is_number_unsigned()) bad(where, p + "." + f.name, "holds a non-count");
            (s.*f.member)[t] = a[t].get<uint64_t>();
        }
    }
    const Json& lim = tier_array("limit_bytes");
    for (int t = 0; t < 3; ++t) s.limit_bytes[t] = lim[t].is_null() ? kUnlimitedBytes : lim[t].get<uint64_t>();
    const Json& pres = tier_array("tier_present");
    for (int t = 0; t < 3; ++t) s.tier_present[t] = pres[t].get<bool>();
    for (const auto& f : kLists) append_numbers(s.*f.member, c, f.name, where, p);
    for (const auto& f : kTierLists) {
        const Json& a = tier_array(f.name);
        for (int t = 0; t < 3; ++t) {
            Json one = {{"v", a[t]}};
            append_numbers((s.*f.member)[t], one, "v", where, p + "." + f.name);
        }
    }
    const Json& fe = need(c, "first_error", where, p);
    if (fe.is_string()) s.first_error = fe.get<std::string>();
    return s;
}

void add_cache_stats(CacheStats& a, const CacheStats& b) {
    for (const auto& f : kCounters) a.*f.member += b.*f.member;
    a.storage_tokens_processed += b.storage_tokens_processed;
    for (const auto& f : kTierCounters)
        for (int t = 0; t < 3; ++t) (a.*f.member)[t] += (b.*f.member)[t];
    for (int t = 0; t < 3; ++t) {
        if (a.limit_bytes[t] == kUnlimitedBytes || b.limit_bytes[t] == kUnlimitedBytes)
            a.limit_bytes[t] = kUnlimitedBytes;
        else
            a.limit_bytes[t] += b.limit_bytes[t];
        a.tier_present[t] = a.tier_present[t] || b.tier_present[t];
    }
    for (const auto& f : kLists) (a.*f.member).insert((a.*f.member).end(), (b.*f.member).begin(), (b.*f.member).end());
    for (const auto& f : kTierLists)
        for (int t = 0; t < 3; ++t)
            (a.*f.member)[t].insert((a.*f.member)[t].end(), (b.*f.member)[t].begin(), (b.*f.member)[t].end());
    if (a.first_error.empty()) a.first_error = b.first_error;
}

std::string client_output_path(const std::string& output, int rank) {
    std::string base = output.empty() ? default_results_name() : output;
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
    return base + ".rank" + std::to_string(rank) + ".json";
}

Json merge_client_results(const std::vector<ClientResult>& clients, const std::string& launcher) {
    if (clients.empty()) throw Error("merge: no clients");
    RequestTotals t;
    double elapsed = 0, agg_bw = 0, max_p95 = 0;
    CacheStats cs;
    bool have_cs = false;
    std::map<std::string, QosProfile> targets;
    std::vector<std::pair<QosClass, double>> qos_rows;
    Json prefix = Json::object();
    Json stop = Json::object();
    Json requests = Json::object();
    Json sections = Json::array(), failed = Json::array(), cpu_only = Json::array();
    const Json* first_doc = nullptr;
    std::string profile = "latency";

    for (const ClientResult& cr : clients) {
        const std::string where =
            "client rank " + std::to_string(cr.rank) + (cr.output_path.empty() ? "" : " (" + cr.output_path + ")");
        Json sec;
        sec["rank"] = cr.rank;
        sec["host"] = cr.host;
        sec["output"] = cr.output_path;
        sec["exit_code"] = cr.exit_code;
        if (!cr.error.empty() || cr.doc.is_null()) {
            sec["error"] = cr.error.empty() ? "no results" : cr.error;
            failed.push_back(cr.rank);
            sections.push_back(sec);
            continue;
        }
        const Json& d = cr.doc;
        if (!first_doc) first_doc = &d;
        const Json& s = need(d, "summary", where, "");
        const Json& k = need(d, "kvio", where, "");
        t.completed += need_count(d, "requests_completed", where, "");
        t.tokens += need_count(d, "total_tokens_generated", where, "");
        t.storage_total += need_number(d, "total_storage_io_latency", where, "");
        t.generation_total += need_number(d, "total_generation_latency", where, "");
        t.mt_hits += need_count(d, "multi_turn_cache_hits", where, "");
        t.mt_misses += need_count(d, "multi_turn_cache_misses", where, "");
        const size_t e2e_before = t.e2e.size();
        append_numbers(t.e2e, d, "end_to_end_latencies", where, "");
        append_numbers(t.storage, d, "storage_latencies", where, "");
        append_numbers(t.generation, d, "generation_latencies", where, "");
        append_numbers(t.prefill, d, "prefill_latencies", where, "");
        append_numbers(t.decode, d, "decode_latencies", where, "");
        elapsed = std::max(elapsed, need_number(s, "elapsed_time", where, "summary"));

        const Json& ccs = need(s, "cache_stats", where, "summary");
        agg_bw += need_number(ccs, "tier_storage_read_bandwidth_gbps", where, "summary.cache_stats");
        max_p95 = std::max(max_p95, need_number(need(s, "storage_io_latency_ms", where, "summary"), "p95", where,
                                                "summary.storage_io_latency_ms"));
        if (need_count(ccs, "storage_entries", where, "summary.cache_stats") == 0) cpu_only.push_back(cr.rank);

        CacheStats one = cache_stats_from_state(need(k, "merge_state", where, "kvio"), where);
        if (have_cs)
            add_cache_stats(cs, one);
        else
            cs = std::move(one);
        have_cs = true;

        // QoS: the SLA targets the client judged against, and each request's class from kvio.requests.qos (same
        // completion order as end_to_end_latencies: both are appended under one lock).
        for (auto it = need(s, "qos_metrics", where, "summary").begin(); it != s["qos_metrics"].end(); ++it)
            if (it->contains("sla")) targets[it.key()].target_latency_p95_ms = (*it)["sla"].value("target_p95_ms", 0.0);
        const Json& kr = need(k, "requests", where, "kvio");
        const Json& q = need(kr, "qos", where, "kvio.requests");
        if (!q.is_array() || q.size() != t.e2e.size() - e2e_before)
            bad(where, "kvio.requests.qos", "does not have one entry per end_to_end_latencies entry");
        for (size_t i = 0; i < q.size(); ++i)
            qos_rows.emplace_back(qos_from_name(q[i].get<std::string>(), where), t.e2e[e2e_before + i]);
        for (auto it = kr.begin(); it != kr.end(); ++it) {
            if (!requests.contains(it.key())) requests[it.key()] = Json::array();
            append_array(requests[it.key()], kr, it.key().c_str(), where, "kvio.requests");
        }
        if (!requests.contains("client")) requests["client"] = Json::array();
        for (size_t i = 0; i < q.size(); ++i) requests["client"].push_back(cr.rank);

        const Json& ps = need(s, "prefix_cache_stats", where, "summary");
        for (auto it = ps.begin(); it != ps.end(); ++it)
            if (it->is_number()) prefix[it.key()] = prefix.value(it.key(), uint64_t(0)) + it->get<uint64_t>();
        if (auto st = k.find("stop"); st != k.end())
            for (auto it = st->begin(); it != st->end(); ++it)
                if (it->is_number_unsigned() && it.key() != "signal")
                    stop[it.key()] = stop.value(it.key(), uint64_t(0)) + it->get<uint64_t>();
        if (auto cfg = k.find("config"); cfg != k.end())
            profile = cfg->value("flags", Json::object()).value("performance_profile", profile);

        sec["exit_code"] = cr.exit_code;
        sec["seed_used"] = k.value("seed_used", Json(nullptr));
        sec["cache_dir"] =
            k.value("config", Json::object()).value("flags", Json::object()).value("cache_dir", Json(nullptr));
        sec["summary"] = s;
        sec["stop"] = k.value("stop", Json::object());
        sections.push_back(sec);
    }

    Json out = top_level_json(t, first_doc ? first_doc->value("seed", Json(nullptr)) : Json(nullptr));
    if (have_cs) {
        Json s = summary_head_json(t, elapsed);
        s["cache_stats"] = cache_stats_json(cs, elapsed, profile);
        QosMonitor qos(targets);
        for (const auto& [cls, lat] : qos_rows) qos.record(cls, lat);
        s["qos_metrics"] = qos.to_json();
        s["prefix_cache_stats"] = prefix;
        s["autoscaling_stats"] = Json::array();
        s["autoscaling_summary"] = nullptr;
        s["multi_turn_stats"] = multi_turn_json(t);
        out["summary"] = s;
    }

    const bool partial = !failed.empty();
    Json k;
    k["format"] = "kvio.simulate/1";
    k["merged"] = {{"launcher", launcher},
                   {"clients", clients.size()},
                   {"failed_ranks", failed},
                   {"partial_failure", partial},
                   {"method",
                    "sums of counts, bytes and tokens; percentiles over the concatenated per-request and "
                    "per-op lists of every client; elapsed_time = the longest client's"}};
    k["mlcommons_aggregation"] = {{"aggregated_bandwidth_gbps", agg_bw},
                                  {"aggregated_p95_latency_ms", max_p95},
                                  {"total_ranks", clients.size()},
                                  {"ranks_served_from_cpu_tier", cpu_only},
                                  {"partial_failure", partial}};
    k["clients"] = sections;
    k["stop"] = stop;
    k["cache"] = {{"failed_writes", cs.failed_writes},
                  {"failed_reads", cs.failed_reads},
                  {"gather_fallbacks", cs.gather_fallbacks}};
    if (!cs.first_error.empty()) k["cache"]["first_error"] = cs.first_error;
    k["requests"] = requests;
    if (first_doc && first_doc->contains("kvio")) {
        const Json& fk = (*first_doc)["kvio"];
        for (const char* key : {"benchmark", "model", "config"})
            if (fk.contains(key)) k[key] = fk[key];
        // rank 0's flags as it ran them (its cache subdirectory and seed), with the launcher's client count
        if (k.contains("config") && k["config"].contains("flags")) {
            k["config"]["flags"]["num_clients"] = launcher == "mpi" ? 1 : clients.size();
            k["config"]["flags"]["mpi"] = launcher == "mpi";
        }
    }
    out["kvio"] = k;
    return out;
}

}  // namespace kvio::serving
