#include "distiller/profile.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "common/error.h"

namespace kvio::distiller {

uint64_t dist_total(const Dist& d) {
    uint64_t n = 0;
    for (const auto& [v, c] : d) n += c;
    return n;
}

uint64_t dist_quantile(const Dist& d, double q) {
    uint64_t n = dist_total(d);
    if (!n) return 0;
    // Nearest rank: the smallest value whose cumulative count reaches ceil(q * n) (at least 1).
    uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(std::clamp(q, 0.0, 1.0) * double(n))));
    uint64_t seen = 0;
    for (const auto& [v, c] : d) {
        seen += c;
        if (seen >= rank) return v;
    }
    return d.rbegin()->first;
}

double Profile::d2c_quantile(double q) const {
    if (d2c_ns.empty()) return 0;
    size_t rank = std::max<size_t>(1, size_t(std::ceil(std::clamp(q, 0.0, 1.0) * double(d2c_ns.size()))));
    return double(d2c_ns[rank - 1]);
}

// In-flight sweep over issue/complete instants: queue depth at each issue, busy time, idle gaps, bursts.
// Events in time order; at equal times completions go first, then issues, then completions of zero-length
// commands, so a command never completes before it is issued. `cmds` is in ts_issue order, so only the
// completions of commands in flight are pending (a min-heap as deep as the queue), not 2 events per command.
static void sweep(const std::vector<Cmd>& in, Profile& p) {
    auto by_issue = [](const Cmd& a, const Cmd& b) { return a.ts_issue < b.ts_issue; };
    std::vector<Cmd> copy;  // only for input not already in issue order (load_events' output is)
    if (!std::is_sorted(in.begin(), in.end(), by_issue)) {
        copy = in;
        std::stable_sort(copy.begin(), copy.end(), by_issue);
    }
    const std::vector<Cmd>& cmds = copy.empty() ? in : copy;
    struct Pending {
        uint64_t t;
        bool zero_len;  // completes at its own issue instant: after the issues at that instant
        bool operator>(const Pending& o) const { return t != o.t ? t > o.t : zero_len > o.zero_len; }
    };
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending;
    uint32_t inflight = 0;
    uint64_t busy_start = 0, last_idle_start = 0, burst = 0;
    bool seen_busy = false;
    uint64_t prev_t = 0;
    auto complete = [&](uint64_t t) {
        if (inflight) p.qd_time[inflight] += t - prev_t;
        prev_t = t;
        --inflight;
        if (inflight == 0) {
            p.busy_ns += t - busy_start;
            last_idle_start = t;
        }
    };
    for (const auto& c : cmds) {
        const uint64_t t = c.ts_issue;
        while (!pending.empty() && (pending.top().t < t || (pending.top().t == t && !pending.top().zero_len))) {
            complete(pending.top().t);
            pending.pop();
        }
        if (inflight) p.qd_time[inflight] += t - prev_t;
        prev_t = t;
        if (inflight == 0) {
            if (seen_busy) {
                uint64_t gap = t - last_idle_start;
                if (gap >= kThinkGapNs) {
                    p.think_gaps_ns.push_back(gap);
                    p.think_idle_ns += gap;
                    p.idle_gaps.push_back({gap, burst});
                    burst = 0;
                }
            }
            busy_start = t;
            seen_busy = true;
        }
        ++inflight;
        ++burst;
        ++p.qd_at_issue[inflight];
        p.max_inflight = std::max(p.max_inflight, inflight);
        pending.push({c.end_ts(), c.end_ts() == c.ts_issue});
    }
    for (; !pending.empty(); pending.pop()) complete(pending.top().t);
    p.cmds_after_idle = burst;
    std::erase_if(p.qd_time, [](const auto& kv) { return kv.second == 0; });
    std::sort(p.think_gaps_ns.begin(), p.think_gaps_ns.end());
}

