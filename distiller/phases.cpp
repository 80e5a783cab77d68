#include "distiller/phases.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <queue>

#include "common/histogram.h"
#include "distiller/profile.h"

namespace kvio::distiller {

std::vector<DataCmd> data_cmds(const std::vector<Cmd>& cmds) {
    std::vector<DataCmd> out;
    // Same tie rule as the profile's sweep: at equal instants completions leave before the issue is counted.
    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> pending, pending_dir[2];
    std::deque<uint64_t> recent_end[2];
    uint64_t last_completion = 0;
    bool seen = false;
    for (size_t i = 0; i < cmds.size(); ++i) {
        const Cmd& c = cmds[i];
        while (!pending.empty() && pending.top() <= c.ts_issue) {
            last_completion = std::max(last_completion, pending.top());
            pending.pop();
        }
        uint64_t idle = pending.empty() && seen && c.ts_issue > last_completion ? c.ts_issue - last_completion : 0;
        pending.push(c.end_ts());
        seen = true;
        if (c.op != Op::Read && c.op != Op::Write) continue;
        auto& own = pending_dir[c.op == Op::Write];
        while (!own.empty() && own.top() <= c.ts_issue) own.pop();
        own.push(c.end_ts());
        DataCmd d;
        d.index = i;
        d.ts = c.ts_issue;
        d.bytes = c.bytes;
        d.inflight = uint32_t(pending.size());
        d.inflight_dir = uint32_t(own.size());
        d.idle_before = idle;
        d.write = c.op == Op::Write;
        auto& win = recent_end[d.write];
        d.seq = std::find(win.begin(), win.end(), c.sector) != win.end();
        win.push_back(c.end_sector());
        if (win.size() > kSeqWindow) win.pop_front();
        out.push_back(d);
    }
    return out;
}

MixSummary summarize(const std::vector<DataCmd>& d, size_t begin, size_t end) {
    MixSummary m;
    std::map<uint64_t, uint64_t> sizes;
    Dist depth, dir_depth[2];
    uint64_t seq = 0;
    for (size_t i = begin; i < end; ++i) {
        (d[i].write ? m.writes : m.reads)++;
        m.bytes += d[i].bytes;
        ++sizes[d[i].bytes * 2 + d[i].write];
        ++depth[d[i].inflight];
        ++dir_depth[d[i].write][d[i].inflight_dir];
        seq += d[i].seq;
    }
    size_t n = end - begin;
    if (n) {
        m.read_share = double(m.reads) / double(n);
        m.seq_share = double(seq) / double(n);
        m.depth_median = uint32_t(dist_quantile(depth, 0.5));
        for (int w = 0; w < 2; ++w)
            if (!dir_depth[w].empty()) m.dir_depth_median[w] = uint32_t(dist_quantile(dir_depth[w], 0.5));
    }
    m.sizes.assign(sizes.begin(), sizes.end());
    return m;
}

namespace {

// TV distance between two sorted (key, count) lists.
double joint_tv(const MixSummary& a, const MixSummary& b) {
    double na = double(a.reads + a.writes), nb = double(b.reads + b.writes);
    if (!na || !nb) return na == nb ? 0.0 : 1.0;
    double s = 0;
    size_t i = 0, j = 0;
    while (i < a.sizes.size() || j < b.sizes.size()) {
        if (j == b.sizes.size() || (i < a.sizes.size() && a.sizes[i].first < b.sizes[j].first))
            s += double(a.sizes[i++].second) / na;
        else if (i == a.sizes.size() || b.sizes[j].first < a.sizes[i].first)
            s += double(b.sizes[j++].second) / nb;
        else
            s += std::fabs(double(a.sizes[i++].second) / na - double(b.sizes[j++].second) / nb);
    }
    return 0.5 * s;
}

// How different two mixes are, scaled so that > 1 is "two phases" (thresholds in mixes_differ's comment).
double mix_distance(const MixSummary& a, const MixSummary& b) {
    double d = std::max({std::fabs(a.read_share - b.read_share) / 0.25, joint_tv(a, b) / 0.5,
                         std::fabs(a.seq_share - b.seq_share) / 0.5});
    uint32_t lo = std::max<uint32_t>(1, std::min(a.depth_median, b.depth_median)),
             hi = std::max(a.depth_median, b.depth_median);
    if (hi >= lo + 2) d = std::max(d, double(hi) / (2.0 * double(lo)));
    return d;
}

uint32_t depth_bucket(uint32_t inflight) { return uint32_t(std::bit_width(inflight)); }

// Add-half smoothed frequencies of one feature over commands [b, e).
struct Freq {
    std::map<uint64_t, double> count;
    double total = 0;
    double p(uint64_t k, double alphabet) const {
        auto it = count.find(k);
        return ((it == count.end() ? 0.0 : it->second) + 0.5) / (total + 0.5 * alphabet);
    }
};

// The change point in [lo, hi]: the start s maximising the log-likelihood of commands [s, hi) under the
// new mix (commands [nb, ne)) rather than the old one (commands [ob, oe)).
size_t change_point(const std::vector<DataCmd>& d, size_t ob, size_t oe, size_t nb, size_t ne, size_t lo, size_t hi) {
    using Key = std::function<uint64_t(const DataCmd&)>;
    const Key keys[] = {[](const DataCmd& c) { return c.bytes * 2 + c.write; },
                        [](const DataCmd& c) { return uint64_t(depth_bucket(c.inflight)); },
                        [](const DataCmd& c) { return uint64_t(c.seq); }};
    std::vector<double> llr(hi - lo, 0.0);
    for (const auto& key : keys) {
        Freq fo, fn;
        for (size_t i = ob; i < oe; ++i) fo.count[key(d[i])] += 1, fo.total += 1;
        for (size_t i = nb; i < ne; ++i) fn.count[key(d[i])] += 1, fn.total += 1;
        std::map<uint64_t, int> alphabet;
        for (auto& [k, v] : fo.count) alphabet[k] = 1;
        for (auto& [k, v] : fn.count) alphabet[k] = 1;
        for (size_t i = lo; i < hi; ++i) alphabet[key(d[i])] = 1;
        double a = double(alphabet.size());
        for (size_t i = lo; i < hi; ++i) llr[i - lo] += std::log(fn.p(key(d[i]), a) / fo.p(key(d[i]), a));
    }
    size_t best = hi;
    double sum = 0, best_sum = 0;
    for (size_t s = hi; s-- > lo;) {
        sum += llr[s - lo];
        if (sum > best_sum) best_sum = sum, best = s;
    }
    return best;
}

void segment(const std::vector<DataCmd>& d, size_t s, size_t e, size_t w, std::vector<Phase>& out) {
    std::vector<size_t> starts;
    for (size_t b = s; b < e; b += w) starts.push_back(b);
    if (starts.size() > 1 && e - starts.back() < w / 2) starts.pop_back();  // a short tail joins the last window
    auto wend = [&](size_t k) { return k + 1 < starts.size() ? starts[k + 1] : e; };
    size_t cur = s;
    for (size_t k = 1; k < starts.size(); ++k) {
        if (starts[k] <= cur) continue;
        MixSummary agg = summarize(d, cur, starts[k]);
        MixSummary wk = summarize(d, starts[k], wend(k));
        if (!mixes_differ(agg, wk)) continue;
        bool last = k + 1 == starts.size();
        if (!last && !mixes_differ(agg, summarize(d, wend(k), wend(k + 1)))) continue;  // not confirmed: noise
        if (last && wend(k) - starts[k] < w) continue;
        // The boundary lies in window k-1 (when the phase had begun before it) or window k.
        size_t lo = std::max(cur, starts[k - 1]), hi = wend(k);
        size_t oe = lo > cur ? lo : starts[k];
        size_t nb = last ? starts[k] : wend(k), ne = last ? wend(k) : wend(k + 1);
        size_t cp = change_point(d, cur, oe, nb, ne, lo, hi);
        if (cp <= cur || cp >= e) continue;
        out.push_back({cur, cp, 0, 0});
        cur = cp;
    }
    out.push_back({cur, e, 0, 0});
}

}  // namespace

bool mixes_differ(const MixSummary& a, const MixSummary& b) { return mix_distance(a, b) > 1.0; }

size_t phase_window(size_t n) { return std::max<size_t>(32, n / 256); }

size_t min_phase_len(size_t n, const PhaseOptions& opt) {
    return std::max(opt.min_cmds, size_t(std::ceil(opt.min_share * double(n))));
}

std::string below_phase_minimum_note(const std::vector<DataCmd>& d, const PhaseOptions& opt) {
    const size_t n = d.size(), min_len = min_phase_len(n, opt);
    if (n < 2 || n >= 2 * min_len || opt.max_phases <= 1) return "";  // one command has no order
    auto read_pct = [&](size_t b, size_t e) {
        const auto reads =
            std::count_if(d.begin() + long(b), d.begin() + long(e), [](const DataCmd& c) { return !c.write; });
        return e > b ? 100.0 * double(reads) / double(e - b) : 0.0;
    };
    char b[320];
    std::snprintf(b, sizeof b,
                  "the trace has %zu read/write commands, below the phase minimum (two phases need %zu, %zu each; "
                  "docs/distill.md "
                  "\"Phases\"): one section for all of them, so their time order (first half %.0f %% reads, second "
                  "half %.0f %%) is "
                  "not kept in the job",
                  n, 2 * min_len, min_len, read_pct(0, n / 2), read_pct(n / 2, n));
    return b;
}

std::vector<Phase> detect_phases(const std::vector<DataCmd>& d, const PhaseOptions& opt) {
    std::vector<Phase> ph;
    const size_t n = d.size();
    if (!n) return ph;
    const size_t w = phase_window(n);
    // Long idle gaps cut first.
    size_t s = 0;
    for (size_t i = 1; i <= n; ++i) {
        if (i < n && d[i].idle_before < opt.gap_ns) continue;
        size_t first = ph.size();
        segment(d, s, i, w, ph);
        ph[first].idle_before_ns = s ? d[s].idle_before : 0;
        s = i;
    }
    auto dist = [&](const Phase& a, const Phase& b) {
        return mix_distance(summarize(d, a.begin, a.end), summarize(d, b.begin, b.end));
    };
    auto merge = [&](size_t i) {  // phases i and i+1 become one
        ph[i].end = ph[i + 1].end;
        ph.erase(ph.begin() + long(i) + 1);
    };
    const size_t min_len = min_phase_len(n, opt);
    while (ph.size() > 1) {
        size_t shortest = 0;
        for (size_t i = 1; i < ph.size(); ++i)
            if (ph[i].cmds() < ph[shortest].cmds()) shortest = i;
        if (ph[shortest].cmds() >= min_len) break;
        if (shortest == 0)
            merge(0);
        else if (shortest + 1 == ph.size())
            merge(shortest - 1);
        else
            merge(dist(ph[shortest - 1], ph[shortest]) <= dist(ph[shortest], ph[shortest + 1]) ? shortest - 1
                                                                                               : shortest);
    }
    while (ph.size() > std::max<size_t>(1, opt.max_phases)) {
        size_t best = 0;
        double bd = dist(ph[0], ph[1]);
        for (size_t i = 1; i + 1 < ph.size(); ++i)
            if (double x = dist(ph[i], ph[i + 1]); x < bd) bd = x, best = i;
        merge(best);
    }
    // Kinds: a phase joins the first earlier kind whose first phase has the same mix.
    auto assign_kinds = [&] {
        std::vector<size_t> rep;
        for (auto& p : ph) {
            p.kind = -1;
            for (size_t k = 0; k < rep.size() && p.kind < 0; ++k)
                if (!mixes_differ(summarize(d, ph[rep[k]].begin, ph[rep[k]].end), summarize(d, p.begin, p.end)))
                    p.kind = int(k);
            if (p.kind < 0) {
                p.kind = int(rep.size());
                rep.push_back(size_t(&p - ph.data()));
            }
        }
    };
    assign_kinds();
    // Neighbours of one kind that no long idle gap separates are one phase: a stall too short to be a phase of its
    // own, merged into one side, leaves two phases of one mix (a steady randread trace became "2 phases" of one kind,
    // written as loops=2 of half its commands with a thinktime of 0).
    bool merged = false;
    for (size_t i = 0; i + 1 < ph.size();)
        if (ph[i].kind == ph[i + 1].kind && ph[i + 1].idle_before_ns < opt.gap_ns)
            merge(i), merged = true;
        else
            ++i;
    if (merged) assign_kinds();
    return ph;
}

size_t phase_period(const std::vector<Phase>& phases) {
    const size_t n = phases.size();
    for (size_t p = 1; 2 * p <= n; ++p) {
        if (n % p) continue;
        bool ok = true;
        for (size_t i = 0; i + p < n && ok; ++i) ok = phases[i].kind == phases[i + p].kind;
        if (ok) return p;
    }
    return 0;
}

std::string describe(const MixSummary& m) {
    char b[160];
    uint64_t top = 0, top_n = 0;
    for (const auto& [k, c] : m.sizes)
        if (c > top_n) top_n = c, top = k / 2;
    std::snprintf(b, sizeof b, "%.0f %% reads, most common size %s (%.0f %%), %.0f %% sequential, median depth %u",
                  100 * m.read_share, human_bytes(top).c_str(),
                  m.reads + m.writes ? 100.0 * double(top_n) / double(m.reads + m.writes) : 0.0, 100 * m.seq_share,
                  m.depth_median);
    return b;
}

}  // namespace kvio::distiller
