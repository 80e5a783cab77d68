#include "workload/serving/results/merge_results.h"

#include <algorithm>
#include <map>
#include <cstdint>
#include <limits>

#include "common/error.h"
#include "workload/serving/results/json_need.h"
#include "workload/serving/results/metrics.h"
#include "workload/serving/qos.h"
#include "workload/serving/simulate.h"
#include "workload/serving/results/stats_util.h"
#include "workload/serving/results/stop_counters.h"

namespace kvio::serving {

namespace {

using Json = nlohmann::ordered_json;
void append_array(Json& out, const Json& j, const char* key, const std::string& where, const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_array()) bad_field(where, path + "." + key, "not an array");
    for (const auto& x : v) out.push_back(x);
}

QosClass qos_from_name(const std::string& s, const std::string& where) {
    for (QosClass q : {QosClass::Interactive, QosClass::Responsive, QosClass::Batch})
        if (s == qos_name(q)) return q;
    bad_field(where, "kvio.requests.qos", "unknown class '" + s + "'");
}

}  // namespace

std::string client_output_path(const std::string& output, int rank) {
    std::string base = output.empty() ? default_results_name() : output;
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
    return base + ".rank" + std::to_string(rank) + ".json";
}

namespace {

/// The merge in progress: what the clients' documents add up to so far.
struct Merger {
    RequestTotals t;
    double elapsed = 0, agg_bw = 0, max_p95 = 0;
    CacheStats cs;
    bool have_cs = false;
    std::map<std::string, QosProfile> targets;
    std::vector<std::pair<QosClass, double>> qos_rows;
    Json prefix = Json::object();
    Json stop = Json::object();
    Json requests = Json::object();
    Json warnings = Json::array();  ///< each client's kvio.warnings, prefixed "rank N: "
    Json sections = Json::array(), failed = Json::array(), cpu_only = Json::array();
    const Json* first_doc = nullptr;
    std::string profile = "latency";