// Max number of submitting threads whose [first issue, last completion] intervals overlap. io_uring worker threads
// submit for their process: they count as the process (its pid, the main thread's tid), not as jobs of their own
// (fio io_uring QD 256 × 4 jobs, buffered: 36 tids, 32 of them iou-wrk).
static void thread_concurrency(const std::vector<Cmd>& cmds, Profile& p) {
    std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> span;
    for (const auto& c : cmds) {
        const uint32_t who = c.io_worker && c.pid ? c.pid : c.tid;
        if (!who) continue;
        auto [it, fresh] = span.try_emplace(who, c.ts_issue, c.end_ts());
        if (!fresh) {
            it->second.first = std::min(it->second.first, c.ts_issue);
            it->second.second = std::max(it->second.second, c.end_ts());
        }
    }
    p.distinct_tids = uint32_t(span.size());
    std::vector<std::pair<uint64_t, int>> ev;
    for (const auto& [tid, s] : span) {
        ev.emplace_back(s.first, 1);
        ev.emplace_back(s.second, -1);
    }
    std::sort(ev.begin(), ev.end(),
              [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
    int cur = 0;
    for (const auto& e : ev) {
        cur += e.second;
        p.concurrent_tids = std::max<uint32_t>(p.concurrent_tids, uint32_t(std::max(cur, 0)));
    }
}

Arrivals arrival_stats(const std::vector<uint64_t>& ts) {
    Arrivals a;
    if (ts.size() < 3) return a;
    std::vector<double> gap;
    gap.reserve(ts.size() - 1);
    for (size_t i = 1; i < ts.size(); ++i) gap.push_back(double(ts[i] - ts[i - 1]));
    std::sort(gap.begin(), gap.end());
    a.n = gap.size();
    double sum = 0;
    for (double g : gap) sum += g;
    a.mean_ns = sum / double(a.n);
    a.median_ns = gap[a.n / 2];
    std::vector<double> ex;  // ascending, as gap is
    for (size_t i = a.n / 2; i < a.n; ++i) ex.push_back(gap[i] - a.median_ns);
    double esum = 0, sq = 0;
    for (double e : ex) esum += e;
    a.excess_mean_ns = esum / double(ex.size());
    if (a.excess_mean_ns <= 0) return a;
    for (double e : ex) sq += (e - a.excess_mean_ns) * (e - a.excess_mean_ns);
    a.excess_cv = std::sqrt(sq / double(ex.size())) / a.excess_mean_ns;
    double d = 0;
    const double m = double(ex.size());
    for (size_t i = 0; i < ex.size(); ++i) {
        double f = 1 - std::exp(-ex[i] / a.excess_mean_ns);
        d = std::max({d, double(i + 1) / m - f, f - double(i) / m});
    }
    a.excess_ks = d;

    const double window = kArrivalWindow * a.mean_ns;
    a.windows = uint64_t(double(ts.back() - ts.front()) / window);
    if (a.windows < 2) return a;
    std::vector<uint64_t> count(a.windows, 0);
    for (uint64_t t : ts)
        if (uint64_t w = uint64_t(double(t - ts.front()) / window); w < a.windows) ++count[w];
    double cm = 0, cv = 0;
    for (uint64_t c : count) cm += double(c);
    cm /= double(a.windows);
    for (uint64_t c : count) cv += (double(c) - cm) * (double(c) - cm);
    cv /= double(a.windows - 1);
    a.dispersion = cm > 0 ? cv / cm : 0;
    std::sort(count.begin(), count.end());
    // Poisson(cm) CDF at each count value against the empirical CDF, on both sides of each step (cm is about 20).
    double ks = 0, cdf = 0, pmf = std::exp(-cm);
    size_t i = 0;
    for (uint64_t k = 0; k <= count.back(); ++k) {
        const double below = double(i) / double(a.windows);
        while (i < count.size() && count[i] == k) ++i;
        const double at = double(i) / double(a.windows);
        ks = std::max({ks, std::fabs(below - cdf)});
        cdf += pmf;
        pmf *= cm / double(k + 1);
        ks = std::max(ks, std::fabs(at - cdf));
    }
    a.count_ks = ks;
    return a;
}

Profile profile_events(const EventTrace& t) {
    if (t.cmds.empty())
        throw Error(t.path + ": no commands on device " + t.dev + " after the filters (" + std::to_string(t.records) +
                    " on the device, " + std::to_string(t.filtered_out) +
                    " removed by --pid/--comm): empty input, no job");
    Profile p;
    p.source = t.path;
    p.format = t.format;
    p.dev = t.dev;
    p.disk = t.disk;
    p.records = t.records;
    p.filtered_out = t.filtered_out;
    p.has_summary = t.has_summary;
    p.dropped = t.dropped;
    p.unmatched_completes = t.unmatched_completes;
    p.lost_completes = t.lost_completes;

    std::deque<uint64_t> recent_end[2];
    std::vector<uint64_t> issues;  // data commands' ts_issue, ascending (t.cmds is in issue order)
    uint64_t first = UINT64_MAX, last = 0;
    p.lba_lo_bytes = UINT64_MAX;
    for (const auto& c : t.cmds) {
        first = std::min(first, c.ts_issue);
        last = std::max(last, c.end_ts());
        if (c.completion_seen()) {
            p.sum_d2c_ns += c.d2c_ns();
            p.d2c_ns.push_back(c.d2c_ns());
        }
        if (c.qd) ++p.qd_field[c.qd];
        p.any_user_data |= c.has_user_data;
        p.any_passthrough |= c.passthrough;
        p.any_nvme |= c.nvme;
        if (c.op != Op::Read && c.op != Op::Write) {
            ++p.other_cmds;
            p.flush_cmds += c.op == Op::Flush;
            p.discard_cmds += c.op == Op::Discard;
            p.secure_erase_cmds += c.op == Op::Discard && c.secure_erase;
            if (c.op == Op::Discard) ++p.discard_sizes[c.bytes];
            continue;
        }
        issues.push_back(c.ts_issue);
        p.fua_writes += c.op == Op::Write && c.fua;
        p.preflush_writes += c.op == Op::Write && c.preflush;
        int d = c.op == Op::Read ? 0 : 1;
        DirProfile& dp = d == 0 ? p.read : p.write;
        ++dp.cmds;
        dp.bytes += c.bytes;
        ++dp.sizes[c.bytes];
        auto& win = recent_end[d];
        if (!win.empty()) {
            ++dp.seq_scored;
            if (std::find(win.begin(), win.end(), c.sector) != win.end()) ++dp.seq_cmds;
        }
        win.push_back(c.end_sector());
        if (win.size() > kSeqWindow) win.pop_front();
        if (!c.passthrough) {
            p.lba_lo_bytes = std::min(p.lba_lo_bytes, c.sector * 512);
            p.lba_hi_bytes = std::max(p.lba_hi_bytes, c.sector * 512 + c.bytes);
        }
    }
    if (p.lba_lo_bytes == UINT64_MAX) p.lba_lo_bytes = 0;
    p.span_ns = last - first;
    std::sort(issues.begin(), issues.end());
    p.arrivals = arrival_stats(issues);
    std::sort(p.d2c_ns.begin(), p.d2c_ns.end());
    if (!p.cmds())
        throw Error(t.path + ": device " + t.dev + " has " + std::to_string(p.other_cmds) +
                    " flush/discard commands but no reads or writes: nothing for a fio job to reproduce");
    sweep(t.cmds, p);
    thread_concurrency(t.cmds, p);
    return p;
}

}  // namespace kvio::distiller
