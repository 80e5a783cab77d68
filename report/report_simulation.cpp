#include "report/report_simulation.h"

#include <cstdio>
#include <sstream>
#include <vector>

#include "common/histogram.h"
#include "report/svg_chart.h"
#include "workload/serving/results/stats_util.h"

namespace kvio::report {

namespace {

using nlohmann::json;
using report::html_escape;

std::string num(const json& j, const char* k, int prec) {
    if (!j.is_object() || !j.contains(k) || !j[k].is_number()) return "n/a";
    char b[48];
    std::snprintf(b, sizeof b, "%.*f", prec, j[k].get<double>());
    return b;
}
std::string cell(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }
std::string head(std::initializer_list<const char*> cols) {
    std::string s = "<tr>";
    for (const char* c : cols) s += std::string("<th>") + c + "</th>";
    return s + "</tr>";
}
const json& at(const json& j, const char* k) {
    static const json none = json::object();
    return j.is_object() && j.contains(k) ? j[k] : none;
}
std::string gib(const json& j, const char* k) {
    if (!j.is_object() || !j.contains(k) || !j[k].is_number()) return "n/a";
    char b[48];
    std::snprintf(b, sizeof b, "%.3f GiB", j[k].get<double>() / double(1ull << 30));
    return b;
}
std::string pct_of(const json& j, const char* k) {
    if (!j.is_object() || !j.contains(k) || !j[k].is_number()) return "n/a";
    char b[48];
    std::snprintf(b, sizeof b, "%.1f %%", 100 * j[k].get<double>());
    return b;
}

/// {mean, p50, p95, p99} in ms of a log2 ns histogram of kvio.trace/1 ({"count","sum","buckets"}).
json histogram_ms(const json& h) {
    if (!h.is_object() || !h.contains("buckets") || h.value("count", uint64_t(0)) == 0) return json::object();
    const Histogram x = Histogram::from_json(h, HistKind::Log2, 64);
    return {{"mean", double(x.sum()) / double(x.count()) / 1e6},
            {"p50", x.quantile(0.50) / 1e6},
            {"p95", x.quantile(0.95) / 1e6},
            {"p99", x.quantile(0.99) / 1e6}};
}

/// The benchmark's per-request list `key` (seconds) as {mean, p50, ...} ms.
json list_ms(const json& sim, const char* key) {
    if (!sim.contains(key) || !sim[key].is_array() || sim[key].empty()) return json::object();
    return serving::latency_summary_ms(sim[key].get<std::vector<double>>());
}

}  // namespace

std::string simulation_section(const json& sim, const json& dh) {
    const json& s = at(sim, "summary");
    const json& k = at(sim, "kvio");
    const json& cs = at(s, "cache_stats");
    std::ostringstream h;
    h << "<section id=\"simulation\"><h2>Simulation (kvio simulate)</h2><p class=\"note\">The serving workload: "
      << html_escape(at(k, "model").value("name", "?")) << ", " << at(k, "users").size() << " users; storage tier "
      << html_escape(k.value("storage_tier", "")) << ". The benchmark's definitions (docs/simulate.md, \"Reading the "
      << "results\"); every storage op below was traced, validated and replayed above.</p>";

    const json& st = at(k, "stop");
    h << "<h3>Requests</h3><table id=\"sim-requests\">"
      << head(
             {"completed", "per second", "tokens", "tokens/s", "offered load (req/s)", "elapsed (s)", "issued", "stop"})
      << "<tr>" << cell(num(sim, "requests_completed", 0)) << cell(num(s, "requests_per_second", 3))
      << cell(num(s, "total_tokens", 0)) << cell(num(s, "avg_throughput_tokens_per_sec", 1))
      << cell(num(k, "offered_load_req_per_s", 2)) << cell(num(s, "elapsed_time", 2))
      << cell(num(st, "requests_issued", 0)) << cell(st.value("reason", "n/a")) << "</tr></table>";

    h << "<h3>QoS</h3><table id=\"sim-qos\">"
      << head({"class", "requests", "mean (ms)", "p50 (ms)", "p95 (ms)", "p99 (ms)", "SLA p95 target (ms)",
               "compliance", "met"});
    for (const auto& [cls, q] : at(s, "qos_metrics").items()) {
        if (q.value("no_data", false)) {
            h << "<tr>" << cell(cls) << cell("0") << "<td colspan=\"7\">no requests</td></tr>";
            continue;
        }
        const json& l = at(q, "latency_ms");
        const json& sla = at(q, "sla");
        h << "<tr>" << cell(cls) << cell(num(q, "total_requests", 0)) << cell(num(l, "mean", 1))
          << cell(num(l, "p50", 1)) << cell(num(l, "p95", 1)) << cell(num(l, "p99", 1))
          << cell(num(sla, "target_p95_ms", 0)) << cell(pct_of(sla, "compliance"))
          << cell(sla.value("met", false) ? "yes" : "no") << "</tr>";
    }
    h << "</table>";

    h << "<h3>Tiers</h3><table id=\"sim-tiers\">"
      << head({"tier", "backend", "limit", "used", "entries", "written", "read", "demotions in"});
    for (const auto& t : at(at(k, "cache"), "tiers")) {
        h << "<tr>" << cell(t.value("tier", "?")) << cell(t.value("backend", ""))
          << cell(t["limit_bytes"].is_null() ? "unlimited" : gib(t, "limit_bytes")) << cell(gib(t, "used_bytes"))
          << cell(num(t, "entries", 0)) << cell(gib(t, "bytes_written")) << cell(gib(t, "bytes_read"))
          << cell(num(t, "demotions_in", 0)) << "</tr>";
    }
    h << "</table>";

    const json& mt = at(s, "multi_turn_stats");
    const json& pc = at(s, "prefix_cache_stats");
    h << "<h3>Hit rates</h3><table id=\"sim-hits\">" << head({"cache", "hits", "misses", "hit rate"}) << "<tr>"
      << cell("cache (every lookup)") << cell(num(cs, "cache_hits", 0)) << cell(num(cs, "cache_misses", 0))
      << cell(pct_of(cs, "cache_hit_rate")) << "</tr><tr>" << cell("multi-turn") << cell(num(mt, "cache_hits", 0))
      << cell(num(mt, "cache_misses", 0)) << cell(pct_of(mt, "hit_rate")) << "</tr>";
    {
        const double hits = pc.value("prefix_hits", 0.0), misses = pc.value("prefix_misses", 0.0);
        json r = hits + misses > 0 ? json{{"r", hits / (hits + misses)}} : json::object();
        h << "<tr>" << cell("system-prompt prefix") << cell(num(pc, "prefix_hits", 0))
          << cell(num(pc, "prefix_misses", 0)) << cell(pct_of(r, "r")) << "</tr>";
    }
    h << "</table>";

    const json& hd = at(k, "storage_host_device_ms");
    const std::vector<std::pair<std::string, json>> layers = {
        {"end to end (per request)", at(s, "end_to_end_latency_ms")},
        {"generation (per request)", at(s, "generation_latency_ms")},
        {"storage I/O (per request)", at(s, "storage_io_latency_ms")},
        {"prefill (per request)", list_ms(sim, "prefill_latencies")},
        {"decode (per request)", list_ms(sim, "decode_latencies")},
        {"storage read op, host", at(hd, "storage_read_host_ms")},
        {"storage read op, device", at(hd, "storage_read_device_ms")},
        {"storage write op, host", at(hd, "storage_write_host_ms")},
        {"storage write op, device", at(hd, "storage_write_device_ms")},
        {"D2C per read command (traced)", histogram_ms(at(dh, "d2c_read"))},
        {"D2C per write command (traced)", histogram_ms(at(dh, "d2c_write"))},
    };
    h << "<h3>Latency layers</h3><p class=\"note\">Top down: a request, its generation sleep and its storage time, the "
         "phases, "
         "each storage op split into host and device time by the storage tier, and each device command's D2C from the "
         "trace (interpolated inside log2 buckets).</p><table id=\"sim-layers\">"
      << head({"layer", "mean (ms)", "p50 (ms)", "p95 (ms)", "p99 (ms)"});
    for (const auto& [name, l] : layers)
        h << "<tr>" << cell(name) << cell(num(l, "mean", 3)) << cell(num(l, "p50", 3)) << cell(num(l, "p95", 3))
          << cell(num(l, "p99", 3)) << "</tr>";
    h << "</table></section>\n";
    return h.str();
}

}  // namespace kvio::report