    void add(const ClientResult& cr);
    /// The top-level totals and per-request lists of client document `d`; returns e2e's size before it.
    size_t add_requests(const Json& d, const std::string& where);
    /// summary.cache_stats's MLCommons figures and kvio.merge_state's CacheStats of client `rank`.
    void add_cache(const Json& s, const Json& k, int rank, const std::string& where);
    /// The SLA targets, each request's QoS class and the kvio.requests columns (plus "client").
    void add_qos(const Json& s, const Json& k, size_t e2e_before, int rank, const std::string& where);
    Json summary() const;
    Json kvio(size_t clients, const std::string& launcher) const;
};

void Merger::add(const ClientResult& cr) {
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
        return;
    }
    const Json& d = cr.doc;
    if (!first_doc) first_doc = &d;
    const Json& s = need(d, "summary", where, "");
    const Json& k = need(d, "kvio", where, "");
    const size_t e2e_before = add_requests(d, where);
    elapsed = std::max(elapsed, need_number(s, "elapsed_time", where, "summary"));
    add_cache(s, k, cr.rank, where);
    add_qos(s, k, e2e_before, cr.rank, where);
    const Json& ps = need(s, "prefix_cache_stats", where, "summary");
    for (auto it = ps.begin(); it != ps.end(); ++it)
        if (it->is_number()) prefix[it.key()] = prefix.value(it.key(), uint64_t(0)) + it->get<uint64_t>();
    if (auto st = k.find("stop"); st != k.end()) {
        add_stop_counts(stop, *st);
        // The run's reason and signal: the first client's, unless a later one was stopped by a signal; the
        // longest drain.
        const int sig = st->value("signal", 0);
        if (!stop.contains("reason") || (sig && !stop.value("signal", 0))) {
            stop["reason"] = st->value("reason", Json(nullptr));
            stop["signal"] = sig;
        }
        stop["drain_s"] = std::max(stop.value("drain_s", 0.0), st->value("drain_s", 0.0));
    }
    if (auto w = k.find("warnings"); w != k.end() && w->is_array())
        for (const auto& x : *w)
            if (x.is_string()) warnings.push_back("rank " + std::to_string(cr.rank) + ": " + x.get<std::string>());
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

size_t Merger::add_requests(const Json& d, const std::string& where) {
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
    return e2e_before;
}

void Merger::add_cache(const Json& s, const Json& k, int rank, const std::string& where) {
    const Json& ccs = need(s, "cache_stats", where, "summary");
    agg_bw += need_number(ccs, "tier_storage_read_bandwidth_gbps", where, "summary.cache_stats");
    max_p95 = std::max(max_p95, need_number(need(s, "storage_io_latency_ms", where, "summary"), "p95", where,
                                            "summary.storage_io_latency_ms"));
    if (need_count(ccs, "storage_entries", where, "summary.cache_stats") == 0) cpu_only.push_back(rank);

    CacheStats one = cache_stats_from_state(need(k, "merge_state", where, "kvio"), where);
    if (have_cs)
        add_cache_stats(cs, one);
    else
        cs = std::move(one);
    have_cs = true;
}

void Merger::add_qos(const Json& s, const Json& k, size_t e2e_before, int rank, const std::string& where) {
    // QoS: the SLA targets the client judged against, and each request's class from kvio.requests.qos (same
    // completion order as end_to_end_latencies: both are appended under one lock).
    for (auto it = need(s, "qos_metrics", where, "summary").begin(); it != s["qos_metrics"].end(); ++it)
        if (it->contains("sla")) targets[it.key()].target_latency_p95_ms = (*it)["sla"].value("target_p95_ms", 0.0);
    const Json& kr = need(k, "requests", where, "kvio");
    const Json& q = need(kr, "qos", where, "kvio.requests");
    if (!q.is_array() || q.size() != t.e2e.size() - e2e_before)
        bad_field(where, "kvio.requests.qos", "does not have one entry per end_to_end_latencies entry");
    for (size_t i = 0; i < q.size(); ++i)
        qos_rows.emplace_back(qos_from_name(q[i].get<std::string>(), where), t.e2e[e2e_before + i]);
    for (auto it = kr.begin(); it != kr.end(); ++it) {
        if (!requests.contains(it.key())) requests[it.key()] = Json::array();
        append_array(requests[it.key()], kr, it.key().c_str(), where, "kvio.requests");
    }
    if (!requests.contains("client")) requests["client"] = Json::array();
    for (size_t i = 0; i < q.size(); ++i) requests["client"].push_back(rank);
}

Json Merger::summary() const {
    Json s = summary_head_json(t, elapsed);
    s["cache_stats"] = cache_stats_json(cs, elapsed, profile);
    QosMonitor qos(targets);
    for (const auto& [cls, lat] : qos_rows) qos.record(cls, lat);
    s["qos_metrics"] = qos.to_json();
    s["prefix_cache_stats"] = prefix;
    s["autoscaling_stats"] = Json::array();
    s["autoscaling_summary"] = nullptr;
    s["multi_turn_stats"] = multi_turn_json(t);
    return s;
}

Json Merger::kvio(size_t clients, const std::string& launcher) const {
    const bool partial = !failed.empty();
    Json k;
    k["format"] = "kvio.simulate/1";
    k["merged"] = {{"launcher", launcher},
                   {"clients", clients},
                   {"failed_ranks", failed},
                   {"partial_failure", partial},
                   {"method",
                    "sums of counts, bytes and tokens; percentiles over the concatenated per-request and "
                    "per-op lists of every client; elapsed_time = the longest client's"}};
    k["mlcommons_aggregation"] = {{"aggregated_bandwidth_gbps", agg_bw},
                                  {"aggregated_p95_latency_ms", max_p95},
                                  {"total_ranks", clients},
                                  {"ranks_served_from_cpu_tier", cpu_only},
                                  {"partial_failure", partial}};
    k["clients"] = sections;
    k["stop"] = stop;
    k["cache"] = {{"failed_writes", cs.failed_writes},         {"failed_reads", cs.failed_reads},
                  {"capacity_refusals", cs.capacity_refusals}, {"capacity_refused_bytes", cs.capacity_refused_bytes},
                  {"write_io_errors", cs.write_io_errors},     {"gather_fallbacks", cs.gather_fallbacks}};
    if (!cs.first_error.empty()) k["cache"]["first_error"] = cs.first_error;
    Json w = warnings;
    for (const auto& r : failed) w.push_back("rank " + r.dump() + ": no results (see kvio.clients)");
    k["warnings"] = w;
    if (!cs.first_write_error.empty()) k["cache"]["first_write_error"] = cs.first_write_error;
    if (!cs.first_capacity_refusal.empty()) k["cache"]["first_capacity_refusal"] = cs.first_capacity_refusal;
    if (!cs.first_read_error.empty()) k["cache"]["first_read_error"] = cs.first_read_error;
    if (cs.corrupted_reads) {
        k["cache"]["corrupted_reads"] = cs.corrupted_reads;
        k["cache"]["first_corruption"] = cs.first_corruption;
    }
    k["requests"] = requests;
    if (first_doc && first_doc->contains("kvio")) {
        const Json& fk = (*first_doc)["kvio"];
        for (const char* key : {"benchmark", "model", "config"})
            if (fk.contains(key)) k[key] = fk[key];
        // rank 0's flags as it ran them (its cache subdirectory and seed), with the launcher's client count
        if (k.contains("config") && k["config"].contains("flags")) {
            k["config"]["flags"]["num_clients"] = launcher == "mpi" ? 1 : clients;
            k["config"]["flags"]["mpi"] = launcher == "mpi";
        }
    }
    return k;
}

}  // namespace

Json merge_client_results(const std::vector<ClientResult>& clients, const std::string& launcher) {
    if (clients.empty()) throw Error("merge: no clients");
    Merger m;
    for (const ClientResult& cr : clients) m.add(cr);
    Json out = top_level_json(m.t, m.first_doc ? m.first_doc->value("seed", Json(nullptr)) : Json(nullptr));
    if (m.have_cs) out["summary"] = m.summary();
    out["kvio"] = m.kvio(clients.size(), launcher);
    return out;
}

}  // namespace kvio::serving
