#include "report/report_breakdown.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "common/histogram.h"
#include "report/svg_chart.h"

namespace kvio::report {

using nlohmann::json;

namespace {

/// What each stage measures (docs/formats.md, "Block breakdown").
const char* stage_meaning(const std::string& st) {
    if (st == "q2g") return "bio queued to request allocated (block_bio_queue to block_getrq)";
    if (st == "g2i") return "request allocated to inserted into the scheduler or plug (getrq to block_rq_insert)";
    if (st == "i2d") return "inserted to issued to the driver (block_rq_insert to block_rq_issue)";
    if (st == "g2d") return "allocated to issued without an insert (no scheduler, or a direct issue)";
    if (st == "d2c") return "issued to completed: the driver and the device";
    return "bio queued to request completed: the whole block layer";
}

std::string upper(std::string s) {
    for (auto& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

std::string td(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }

uint64_t u64(const json& h, const char* k) { return h.contains(k) && h[k].is_number() ? h[k].get<uint64_t>() : 0; }

/// The interpolated quantile `q` ("p50") of a kvio.trace/1 histogram, as written there, or "n/a".
std::string pctl(const json& h, const char* q) {
    if (!h.contains("percentiles") || !h["percentiles"].contains(q)) return "n/a";
    return human_ns(h["percentiles"][q].value("value", 0.0));
}

/// Whether device histograms `hs` hold a staged request in direction `dir`.
bool has_stages(const json& hs, const std::string& dir) {
    const std::string k = "bt_q2c_" + dir;
    return hs.contains(k) && u64(hs[k], "count") > 0;
}

/// The stage table and charts of one device and direction.
void direction_block(std::ostream& h, const json& hs, const std::string& disk, const std::string& dir) {
    const json q2c = hs.value("bt_q2c_" + dir, json::object());
    const uint64_t q2c_sum = u64(q2c, "sum");
    h << "<h3>" << html_escape(disk) << ", " << dir << "s</h3><table id=\"breakdown-" << html_escape(disk) << "-" << dir
      << "\"><tr><th>stage</th><th>requests</th><th>mean</th><th>p50</th><th>p99</th><th>share of Q2C "
      << "time</th><th>what</th></tr>";
    std::string charts;
    for (const char* stage : kBreakdownStages) {
        const std::string st = stage;
        const json hist = hs.value("bt_" + st + "_" + dir, json::object());
        const uint64_t n = u64(hist, "count"), sum = u64(hist, "sum");
        h << "<tr>" << td(upper(st)) << td(std::to_string(n)) << td(n ? human_ns(double(sum) / double(n)) : "n/a")
          << td(pctl(hist, "p50")) << td(pctl(hist, "p99")) << td(stage_share(sum, q2c_sum)) << td(stage_meaning(st))
          << "</tr>";
        if (n)
            charts += bar_chart(buckets_of(hist), upper(st) + ", " + dir + "s", "latency (log2 bucket, lower bound)",
                                "requests", [](uint64_t lo, uint64_t) { return human_ns(double(lo)); });
    }
    h << "</table><div class=\"charts\">" << charts << "</div>";
}

/// The merge, split and requeue counts of `ev` (one block_events entry).
void events_table(std::ostream& h, const json& ev, const std::string& disk) {
    static const char* const kinds[] = {"rq_merges", "bio_backmerges", "bio_frontmerges", "splits", "requeues"};
    h << "<table id=\"block-events-" << html_escape(disk) << "\"><tr><th>" << html_escape(disk) << "</th>";
    for (const char* k : kinds) h << "<th>" << k << "</th>";
    h << "</tr>";
    for (const char* dir : {"read", "write", "other"}) {
        const json d = ev.value(dir, json::object());
        h << "<tr>" << td(dir);
        for (const char* k : kinds) h << td(std::to_string(u64(d, k)));
        h << "</tr>";
    }
    h << "</table>";
}

}  // namespace

std::string stage_share(uint64_t stage_sum, uint64_t q2c_sum) {
    if (!q2c_sum) return "n/a";
    char b[32];
    std::snprintf(b, sizeof b, "%.2f %%", 100.0 * double(stage_sum) / double(q2c_sum));
    return b;
}

std::string breakdown_section(const json& trace) {
    std::ostringstream h;
    bool any = false;
    const json events = trace.value("block_events", json::array());
    for (const auto& d : trace.value("devices", json::array())) {
        const json hs = d.value("histograms", json::object());
        const std::string dev = d.value("dev", ""), disk = d.value("disk", dev);
        const json* ev = nullptr;
        for (const auto& e : events)
            if (e.value("dev", "") == dev) ev = &e;
        const bool r = has_stages(hs, "read"), w = has_stages(hs, "write");
        if (!r && !w && !ev) continue;
        any = true;
        if (r) direction_block(h, hs, disk, "read");
        if (w) direction_block(h, hs, disk, "write");
        if (ev) events_table(h, *ev, disk);
    }
    if (!any) return "";
    return "<section id=\"breakdown\"><h2>Block layer breakdown</h2><p class=\"note\">Where a request's time goes "
           "below the syscall, as blktrace/btt splits it (kvio trace --breakdown). Each staged request counts in "
           "Q2G, then G2I + I2D (through the scheduler or a plug) or G2D (issued without an insert), then D2C; their "
           "sums add up to Q2C. A request whose first bio was queued before the trace is in no stage. Merges, "
           "splits and requeues are tracefs' block_rq_merge, block_bio_backmerge/frontmerge, block_split and "
           "block_rq_requeue events.</p>" +
           h.str() + "</section>\n";
}

}  // namespace kvio::report
