#include "distiller/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/count_noun.h"
#include "distiller/fidelity.h"
#include "distiller/profile.h"

namespace kvio::distiller {

namespace {

struct Window {
    WindowStats s;
    Dist sizes[2], depth;
};

Window window(const std::vector<DataCmd>& d, size_t b, size_t e) {
    Window w;
    uint64_t reads = 0, seq = 0;
    for (size_t i = b; i < e; ++i) {
        reads += !d[i].write;
        seq += d[i].seq;
        w.s.bytes += d[i].bytes;
        ++w.sizes[d[i].write][d[i].bytes];
        ++w.depth[d[i].inflight];
    }
    w.s.cmds = e - b;
    if (e > b) {
        w.s.read_pct = 100.0 * double(reads) / double(e - b);
        w.s.seq_pct = 100.0 * double(seq) / double(e - b);
    }
    w.s.depth_median = uint32_t(dist_quantile(w.depth, 0.5));
    return w;
}

constexpr uint64_t kMinDirCmds = 5;
// Commands per window at least: a size of 2 % share (kvio gen's 4 KiB headers) drawn at random by fio's bssplit
// varies by sqrt(0.02 · 0.98 / 100) = 1.4 points in a window of 100, well below a 0.05 TV bound; in windows of 50
// the gen store-then-load replay reached 0.058 (measured).
constexpr size_t kMinWindowCmds =
    100;  // a direction with fewer commands in a window has no size distribution to speak of

// Runs of one kind are one phase here: a replay's stonewalled sections of one mix (fio idles between jobs)
// and the original's repeats are the same sequence of mixes.
std::vector<Phase> collapse(const std::vector<Phase>& ph) {
    std::vector<Phase> out;
    for (const auto& p : ph)
        if (!out.empty() && out.back().kind == p.kind)
            out.back().end = p.end;
        else
            out.push_back(p);
    return out;
}

}  // namespace

std::vector<Phase> reconcile_phases(const std::vector<DataCmd>& o, const std::vector<Phase>& po,
                                    const std::vector<DataCmd>& r, std::vector<Phase> pr) {
    const size_t n = o.size(), m = r.size();
    if (!n || !m || pr.empty()) return pr;
    // Commands [b, e) of one side and the other side's commands at the same share of its run.
    auto to_orig = [&](size_t x) { return size_t(uint64_t(x) * n / m); };
    auto to_replay = [&](size_t y) { return size_t(uint64_t(y) * m / n); };
    auto same_as_trace = [&](size_t rb, size_t re, size_t ob, size_t oe) {
        return oe > ob && re > rb && !mixes_differ(summarize(r, rb, re), summarize(o, ob, oe));
    };
    const size_t tol = 2 * phase_window(m);
    auto near = [&](size_t a, size_t b) { return (a > b ? a - b : b - a) <= tol; };
    // A replay boundary without a trace boundary near it stands only where the replay departs from the trace.
    for (size_t j = 0; j + 1 < pr.size();) {
        const size_t x = pr[j + 1].begin;
        const bool traced =
            std::any_of(po.begin() + 1, po.end(), [&](const Phase& p) { return near(x, to_replay(p.begin)); });
        if (!traced && same_as_trace(pr[j].begin, pr[j].end, to_orig(pr[j].begin), to_orig(pr[j].end)) &&
            same_as_trace(pr[j + 1].begin, pr[j + 1].end, to_orig(pr[j + 1].begin), to_orig(pr[j + 1].end))) {
            pr[j].end = pr[j + 1].end;
            pr.erase(pr.begin() + long(j) + 1);
        } else {
            ++j;
        }
    }
    // A trace boundary the replay's detector did not call is placed in the replay where the replay follows both trace
    // phases on its two sides.
    for (size_t k = 1; k < po.size(); ++k) {
        const size_t x = to_replay(po[k].begin);
        if (std::any_of(pr.begin() + 1, pr.end(), [&](const Phase& p) { return near(p.begin, x); })) continue;
        auto it = std::find_if(pr.begin(), pr.end(), [&](const Phase& p) { return p.begin < x && x < p.end; });
        if (it == pr.end()) continue;
        const size_t lo = std::max(it->begin, to_replay(po[k - 1].begin)), hi = std::min(it->end, to_replay(po[k].end));
        if (!same_as_trace(lo, x, to_orig(lo), po[k].begin) || !same_as_trace(x, hi, po[k].begin, to_orig(hi)))
            continue;
        Phase tail = *it;
        tail.begin = it->end = x;
        tail.idle_before_ns = 0;
        pr.insert(it + 1, tail);
    }
    return pr;
}

TimeFidelity score_over_time(const std::vector<DataCmd>& o, const std::vector<DataCmd>& r, size_t max_windows,
                             const PhaseOptions& popt) {
    TimeFidelity f;
    const size_t n = std::min(o.size(), r.size());
    f.windows = std::min(std::max<size_t>(1, max_windows), std::max<size_t>(1, n / kMinWindowCmds));
    const size_t k = f.windows;
    for (size_t i = 0; i < k && n; ++i) {
        Window a = window(o, i * o.size() / k, (i + 1) * o.size() / k);
        Window b = window(r, i * r.size() / k, (i + 1) * r.size() / k);
        WindowScore s;
        s.orig = a.s;
        s.replay = b.s;
        s.read_err = std::fabs(a.s.read_pct - b.s.read_pct);
        s.seq_err = std::fabs(a.s.seq_pct - b.s.seq_pct);
        s.depth_tv = tv_distance(a.depth, b.depth);
        for (int dir = 0; dir < 2; ++dir)
            if (dist_total(a.sizes[dir]) >= kMinDirCmds && dist_total(b.sizes[dir]) >= kMinDirCmds)
                s.size_tv = std::max(s.size_tv, tv_distance(a.sizes[dir], b.sizes[dir]));
        f.worst_read_err = std::max(f.worst_read_err, s.read_err);
        f.worst_size_tv = std::max(f.worst_size_tv, s.size_tv);
        f.worst_depth_tv = std::max(f.worst_depth_tv, s.depth_tv);
        f.worst_seq_err = std::max(f.worst_seq_err, s.seq_err);
        f.per_window.push_back(s);
    }

    const auto po = collapse(detect_phases(o, popt));
    const auto detected = collapse(detect_phases(r, popt));
    const auto pr = reconcile_phases(o, po, r, detected);
    auto& pc = f.phases;
    pc.orig = po.size();
    pc.replay = pr.size();
    pc.replay_detected = detected.size();
    pc.in_order = pc.orig == pc.replay;
    for (const auto& p : po) {
        MixSummary m = summarize(o, p.begin, p.end);
        pc.depth_orig.push_back(m.depth_median);
        pc.dir_depth_orig.push_back({m.dir_depth_median[0], m.dir_depth_median[1]});
        pc.mix_orig.push_back(describe(m));
    }
    for (const auto& p : pr) {
        MixSummary m = summarize(r, p.begin, p.end);
        pc.depth_replay.push_back(m.depth_median);
        pc.dir_depth_replay.push_back({m.dir_depth_median[0], m.dir_depth_median[1]});
        pc.mix_replay.push_back(describe(m));
    }
    f.worst_volume_err = pc.in_order ? 0.0 : 100.0;
    if (pc.in_order) {
        for (size_t i = 0; i < po.size(); ++i) {
            MixSummary a = summarize(o, po[i].begin, po[i].end), b = summarize(r, pr[i].begin, pr[i].end);
            if (mixes_differ(a, b)) pc.in_order = false;
            double err = a.bytes ? 100.0 * std::fabs(double(b.bytes) - double(a.bytes)) / double(a.bytes) : 0.0;
            pc.volume_err_pct.push_back(err);
            f.worst_volume_err = std::max(f.worst_volume_err, err);
        }
    }
    return f;
}

std::string summary_line(const Fidelity& w, const TimeFidelity& t) {
    char b[512];
    std::snprintf(
        b, sizeof b,
        "worst of %s: read share error %.2f points, size TV %.4f, depth TV %.4f, sequential error %.2f points; "
        "phases %zu -> %zu %s, volume error <= %.2f %%; whole run: size TV read %.4f write %.4f, rwmixread error %.2f "
        "points, queue-depth TV %.4f, sequential error %.2f points",
        count_noun(t.windows, "window").c_str(), t.worst_read_err, t.worst_size_tv, t.worst_depth_tv, t.worst_seq_err,
        t.phases.orig, t.phases.replay, t.phases.in_order ? "in order" : "NOT matching", t.worst_volume_err,
        w.size_tv_read, w.size_tv_write, w.rwmix_err, w.qd_tv, w.seq_err);
    return b;
}

// {"read": [...], "write": [...]} of per-phase [read, write] values.
static nlohmann::json dir_depths(const std::vector<std::array<uint32_t, 2>>& v) {
    nlohmann::json j = {{"read", nlohmann::json::array()}, {"write", nlohmann::json::array()}};
    for (const auto& a : v) j["read"].push_back(a[0]), j["write"].push_back(a[1]);
    return j;
}

nlohmann::json to_json(const TimeFidelity& f) {
    auto side = [](const WindowStats& s) {
        return nlohmann::json{{"read_pct", std::round(s.read_pct * 100) / 100},
                              {"seq_pct", std::round(s.seq_pct * 100) / 100},
                              {"depth_median", s.depth_median},
                              {"cmds", s.cmds},
                              {"bytes", s.bytes}};
    };
    nlohmann::json w = nlohmann::json::array();
    for (const auto& s : f.per_window)
        w.push_back({{"orig", side(s.orig)},
                     {"replay", side(s.replay)},
                     {"read_err_points", s.read_err},
                     {"size_tv", s.size_tv},
                     {"depth_tv", s.depth_tv},
                     {"seq_err_points", s.seq_err}});
    const auto& p = f.phases;
    return {
        {"windows", f.windows},
        {"by", "commands"},
        {"worst",
         {{"read_err_points", f.worst_read_err},
          {"size_tv", f.worst_size_tv},
          {"depth_tv", f.worst_depth_tv},
          {"seq_err_points", f.worst_seq_err},
          {"phase_volume_err_pct", f.worst_volume_err}}},
        {"per_window", w},
        {"phases",
         {{"orig", p.orig},
          {"replay", p.replay},
          {"replay_detected", p.replay_detected},
          {"in_order", p.in_order},
          {"volume_err_pct", p.volume_err_pct},
          {"depth_median", {{"orig", p.depth_orig}, {"replay", p.depth_replay}}},
          {"dir_depth_median", {{"orig", dir_depths(p.dir_depth_orig)}, {"replay", dir_depths(p.dir_depth_replay)}}},
          {"mix", {{"orig", p.mix_orig}, {"replay", p.mix_replay}}}}}};
}

}  // namespace kvio::distiller
