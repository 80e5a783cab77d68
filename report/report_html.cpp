#include "report/report_html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/histogram.h"
#include "common/jsonl.h"
#include "report/report_breakdown.h"
#include "report/report_diagnosis.h"
#include "report/report_simulation.h"
#include "report/svg_chart.h"

namespace kvio::report {

using report::html_escape;
using report::human_ns;

namespace {

struct CmdRec {
    bool write = false;
    uint64_t off = 0, bytes = 0, ts_issue = 0, ts_complete = 0;
};
struct OpRec {
    bool store = false;
    uint64_t object_id = 0, bytes = 0, ts_start = 0, ts = 0, transfers = 0;
};

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("report: cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// 4096 -> "4 KiB", 33554432 -> "32 MiB" (human_bytes' k/m/g suffixes are powers of 1024).
std::string iec(uint64_t b) {
    std::string h = human_bytes(b);
    char c = h.empty() ? 0 : h.back();
    if (c == 'k' || c == 'K' || c == 'm' || c == 'M' || c == 'g' || c == 'G' || c == 't' || c == 'T')
        return h.substr(0, h.size() - 1) + " " + char(std::toupper(c)) + "iB";
    return h + " B";
}
std::string ns_tick(uint64_t lo, uint64_t) { return human_ns(double(lo)); }
std::string bytes_tick(uint64_t lo, uint64_t) { return lo ? iec(lo) : "0"; }
std::string int_tick(uint64_t lo, uint64_t) { return std::to_string(lo); }

std::string pct(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f %%", v);
    return b;
}
std::string fix(double v, int prec = 4) {
    char b[32];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    return b;
}
std::string jnum(const json& j, const char* k, int prec = 4) {
    if (!j.contains(k) || j[k].is_null()) return "n/a";
    return fix(j[k].get<double>(), prec);
}
std::string ju(const json& j, const char* k) {
    return j.contains(k) && j[k].is_number() ? std::to_string(j[k].get<uint64_t>()) : "n/a";
}
std::string td(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }

std::string score_row(const std::string& name, const json& s) {
    uint64_t n = s.value("objects", uint64_t(0)), ex = s.value("exact_match", uint64_t(0));
    std::string wape = s.contains("wape") && s["wape"].is_number() ? pct(100.0 * s["wape"].get<double>()) : "n/a";
    return "<tr>" + td(name) + td(std::to_string(n)) +
           td(std::to_string(ex) + " (" + (n ? pct(100.0 * double(ex) / double(n)) : "n/a") + ")") +
           td(ju(s, "count_match")) + td(ju(s, "per_cmd_size_match")) + td(ju(s, "objects_no_cmds")) + td(wape) +
           td(jnum(s, "size_tv")) + "</tr>";
}

}  // namespace

// Trace and replay side by side over time: per window (equal shares of each run's commands) the read share and
// the median depth of both, as numbers and bars, and the phase sequences.
static void fidelity_over_time(std::ostream& h, const json& t) {
    if (!t.contains("per_window")) return;
    const json& w = t["worst"];
    h << "<h3>Fidelity over time</h3><p class=\"note\">Both runs cut into " << ju(t, "windows")
      << " windows of equal shares of their commands (normalised to each run's length). Worst window: read share error "
      << jnum(w, "read_err_points", 2) << " points, size TV " << jnum(w, "size_tv") << ", depth TV "
      << jnum(w, "depth_tv") << ", sequential error " << jnum(w, "seq_err_points", 2) << " points. Phases: trace "
      << ju(t["phases"], "orig") << ", replay " << ju(t["phases"], "replay")
      << (t["phases"].value("in_order", false) ? ", in order" : ", NOT matching") << ", worst phase volume error "
      << jnum(w, "phase_volume_err_pct", 2) << " %.</p>"
      << "<table id=\"fidelity-time\"><tr><th>window</th><th>read share, trace</th><th>read share, replay</th>"
         "<th>depth, trace</th><th>depth, replay</th><th>mean size, trace</th><th>mean size, replay</th><th>size "
         "TV</th><th>depth TV</th>"
         "<th>seq. error (points)</th></tr>";
    auto mean_size = [](const json& s) {
        const uint64_t n = s.value("cmds", uint64_t(0));
        return n ? iec(s.value("bytes", uint64_t(0)) / n) : std::string("n/a");
    };
    auto bar = [](double pct, const char* color) {
        return "<td><span style=\"display:inline-block;height:10px;width:" + fix(std::clamp(pct, 0.0, 100.0) * 0.8, 1) +
               "px;background:" + color + "\"></span> " + fix(pct, 1) + " %</td>";
    };
    size_t i = 0;
    for (const auto& x : t["per_window"]) {
        const json &o = x["orig"], &r = x["replay"];
        h << "<tr>" << td(std::to_string(++i)) << bar(o.value("read_pct", 0.0), "#1f77b4")
          << bar(r.value("read_pct", 0.0), "#1f77b4") << td(ju(o, "depth_median")) << td(ju(r, "depth_median"))
          << td(mean_size(o)) << td(mean_size(r)) << td(jnum(x, "size_tv")) << td(jnum(x, "depth_tv"))
          << td(jnum(x, "seq_err_points", 2)) << "</tr>";
    }
    h << "</table><table id=\"phases\"><tr><th>phase</th><th>trace</th><th>replay</th><th>volume error</th>"
         "<th>read depth, trace / replay</th><th>write depth, trace / replay</th></tr>";
    const json& mix = t["phases"].value("mix", json::object());
    const json& vol = t["phases"].value("volume_err_pct", json::array());
    const json dd = t["phases"].value("dir_depth_median", json::object());
    const json mo = mix.value("orig", json::array()), mr = mix.value("replay", json::array());
    // Per-direction median in-flight of a phase on one side, "-" where that side has no such phase or direction.
    auto depth = [&](const char* side, const char* dir, size_t k) {
        const json a = dd.value(side, json::object()).value(dir, json::array());
        return k < a.size() && a[k].get<uint32_t>() ? std::to_string(a[k].get<uint32_t>()) : std::string("-");
    };
    for (size_t k = 0; k < std::max(mo.size(), mr.size()); ++k)
        h << "<tr>" << td(std::to_string(k + 1)) << td(k < mo.size() ? mo[k].get<std::string>() : "")
          << td(k < mr.size() ? mr[k].get<std::string>() : "")
          << td(k < vol.size() ? fix(vol[k].get<double>(), 2) + " %" : "")
          << td(depth("orig", "read", k) + " / " + depth("replay", "read", k))
          << td(depth("orig", "write", k) + " / " + depth("replay", "write", k)) << "</tr>";
    h << "</table>";
}

namespace {

/// The traced disk's read and write commands (`dev` "MAJ:MIN") of a kvio.events/1 file, in file order.
std::vector<CmdRec> read_cmds(const std::string& path, const std::string& dev) {
    std::vector<CmdRec> cmds;
    JsonlReader r(path);
    json j;
    while (r.next(j)) {
        if (j.value("type", "") != "cmd" || j.value("dev", "") != dev) continue;
        std::string op = j.value("op", "");
        if (op != "read" && op != "write") continue;
        uint64_t issue = get_u64(j, "ts_issue", r.source());  // a "complete_lost" record has no ts_complete
        cmds.push_back({op == "write", get_u64(j, "sector", r.source()) * 512, get_u64(j, "bytes", r.source()), issue,
                        get_u64_or(j, "ts_complete", issue, r.source())});
    }
    return cmds;
}

/// The object ops of a kvio.semantic/1 file, in file order; its meta record (model, geometry, transfer cap) into
/// `meta`.
std::vector<OpRec> read_ops(const std::string& path, json& meta) {
    std::vector<OpRec> ops;
    JsonlReader r(path);
    json j;
    while (r.next(j)) {
        if (j.value("type", "") == "meta") {
            meta = j;
            continue;
        }
        if (!j.contains("op")) continue;
        ops.push_back({get_string(j, "op", r.source()) == "store", get_u64(j, "object_id", r.source()),
                       get_u64(j, "bytes", r.source()), get_u64(j, "ts_start", r.source()),
                       get_u64(j, "ts", r.source()), get_u64_or(j, "transfers", 0, r.source())});
    }
    return ops;
}

/// The document's head: title and the style sheet (no script, no external resource).
void write_head(std::ostream& h, const std::string& title = "kvio run report") {
    h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << html_escape(title)
      << "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:24px;color:#222;max-width:1160px}h1{margin-bottom:4px}"
         "h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}table{border-collapse:collapse;margin:8px "
         "0}"
         "td,th{border:1px solid #ccc;padding:4px "
         "8px;text-align:right}th{background:#f0f0f0}td:first-child{text-align:left}"
         ".charts{display:flex;flex-wrap:wrap;gap:12px}svg.chart{border:1px solid #e4e4e4;background:#fff}"
         "pre{background:#f6f6f6;padding:12px;overflow:auto;font-size:12px}.note{color:#555;font-size:13px}\n"
         "</style></head><body>\n";
}

/// A bar chart of the histogram `hist` (kvio.trace/1 buckets), or `empty`'s text when it holds nothing.
std::string chart(const json& hist, const std::string& title, const std::string& xl, const std::string& yl,
                  std::string (*tick)(uint64_t, uint64_t), const std::string& empty) {
    return report::bar_chart(buckets_of(hist), title, xl, yl, tick, empty);
}

/// Histogram `k` of the histograms object `hs`, null when absent.
json hist_of(const json& hs, const char* k) { return hs.contains(k) ? hs[k] : json(); }

/// The "Run" table: workload, model and geometry, target and its limits, counts, wall time, timeline.
/// `run`: run.json (a missing "target" or "verify_target" is an error); `dinfo`: the traced disk's entry of
/// trace.json; `meta`: semantic.jsonl's meta record.
void summary_section(std::ostream& h, json& run, const json& tr, const json& dinfo, const json& meta,
                     const std::string& dev, size_t n_cmds, size_t n_ops) {
    const json& opt = run["options"];
    const bool sim = opt.value("workload", "objects") == "simulate";
    h << "<h1>kvio run</h1>\n<section id=\"summary\"><h2>Run</h2><table>";
    auto kv = [&](const std::string& k, const std::string& v) {
        h << "<tr><th>" << html_escape(k) << "</th>" << td(v) << "</tr>";
    };
    kv("workload",
       sim ? "simulate (kvio simulate, the serving workload, on ext4)" : "objects (kvio gen: stores, then loads)");
    kv("model", sim ? opt["simulate"].value("model", "") : meta.value("model", ""));
    if (meta.contains("geometry"))
        kv("object size", iec(meta["geometry"].value("per_rank_bytes", uint64_t(0))) + " per object (" +
                              std::to_string(meta["geometry"].value("bytes_per_token", uint64_t(0))) + " B/token)");
    kv("engine / layout", opt.value("engine", "") + " / " + opt.value("layout", ""));
    if (sim) {
        const json& so = opt["simulate"];
        kv("users / duration", std::to_string(so.value("num_users", 0)) + " users, " +
                                   fix(so.value("duration_s", 0.0), 1) + " s, storage I/O " +
                                   so.value("storage_io", "") + ", generation " + so.value("generation_mode", ""));
    } else {
        kv("chunks", std::to_string(opt.value("num_chunks", uint64_t(0))));
    }
    kv("target",
       run["target"].value("path", "") + " (" + run["target"].value("disk", "") + ", " + dev + ")" +
           (run["target"].value("embedded", false) ? ", embedded sparse image on a loop device with direct I/O" : ""));
    kv("max_sectors_kb / max_segments", ju(dinfo, "max_sectors_kb") + " KiB / " + ju(dinfo, "max_segments"));
    kv("transfer cap (max_io_bytes)",
       meta.contains("max_io_bytes") ? iec(meta["max_io_bytes"].get<uint64_t>()) : "n/a");
    kv("verify target", run["verify_target"].value("path", ""));
    kv("device commands traced", std::to_string(n_cmds) + " (trace dropped " + ju(tr, "dropped") +
                                     ", unmatched completions " + ju(tr, "unmatched_completes") + ")");
    kv("object ops", std::to_string(n_ops));
    kv("wall time", fix(run.value("seconds", 0.0), 1) + " s");
    if (run.contains("timeline"))
        kv("timeline", run["timeline"].value("path", "") + " (open in ui.perfetto.dev or chrome://tracing): " +
                           std::to_string(run["timeline"].value("flows", uint64_t(0))) + " object→command flows");
    h << "</table></section>\n";
}

/// The "Scores" section: validate.json's scores per op kind and the join, verify.json's fidelity and its windows.
void scores_section(std::ostream& h, const json& val, const json& fid) {
    h << "<section id=\"scores\"><h2>Scores</h2>"
         "<p class=\"note\">Validation: each object op's device commands against its projection (docs/validate.md). "
         "Exact = command count and bytes equal the projection; WAPE = Σ|measured − projected| / Σ measured bytes; "
         "size TV = total variation distance of log2 command-size distributions (0 = identical).</p>"
         "<table id=\"validate-scores\"><tr><th>ops</th><th>objects</th><th>exact match</th><th>count "
         "match</th><th>per-cmd size match</th>"
         "<th>no cmds</th><th>WAPE</th><th>size TV</th></tr>";
    h << score_row("all", val);
    if (val.contains("per_op"))
        for (const char* k : {"store", "load"})
            if (val["per_op"].contains(k)) h << score_row(k, val["per_op"][k]);
    h << "</table>";
    const json& jn = val.value("join", json::object());
    h << "<p class=\"note\">Join: " << html_escape(jn.value("mode", "")) << " — " << html_escape(jn.value("reason", ""))
      << ". Untagged commands: " << ju(val, "untagged_cmds") << " (" << ju(val, "untagged_bytes") << " B).</p>";
    h << "<p class=\"note\">Fidelity: the distilled fio job replayed under <code>kvio trace</code> on the verify "
         "device, compared "
         "with the original trace (0 = identical distributions; errors in percentage points; ratios replay / "
         "original).</p>"
         "<table id=\"fidelity-scores\"><tr><th>metric</th><th>original</th><th>replay</th><th>score</th></tr>";
    auto frow = [&](const std::string& n, const std::string& a, const std::string& b, const std::string& s) {
        h << "<tr>" << td(n) << td(a) << td(b) << td(s) << "</tr>";
    };
    const json& st = fid.value("size_tv", json::object());
    frow("command size TV, read", "", "", jnum(st, "read"));
    frow("command size TV, write", "", "", jnum(st, "write"));
    const json& rm = fid.value("rwmixread", json::object());
    frow("rwmixread (% of commands)", jnum(rm, "orig", 1), jnum(rm, "replay", 1),
         jnum(fid, "rwmix_err_points", 2) + " points");
    frow("queue depth TV (time-weighted)", "", "", jnum(fid, "qd_tv"));
    const json& sq = fid.value("seq_share", json::object());
    frow("sequential share (%)", jnum(sq, "orig", 1), jnum(sq, "replay", 1),
         jnum(fid, "seq_err_points", 2) + " points");
    frow("D2C p50 ratio", "", "", jnum(fid, "d2c_p50_ratio", 2));
    frow("D2C p99 ratio", "", "", jnum(fid, "d2c_p99_ratio", 2));
    frow("commands", ju(fid, "original_cmds"), ju(fid, "replay_cmds"), "");
    h << "</table>";
    fidelity_over_time(h, fid.value("time_resolved", json::object()));
    h << "</section>\n";
}

/// The "Latency stack" section: D2C, Q2D (device histograms `dh`), VFS, fsync and gap (process histograms `ph`).
void latency_section(std::ostream& h, const json& dh, const json& ph) {
    auto dget = [&](const char* k) { return hist_of(dh, k); };
    auto pget = [&](const char* k) { return hist_of(ph, k); };
    const std::string lat_x = "latency (log2 bucket, lower bound)";
    h << "<section id=\"latency\"><h2>Latency stack</h2><p class=\"note\">Where time goes, bottom up: D2C (issue to "
         "completion at the "
         "device), Q2D (insert into the queue to issue), VFS (read/write syscall), fsync, and the gaps between a write "
         "and its fsync and "
         "between posix_fadvise and the read. Counts per log2 bucket.</p><div class=\"charts\">";
    h << chart(dget("d2c_write"), "D2C, writes", lat_x, "commands", ns_tick, "");
    h << chart(dget("d2c_read"), "D2C, reads", lat_x, "commands", ns_tick, "");
    h << chart(dget("q2d_write"), "Q2D, writes", lat_x, "commands", ns_tick,
               "no block_rq_insert: no I/O scheduler queueing");
    h << chart(dget("q2d_read"), "Q2D, reads", lat_x, "commands", ns_tick,
               "no block_rq_insert: no I/O scheduler queueing");
    h << chart(pget("vfs_write"), "VFS write", lat_x, "syscalls", ns_tick, "");
    h << chart(pget("vfs_read"), "VFS read", lat_x, "syscalls", ns_tick, "");
    h << chart(pget("fsync"), "fsync", lat_x, "syscalls", ns_tick, "O_DIRECT run: no fsync");
    h << chart(pget("write_fsync_gap"), "gap: write → fsync", "gap (log2 bucket, lower bound)", "gaps", ns_tick,
               "O_DIRECT run: no fsync");
    h << chart(pget("fadvise_read_gap"), "gap: fadvise → read", "gap (log2 bucket, lower bound)", "gaps", ns_tick,
               "O_DIRECT run: no posix_fadvise");
    if (const json a = pget("aio_submit"); a.is_object() && a.value("count", 0) > 0) {  // libaio runs only
        h << chart(pget("aio_submit"), "libaio io_submit", lat_x, "syscalls", ns_tick, "");
        h << chart(pget("aio_getevents"), "libaio io_getevents", lat_x, "syscalls", ns_tick, "no io_getevents");
    }
    h << "</div></section>\n";
}

/// The bssplit and queue-depth sections (device histograms `dh`; trace.json `tr` for the QD sampling).
void sizes_and_depth_sections(std::ostream& h, const json& dh, const json& tr) {
    auto dget = [&](const char* k) { return hist_of(dh, k); };
    h << "<section id=\"sizes\"><h2>Command sizes (bssplit)</h2><div class=\"charts\">";
    h << chart(dget("bssplit_write"), "write command sizes", "command size (log2 bucket, lower bound, bytes)",
               "commands", bytes_tick, "");
    h << chart(dget("bssplit_read"), "read command sizes", "command size (log2 bucket, lower bound, bytes)", "commands",
               bytes_tick, "");
    h << "</div></section>\n<section id=\"qd\"><h2>Queue depth at dispatch</h2>";
    if (uint32_t n = tr.value("qd_sample_every", 1u); n > 1)  // a histogram-mode trace (kvio run's has events: exact)
        h << "<p class=\"note\">Depth sampled at 1 issue in " << n << ", each sample counted " << n << " times.</p>";
    h << "<div class=\"charts\">";
    h << chart(dget("qd_write"), "queue depth, writes", "commands in flight at dispatch (this one included)",
               "commands", int_tick, "");
    h << chart(dget("qd_read"), "queue depth, reads", "commands in flight at dispatch (this one included)", "commands",
               int_tick, "");
    h << "</div></section>\n";
}

/// The "LBA heatmap" section: bytes per (time since `t0`, device offset) cell, `t0`..`t1` in ns.
void lba_section(std::ostream& h, const std::vector<CmdRec>& cmds, uint64_t t0, uint64_t t1) {
    report::HeatGrid g;
    g.cols = 120;
    g.rows = 48;
    g.read.assign(g.cols * g.rows, 0);
    g.write.assign(g.cols * g.rows, 0);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& c : cmds) lo = std::min(lo, c.off), hi = std::max(hi, c.off + c.bytes);
    if (cmds.empty()) lo = 0, hi = 1;
    const double MiB = 1 << 20;
    g.x0 = 0;
    g.x1 = std::max(1e-3, double(t1 - t0) / 1e9);
    g.y0 = double(lo) / MiB;
    g.y1 = std::max(g.y0 + 1, double(hi) / MiB);
    for (const auto& c : cmds) {
        size_t col = std::min(g.cols - 1, size_t(double(c.ts_issue - t0) / 1e9 / g.x1 * double(g.cols)));
        size_t row = std::min(g.rows - 1, size_t((double(c.off) / MiB - g.y0) / (g.y1 - g.y0) * double(g.rows)));
        (c.write ? g.write : g.read)[row * g.cols + col] += double(c.bytes);
    }
    g.title = "LBA heatmap: bytes per (time, device offset) cell";
    g.xlabel = "time since first op (s)";
    g.ylabel = "device offset (MiB)";
    h << "<section id=\"lba\"><h2>LBA heatmap</h2><p class=\"note\">Every traced command at its issue time and "
         "start offset on the "
         "whole disk.</p>"
      << report::heatmap(g) << "</section>\n";
}

/// The "Timeline" section: the whole run's ops over their commands, then a zoom on the first store and first load.
void timeline_section(std::ostream& h, const std::vector<OpRec>& ops, const std::vector<CmdRec>& cmds, uint64_t t0,
                      uint64_t t1) {
    h << "<section id=\"timeline\"><h2>Timeline: object ops and the device commands they caused</h2>"
         "<p class=\"note\">Top lanes: each store/load of a KV object from its first transfer queued to its last "
         "completion. Bottom "
         "lanes: each device command from issue to completion (D2C). Hover an op for its object id and size.</p>";
    std::vector<std::string> lanes = {"object stores", "object loads", "device writes", "device reads"};
    auto spans_for = [&](double scale) {
        std::vector<report::Span> sp;
        for (const auto& o : ops) {
            report::Span s;
            s.t0 = double(o.ts_start - t0) / scale;
            s.t1 = double(o.ts - t0) / scale;
            s.lane = o.store ? 0 : 1;
            s.color = o.store ? "#c0392b" : "#2e6fb5";
            s.label = (o.store ? "store obj " : "load obj ") + std::to_string(o.object_id) + ", " + iec(o.bytes) +
                      ", " + std::to_string(o.transfers) + " transfers, " + human_ns(double(o.ts - o.ts_start));
            s.tooltip = true;
            sp.push_back(s);
        }
        for (const auto& c : cmds) {
            report::Span s;
            s.t0 = double(c.ts_issue - t0) / scale;
            s.t1 = double(c.ts_complete - t0) / scale;
            s.lane = c.write ? 2 : 3;
            s.color = c.write ? "#e08070" : "#70a0d8";
            sp.push_back(s);
        }
        return sp;
    };
    auto all = spans_for(1e9);
    h << report::timeline(lanes, all, 0, double(t1 - t0) / 1e9, "whole run", "time since first op (s)");
    // Zoom on the first store and the first load: individual commands become visible.
    for (bool store : {true, false}) {
        auto it = std::find_if(ops.begin(), ops.end(), [&](const OpRec& o) { return o.store == store; });
        if (it == ops.end()) continue;
        auto z = spans_for(1e6);
        double a = double(it->ts_start - t0) / 1e6, b = double(it->ts - t0) / 1e6;
        double pad = (b - a) * 0.05;
        h << report::timeline(lanes, z, a - pad, b + pad,
                              std::string("zoom: first ") + (store ? "store" : "load") + " (object " +
                                  std::to_string(it->object_id) + ")",
                              "time since first op (ms)");
    }
    h << "</section>\n";
}

/// The distilled job's text and run.json's file list; the document's end.
void job_and_files_sections(std::ostream& h, const std::string& job, const json& run) {
    h << "<section id=\"job\"><h2>Distilled fio job</h2><p class=\"note\">Every value derived from the trace (header "
         "comments say from "
         "what). Its filename is the verify device, detached after the run: edit it before reuse. Exact replay: "
         "job.iolog (fio "
         "read_iolog).</p><pre>"
      << html_escape(job) << "</pre></section>\n";

    // ---- files ----
    h << "<section id=\"files\"><h2>Files</h2><table><tr><th>what</th><th>path</th></tr>";
    const json files = run.value("files", json::object());
    for (const auto& [k, v] : files.items()) h << "<tr>" << td(k) << td(v.get<std::string>()) << "</tr>";
    h << "</table></section>\n</body></html>\n";
}

}  // namespace

void write_report(const std::string& dir, const std::string& path) {
    auto P = [&](const char* n) { return dir + "/" + n; };
    json run = read_json_file(P("run.json"));
    json tr = read_json_file(P("trace.json"));
    json val = read_json_file(P("validate.json"));
    json fid = read_json_file(P("verify.json"));
    std::string job = slurp(P("job.fio"));
    std::string dev = run["target"].value("dev", "");

    // Per-device histograms of the traced disk.
    json dh = json::object();
    json dinfo = json::object();
    for (const auto& d : tr.value("devices", json::array()))
        if (d.value("dev", "") == dev) dinfo = d, dh = d.value("histograms", json::object());
    json ph = tr.value("process", json::object());

    // Commands and ops.
    const std::vector<CmdRec> cmds = read_cmds(P("events.jsonl"), dev);
    json meta;
    const std::vector<OpRec> ops = read_ops(P("semantic.jsonl"), meta);
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (const auto& c : cmds) t0 = std::min(t0, c.ts_issue), t1 = std::max(t1, c.ts_complete);
    for (const auto& o : ops) t0 = std::min(t0, o.ts_start), t1 = std::max(t1, o.ts);
    if (t0 == UINT64_MAX) t0 = t1 = 0;

    std::ostringstream h;
    write_head(h);
    const bool sim = run["options"].value("workload", "objects") == "simulate";
    const json simj = sim ? read_json_file(P("simulate.json")) : json::object();
    summary_section(h, run, tr, dinfo, meta, dev, cmds.size(), ops.size());
    if (sim) h << simulation_section(simj, dh);
    scores_section(h, val, fid);
    latency_section(h, dh, ph);
    sizes_and_depth_sections(h, dh, tr);
    h << breakdown_section(tr);
    const bool events = std::filesystem::exists(P("events.jsonl"));
    h << diagnosis_section(diagnose::diagnose({tr, events ? P("events.jsonl") : ""}), events);
    lba_section(h, cmds, t0, t1);
    timeline_section(h, ops, cmds, t0, t1);
    job_and_files_sections(h, job, run);

    write_text_file(path, h.str());
}

namespace {

/// The trace report's "Trace" table: kernel, duration, loss counters, and per device its commands and limits.
void trace_summary_section(std::ostream& h, const json& tr, const std::string& trace_path) {
    h << "<h1>kvio trace</h1>\n<section id=\"summary\"><h2>Trace</h2><table>";
    auto kv = [&](const std::string& k, const std::string& v) {
        h << "<tr><th>" << html_escape(k) << "</th>" << td(v) << "</tr>";
    };
    kv("trace", trace_path);
    kv("kernel", tr.value("kernel", ""));
    kv("duration", fix(tr.value("duration_s", 0.0), 3) + " s");
    kv("dropped events / unmatched completions", ju(tr, "dropped") + " / " + ju(tr, "unmatched_completes"));
    kv("syscall histograms count", tr.value("process_fds", ""));
    h << "</table><table id=\"devices\"><tr><th>device</th><th>read cmds</th><th>read bytes</th><th>write "
         "cmds</th><th>write bytes</th><th>max_sectors_kb</th><th>max_hw_sectors_kb</th></tr>";
    for (const auto& d : tr.value("devices", json::array())) {
        const json r = d.value("read", json::object()), w = d.value("write", json::object());
        h << "<tr>" << td(d.value("disk", "") + " (" + d.value("dev", "") + ")") << td(ju(r, "cmds"))
          << td(ju(r, "bytes")) << td(ju(w, "cmds")) << td(ju(w, "bytes")) << td(ju(d, "max_sectors_kb"))
          << td(ju(d, "max_hw_sectors_kb")) << "</tr>";
    }
    h << "</table></section>\n";
}

/// Whether device entry `d` of a kvio.trace/1 document saw a read or write command.
bool device_busy(const json& d) {
    return d.value("read", json::object()).value("cmds", uint64_t(0)) +
               d.value("write", json::object()).value("cmds", uint64_t(0)) >
           0;
}

}  // namespace

std::vector<diagnose::Finding> write_trace_report(const TraceReportInputs& in) {
    const json tr = read_json_file(in.trace_json);
    if (tr.value("schema", "") != "kvio.trace/1")
        throw Error(in.trace_json + ": field 'schema': expected \"kvio.trace/1\" (a kvio trace --json summary)" +
                    JsonSource{in.trace_json, 0, "kvio.trace/1"}.other_kind(tr));
    std::ostringstream h;
    write_head(h, "kvio trace report");
    trace_summary_section(h, tr, in.trace_json);
    const auto findings = diagnose::diagnose({tr, in.events, in.trace_json});
    h << diagnosis_section(findings, !in.events.empty());
    const json ph = tr.value("process", json::object());
    bool first = true;
    for (const auto& d : tr.value("devices", json::array())) {
        if (!device_busy(d)) continue;
        const json dh = d.value("histograms", json::object());
        h << "<h2>" << html_escape(d.value("disk", "")) << "</h2>";
        latency_section(h, dh, first ? ph : json::object());
        sizes_and_depth_sections(h, dh, tr);
        first = false;
    }
    h << breakdown_section(tr) << "</body></html>\n";
    write_text_file(in.out, h.str());
    return findings;
}

}  // namespace kvio::report
