#include "drives/drives_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <sstream>

#include "drives/job_text.h"
#include "report/svg_chart.h"

namespace kvio::drives {

using nlohmann::json;
using report::html_escape;

namespace {

double median_of(const json& spread) {
    return spread.is_object() && spread.contains("median") ? spread["median"].get<double>() : NAN;
}

struct Column {
    const char* title;
    bool higher_is_better;
    double (*get)(const json& mode);
    const char* fmt;
    bool ranked = true;  ///< false: no ★ (a depth or a share of the drive's own ceiling is no better when higher)
};

double phase_total(const json& m, const char* dir, const char* key) {
    if (!m.contains("phases") || m["phases"].empty()) return NAN;
    return median_of(m["phases"].back()[dir][key]);
}

double dev_fig(const json& m, const char* key) {
    return m.contains("device") && m["device"].is_object() ? median_of(m["device"][key]) : NAN;
}

/// The mean device queue depth of the busier direction (median over rounds), as the console's QD column.
double qd_fig(const json& m) { return std::fmax(dev_fig(m, "qd_read_mean"), dev_fig(m, "qd_write_mean")); }

/// The largest share of the drive's own ceiling (probe; summary.cpp share_json), in %, as the console's ceil%.
double ceil_pct(const json& m) {
    double best = NAN;
    if (m.contains("share_of_ceiling") && m["share_of_ceiling"].is_object())
        for (const auto& [k, v] : m["share_of_ceiling"].items())
            if (v.is_number()) best = std::isnan(best) ? v.get<double>() * 100 : std::fmax(best, v.get<double>() * 100);
    return best;
}

const Column kQdColumn = {"QD", false, qd_fig, "%.1f", false};
const Column kCeilColumn = {"ceil%", true, ceil_pct, "%.0f", false};

const Column kColumns[] = {
    {"MB/s (verdict, closed)", true,
     [](const json& m) { return phase_total(m, "read", "mb_s") + phase_total(m, "write", "mb_s"); }, "%.1f"},
    {"read IOPS", true, [](const json& m) { return phase_total(m, "read", "iops"); }, "%.0f"},
    {"write IOPS", true, [](const json& m) { return phase_total(m, "write", "iops"); }, "%.0f"},
    {"read clat p99 (µs)", false, [](const json& m) { return phase_total(m, "read", "clat_p99_ns") / 1e3; }, "%.0f"},
    {"write clat p99 (µs)", false, [](const json& m) { return phase_total(m, "write", "clat_p99_ns") / 1e3; }, "%.0f"},
    {"D2C read p99 (µs)", false, [](const json& m) { return dev_fig(m, "d2c_read_p99_ns") / 1e3; }, "%.0f"},
    {"D2C write p99 (µs)", false, [](const json& m) { return dev_fig(m, "d2c_write_p99_ns") / 1e3; }, "%.0f"},
    kQdColumn,
    kCeilColumn,
};

/// The open loop's columns: its verdict figure first (the worse direction's completion p99 of each round, median over
/// rounds: the mode's `figure`, ns; summary.h verdict_figure), as the console table shows it, then the closed loop's.
const Column kOpenColumns[] = {
    {"worst clat p99 (µs, verdict)", false,
     [](const json& m) { return m.contains("figure") ? median_of(m["figure"]) / 1e3 : NAN; }, "%.0f"},
    {"MB/s", true, [](const json& m) { return phase_total(m, "read", "mb_s") + phase_total(m, "write", "mb_s"); },
     "%.1f"},
    kColumns[1],
    kColumns[2],
    kColumns[3],
    kColumns[4],
    kColumns[5],
    kColumns[6],
    kQdColumn,
    kCeilColumn,
};

double sim_fig(const json& m, const char* key) {
    return m.contains("simulate") && m["simulate"].is_object() ? median_of(m["simulate"][key]) : NAN;
}

/// The serving workload's columns: the benchmark's headline figures (docs/mlperf-benchmark.md, "Metrics and the
/// results JSON") and the device's D2C.
const Column kSimColumns[] = {
    {"storage tokens/s (verdict)", true, [](const json& m) { return sim_fig(m, "storage_throughput_tokens_per_sec"); },
     "%.1f"},
    {"tokens/s", true, [](const json& m) { return sim_fig(m, "avg_throughput_tokens_per_sec"); }, "%.1f"},
    {"storage read GiB/s", true, [](const json& m) { return sim_fig(m, "storage_read_bandwidth_gib_s"); }, "%.3f"},
    {"storage write GiB/s", true, [](const json& m) { return sim_fig(m, "storage_write_bandwidth_gib_s"); }, "%.3f"},
    {"device read P95 (ms)", false, [](const json& m) { return sim_fig(m, "storage_read_device_p95_ms"); }, "%.2f"},
    {"device write P95 (ms)", false, [](const json& m) { return sim_fig(m, "storage_write_device_p95_ms"); }, "%.2f"},
    {"D2C read p99 (µs)", false, [](const json& m) { return dev_fig(m, "d2c_read_p99_ns") / 1e3; }, "%.0f"},
    {"D2C write p99 (µs)", false, [](const json& m) { return dev_fig(m, "d2c_write_p99_ns") / 1e3; }, "%.0f"},
    kCeilColumn,
};

/// True for a drive the ranking of `mode` left out (failed, or served nothing: drives.json left_out_of_verdicts):
/// it gets no ★.
bool left_out(const json& d, const std::string& mode, const json& t) {
    if (t.value("status", "") == "failed") return true;
    if (!d.contains("left_out_of_verdicts") || !d["left_out_of_verdicts"].contains(mode)) return false;
    for (const auto& l : d["left_out_of_verdicts"][mode])
        if (l.value("name", "") == t["name"]) return true;
    return false;
}

std::string cell(double v, const char* f) {
    if (std::isnan(v) || v <= 0) return "–";
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

std::string table(const json& d, const std::string& mode) {
    std::ostringstream o;
    const std::span<const Column> cols = mode == "simulate" ? std::span<const Column>(kSimColumns)
                                         : mode == "trace"  ? std::span<const Column>(kOpenColumns)
                                                            : std::span<const Column>(kColumns);
    o << "<table><tr><th>drive</th>";
    for (const auto& c : cols) o << "<th>" << html_escape(c.title) << "</th>";
    o << "</tr>\n";
    std::vector<double> best(cols.size(), NAN);
    for (const auto& t : d["targets"])
        for (size_t i = 0; i < cols.size() && !left_out(d, mode, t); ++i) {
            double v = cols[i].get(t["modes"][mode]);
            if (std::isnan(v) || v <= 0) continue;
            if (std::isnan(best[i]) || (cols[i].higher_is_better ? v > best[i] : v < best[i])) best[i] = v;
        }
    for (const auto& t : d["targets"]) {
        o << "<tr><td>" << html_escape(t["name"].get<std::string>());
        if (t["status"] != "ok") o << " <b class=bad>" << html_escape(t["status"].get<std::string>()) << "</b>";
        o << "</td>";
        for (size_t i = 0; i < cols.size(); ++i) {
            double v = cols[i].get(t["modes"][mode]);
            bool b = cols[i].ranked && !std::isnan(v) && v == best[i] && !left_out(d, mode, t);
            o << "<td" << (b ? " class=best" : "") << ">" << cell(v, cols[i].fmt) << (b ? " ★" : "") << "</td>";
        }
        o << "</tr>\n";
    }
    o << "</table>\n<ul>";
    for (const auto& v : d["verdicts"][mode]) o << "<li>" << html_escape(v["text"].get<std::string>()) << "</li>";
    if (d.contains("left_out_of_verdicts"))
        for (const auto& l : d["left_out_of_verdicts"][mode])
            o << "<li>" << html_escape(l["text"].get<std::string>()) << "</li>";
    o << "</ul>\n";
    bool kv_head = false;  // the KV line per drive (kv_line.h), when the run named a model
    for (const auto& t : d["targets"]) {
        const json* kv = t.contains("modes") && t["modes"].contains(mode) && t["modes"][mode].contains("kv")
                             ? &t["modes"][mode]["kv"]
                             : nullptr;
        if (!kv) continue;
        if (!kv_head)
            o << "<p class=kv>KV object: " << html_escape(d["kv"]["label"].get<std::string>())
              << " (at each drive's measured read/write mix)</p>\n<ul class=kv>";
        kv_head = true;
        o << "<li>" << html_escape((*kv)["text"].get<std::string>()) << "</li>";
    }
    if (kv_head) o << "</ul>\n";
    for (const auto& t : d["targets"]) {  // the diagnosis of each drive's median traced round (diagnosis.h)
        if (!t.contains("modes") || !t["modes"].contains(mode)) continue;
        const json& m = t["modes"][mode];
        if (!m.contains("diagnosis") || m["diagnosis"].empty()) continue;
        o << "<p class=diag>Diagnosis of " << html_escape(t["name"].get<std::string>()) << " (median round, round "
          << m["diagnosis_round"].get<int>() + 1 << ")</p>\n<ul class=diag>";
        for (const auto& f : m["diagnosis"])
            o << "<li><b>" << html_escape(f["id"].get<std::string>()) << "</b> " << html_escape(f.value("op", ""))
              << ": " << html_escape(f["summary"].get<std::string>()) << "<br>&rarr; "
              << html_escape(f["action"].get<std::string>()) << "</li>";
        o << "</ul>\n";
    }
    return o.str();
}

/// One CDF chart: x = latency (log10 µs), y = percent; one polyline per drive of the median round's fio percentiles.
std::string cdf_chart(const json& d, const std::string& mode, const char* dir) {
    static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
    const double W = 560, H = 260, L = 50, B = 30;
    double lo = 1e18, hi = 0;
    std::vector<std::pair<std::string, json>> lines;
    std::vector<size_t> colour_of;  // the target's index: one colour per drive in every chart
    std::string key = std::string(dir) + "_clat_cdf";
    for (size_t ti = 0; ti < d["targets"].size(); ++ti) {
        const json& t = d["targets"][ti];
        const json& rounds = t["modes"][mode]["rounds"];
        std::vector<json> ok;
        for (const auto& r : rounds)
            if (r["ok"] == true && r.contains(key) && !r[key].empty()) ok.push_back(r);
        if (ok.empty()) continue;
        std::sort(ok.begin(), ok.end(), [](const json& a, const json& b) { return a["mb_s"] < b["mb_s"]; });
        const json& cdf = ok[ok.size() / 2][key];
        for (const auto& p : cdf) lo = std::min(lo, p[1].get<double>()), hi = std::max(hi, p[1].get<double>());
        lines.emplace_back(t["name"], cdf);
        colour_of.push_back(ti);
    }
    std::ostringstream o;
    o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "'>"
      << "<text x='" << L << "' y='14' font-size='13'>" << dir << " completion latency CDF (" << html_escape(mode)
      << ")</text>";
    if (lines.empty() || hi <= 0) return o.str() + "<text x='60' y='120'>no samples</text></svg>";
    double x0 = std::log10(std::max(lo, 1.0)), x1 = std::log10(hi) + 0.05;
    if (x1 - x0 < 0.1) x1 = x0 + 0.1;
    auto X = [&](double ns) { return L + (std::log10(std::max(ns, 1.0)) - x0) / (x1 - x0) * (W - L - 10); };
    auto Y = [&](double pct) { return H - B - pct / 100 * (H - B - 24); };
    o << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - 10 << "' y2='" << H - B << "' stroke='#888'/>";
    for (double e = std::ceil(x0); e <= x1; e += 1)
        o << "<text x='" << X(std::pow(10, e)) << "' y='" << H - 12 << "' font-size='11'>"
          << html_escape(report::human_ns(std::pow(10, e))) << "</text>";
    for (int p : {0, 50, 90, 100}) o << "<text x='4' y='" << Y(p) + 4 << "' font-size='11'>" << p << "%</text>";
    for (size_t i = 0; i < lines.size(); ++i) {
        o << "<polyline fill='none' stroke-width='2' stroke='" << kColors[colour_of[i] % std::size(kColors)]
          << "' points='";
        for (const auto& p : lines[i].second) o << X(p[1].get<double>()) << "," << Y(p[0].get<double>()) << " ";
        o << "'><title>" << html_escape(lines[i].first) << "</title></polyline>";
        o << "<text x='" << W - 120 << "' y='" << 40 + 14 * i << "' font-size='12' fill='"
          << kColors[colour_of[i] % std::size(kColors)] << "'>" << html_escape(lines[i].first) << "</text>";
    }
    return o.str() + "</svg>";
}

/// Throughput over time, one polyline per drive (`dir` "read" or "write") of the drive's median round: for
/// "simulate" the results' per-second storage GiB/s (kvio.bandwidth_timeline, median by storage tokens/s), for a
/// fio mode the bandwidth log's MB/s per window (`bw_timeline`, parse_bw_logs; median by MB/s).
std::string timeline_chart(const json& d, const std::string& mode, const char* dir) {
    static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
    const double W = 560, H = 240, L = 50, B = 30;
    const size_t col = std::string(dir) == "read" ? 1 : 2;
    const bool sim = mode == "simulate";
    const std::string key = sim ? "timeline" : "bw_timeline";
    auto figure = [&](const json& r) {
        return sim ? r["simulate"]["storage_throughput_tokens_per_sec"].get<double>() : r["mb_s"].get<double>();
    };
    double tmax = 0, ymax = 0;
    struct Line {
        std::string name;
        json points;
        size_t color;  // the target's index, so a drive has one colour in every chart (the CDFs too)
    };
    std::vector<Line> lines;
    std::vector<std::string> without;  // drives with rounds but no sample: named, not silently missing
    for (size_t ti = 0; ti < d["targets"].size(); ++ti) {
        const json& t = d["targets"][ti];
        std::vector<json> ok;
        bool measured = false;
        for (const auto& r : t["modes"][mode]["rounds"]) {
            measured = measured || r["ok"] == true;
            if (r["ok"] == true && r.contains(key) && !r[key].empty()) ok.push_back(r);
        }
        if (ok.empty()) {
            if (measured) without.push_back(t["name"]);
            continue;
        }
        std::sort(ok.begin(), ok.end(), [&](const json& a, const json& b) { return figure(a) < figure(b); });
        const json& tl = ok[ok.size() / 2][key];
        for (const auto& p : tl) tmax = std::max(tmax, p[0].get<double>()), ymax = std::max(ymax, p[col].get<double>());
        lines.push_back({t["name"], tl, ti});
    }
    std::string no_sample;  // fio logs nothing for a job inside its first window, nor for a remote run
    for (const auto& n : without) no_sample += (no_sample.empty() ? "" : ", ") + n;
    if (!no_sample.empty())
        no_sample = "<text x='" + std::to_string(L) + "' y='" + std::to_string(H - 1) +
                    "' font-size='11' fill='#666'>no sample: " + html_escape(no_sample) +
                    (sim ? "" : " (a remote run, or a run shorter than a log window)") + "</text>";
    const std::string title = sim ? std::string("storage ") + dir + " GiB/s over time (median round)"
                                  : std::string("fio ") + dir + " MB/s over time (bandwidth log, " +
                                        std::to_string(kBwLogMs) + " ms windows, median round)";
    std::ostringstream o;
    o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "'>"
      << "<text x='" << L << "' y='14' font-size='13'>" << html_escape(title) << "</text>";
    if (lines.empty() || tmax <= 0 || ymax <= 0)
        return o.str() + "<text x='60' y='120'>no samples</text>" + no_sample + "</svg>";
    auto X = [&](double ts) { return L + ts / tmax * (W - L - 10); };
    auto Y = [&](double v) { return H - B - v / ymax * (H - B - 24); };
    o << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - 10 << "' y2='" << H - B << "' stroke='#888'/>"
      << "<text x='" << W - 60 << "' y='" << H - 12 << "' font-size='11'>" << cell(tmax, "%.0f") << " s</text>"
      << "<text x='4' y='" << Y(ymax) + 4 << "' font-size='11'>" << cell(ymax, "%.2f") << "</text>";
    for (size_t i = 0; i < lines.size(); ++i) {
        const char* colour = kColors[lines[i].color % std::size(kColors)];
        o << "<polyline fill='none' stroke-width='2' stroke='" << colour << "' points='";
        for (const auto& p : lines[i].points) o << X(p[0].get<double>()) << "," << Y(p[col].get<double>()) << " ";
        o << "'><title>" << html_escape(lines[i].name) << "</title></polyline>";
        o << "<text x='" << W - 120 << "' y='" << 40 + 14 * i << "' font-size='12' fill='" << colour << "'>"
          << html_escape(lines[i].name) << "</text>";
    }
    return o.str() + no_sample + "</svg>";
}

/// One row of the drives table: the target, its ceiling probe and what sysfs says about its disk.
std::string drive_row(const json& t) {
    std::ostringstream o;
    const json& c = t["ceiling"];
    auto ceil = [&](const char* k, const char* f) { return c.contains(k) ? cell(c[k].get<double>(), f) : "–"; };
    std::string where = t["host"].get<std::string>() + (t["host"] == "" ? "" : ":") + t["path"].get<std::string>();
    std::string dev;
    const json& info = t["info"];
    if (info.contains("device")) {
        const json& dv = info["device"];
        for (const char* k : {"disk", "model", "serial", "firmware", "backing_file"})
            if (dv.contains(k) && dv[k].is_string() && !dv[k].get<std::string>().empty())
                dev += std::string(dev.empty() ? "" : " · ") + k + " " + dv[k].get<std::string>();
        if (dv.contains("max_sectors_kb")) dev += " · max_sectors_kb " + dv["max_sectors_kb"].dump();
    } else {
        dev = "kind " + info.value("kind", std::string("?"));
    }
    o << "<tr><td>" << html_escape(t["name"].get<std::string>()) << "</td><td>" << html_escape(where) << "</td><td>"
      << ceil("seq_read_mb_s", "%.1f") << "</td><td>" << ceil("seq_write_mb_s", "%.1f") << "</td><td>"
      << ceil("rand_read_4k_iops", "%.0f") << "</td><td style='text-align:left'>" << html_escape(dev)
      << (c.contains("error") ? " · probe: " + html_escape(c["error"].get<std::string>()) : "")
      << (t.contains("error") ? " · <b class=bad>" + html_escape(t["error"].get<std::string>()) + "</b>" : "")
      << "</td></tr>";
    return o.str();
}

}  // namespace

std::string drives_html(const json& d) {
    std::ostringstream o;
    o << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>kvio drives</title><style>"
         "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
         "padding:3px 8px;text-align:right}td:first-child{text-align:left}.best{background:#dfd;font-weight:bold}"
         ".bad{color:#c00}</style></head><body>\n<h1>kvio drives</h1>\n<p>job "
      << html_escape(d.value("job", "")) << " · " << d.value("rounds", 0) << " rounds · kvio "
      << html_escape(d.value("kvio_version", "")) << " · " << html_escape(d.value("fio_version", "")) << " · kernel "
      << html_escape(d.value("kernel", "")) << "</p>\n<p>Each cell: the median over rounds; ★ the best of its "
      << "column among the ranked drives. A verdict names a difference only when the rounds do not overlap "
      << "(docs/drives.md).</p>\n";
    if (d.contains("stopped_by_signal") && d["stopped_by_signal"].is_number_integer()) {
        const int sig = d["stopped_by_signal"].get<int>();
        o << "<p class=bad>Stopped by signal " << sig << " (" << html_escape(strsignal(sig))
          << "): the rounds that ran are below; a run the signal cut is not counted.</p>\n";
    }
    for (const auto& m : d["modes"]) {
        std::string mode = m;
        if (mode == "simulate") {
            o << "<h2>the serving workload (kvio simulate)</h2>\n"
              << table(d, mode) << timeline_chart(d, mode, "read") << "\n"
              << timeline_chart(d, mode, "write") << "\n";
            continue;
        }
        o << "<h2>" << (mode == "closed" ? "closed loop (capacity)" : "open loop at the job's rates") << "</h2>\n"
          << table(d, mode) << timeline_chart(d, mode, "read") << "\n"
          << timeline_chart(d, mode, "write") << "\n"
          << cdf_chart(d, mode, "read") << "\n"
          << cdf_chart(d, mode, "write") << "\n";
    }
    o << "<h2>drives</h2><table><tr><th>drive</th><th>target</th><th>seq read MB/s</th><th>seq write MB/s</th>"
         "<th>4 KiB rand read IOPS</th><th>device</th></tr>";
    for (const auto& t : d["targets"]) o << drive_row(t);
    o << "</table></body></html>\n";
    return o.str();
}

}  // namespace kvio::drives
