#include "distiller/phased_job.h"

#include "distiller/target_limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "common/histogram.h"
#include "distiller/timeline.h"

namespace kvio::distiller {

namespace {

// The commands of `t` in [first, last) as a trace of their own (same device, source and health).
EventTrace slice(const EventTrace& t, size_t first, size_t last, int only_write = -1) {
    EventTrace s = empty_like(t);
    for (size_t i = first; i < last; ++i) {
        const Cmd& c = t.cmds[i];
        bool data = c.op == Op::Read || c.op == Op::Write;
        if (only_write >= 0 && (!data || (c.op == Op::Write) != bool(only_write))) continue;
        s.cmds.push_back(c);
    }
    s.records = s.cmds.size();
    return s;
}

// Concurrent streams: both directions are a real part of the phase (>= 1 % and >= 64 commands each) and are submitted
// by different threads (a reader and a writer side by side; one thread issuing a mix is one randrw stream). A thread is
// a reader or a writer when >= 95 % of its commands go one way; the commands of mixed threads (a kworker flushing a
// plug issues both) must stay below 5 %. And they run at the same time: the reads' and the writes' spans (first
// to last issue) overlap by at least half of the shorter one (a write-then-read phase merged by --max-phases is not).
bool separate_streams(const EventTrace& s) {
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> by_tid;  // tid -> (reads, writes)
    uint64_t r = 0, w = 0;
    uint64_t first[2] = {UINT64_MAX, UINT64_MAX}, last[2] = {0, 0};
    for (const auto& c : s.cmds) {
        if (c.op != Op::Read && c.op != Op::Write) continue;
        const int d = c.op == Op::Write;
        if (d)
            ++w, ++by_tid[c.tid].second;
        else
            ++r, ++by_tid[c.tid].first;
        first[d] = std::min(first[d], c.ts_issue);
        last[d] = std::max(last[d], c.ts_issue);
    }
    if (std::min(r, w) < 64 || double(std::min(r, w)) < 0.01 * double(r + w)) return false;
    const uint64_t lo = std::max(first[0], first[1]), hi = std::min(last[0], last[1]);
    const uint64_t shorter = std::min(last[0] - first[0], last[1] - first[1]);
    if (hi <= lo || double(hi - lo) < 0.5 * double(shorter)) return false;
    uint64_t mixed = 0;
    for (const auto& [tid, n] : by_tid) {
        uint64_t all = n.first + n.second;
        if (!tid || double(std::min(n.first, n.second)) > 0.05 * double(all)) mixed += all;
    }
    return double(mixed) < 0.05 * double(r + w);
}

std::string pct_str(double share) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f %%", 100 * share);
    return b;
}

// fio flow= weights (1..1000 each, fio 3.33 --cmdhelp=flow) whose ratio is closest to reads : writes.
std::pair<uint32_t, uint32_t> flow_weights(uint64_t reads, uint64_t writes) {
    const double want = double(reads) / double(reads + writes);
    std::pair<uint32_t, uint32_t> best{1, 1};
    double err = 2;
    for (uint32_t b = 1; b <= 1000; ++b) {
        double a = std::round(want * b / (1 - want));
        if (a < 1 || a > 1000) continue;
        double e = std::fabs(a / (a + b) - want);
        if (e < err - 1e-12) err = e, best = {uint32_t(a), b};
    }
    return best;
}

constexpr double kStretchScorePoints = 1.0;  // points: half the acceptance's 2-point bound per score window
constexpr double kStretchPhasePoints = 20.0;
constexpr uint64_t kMinSplitDirCmds = 16;
constexpr size_t kMaxStretches =
    4 * kScoreWindows;  // a quarter of a score window each, on average  // a stretch's fewer reads or writes: left to
                        // rwmixread  // points: below the detector's 25-point read-share threshold

// Stretches [first, last) of `s`'s commands whose read share one section (or pair) can hold: blocks of `step`
// commands, a stretch extended while, with its own mean share p, the cumulative deviation
// D(j) = reads − p × data commands over its commands up to block j stays within a range of `slack` commands. Then no
// window of W commands inside the stretch departs from p by more than slack / W, whatever the stretch's length.
std::vector<std::pair<size_t, size_t>> steady_ratio_groups(const EventTrace& s, size_t step, double slack) {
    const size_t n = s.cmds.size(), blocks = std::max<size_t>(1, (n + step - 1) / std::max<size_t>(1, step));
    std::vector<std::pair<double, double>> blk;  // (reads, data commands) per block
    for (size_t k = 0; k < blocks; ++k) {
        double r = 0, d = 0;
        for (size_t i = k * n / blocks; i < (k + 1) * n / blocks; ++i) {
            r += s.cmds[i].op == Op::Read;
            d += s.cmds[i].op == Op::Read || s.cmds[i].op == Op::Write;
        }
        blk.push_back({r, d});
    }
    // 0 when blocks [a, b] are steady, else where to end the stretch: after the block where D (with the mean of
    // [a, b], so D is 0 at both ends) is farthest from 0, the change point of a step in the share.
    auto cut_after = [&](size_t a, size_t b) -> size_t {
        double r = 0, d = 0;
        for (size_t k = a; k <= b; ++k) r += blk[k].first, d += blk[k].second;
        const double p = d ? r / d : 0;
        double dev = 0, lo = 0, hi = 0, far = 0;
        size_t at = b;
        for (size_t k = a; k <= b; ++k) {
            dev += blk[k].first - p * blk[k].second;
            lo = std::min(lo, dev), hi = std::max(hi, dev);
            if (std::fabs(dev) > far) far = std::fabs(dev), at = k;
        }
        if (hi - lo <= slack) return 0;
        return std::min(at, b - 1) + 1;
    };
    std::vector<std::pair<size_t, size_t>> out;
    size_t first = 0;
    for (size_t k = 1; k <= blocks; ++k) {
        if (k < blocks) {
            const size_t c = cut_after(first, k);
            if (!c) continue;
            out.push_back({first * n / blocks, c * n / blocks});
            first = c;
            continue;
        }
        out.push_back({first * n / blocks, n});
    }
    return out;
}

// What bssplit cannot express: sizes below 0.5 % of their direction's commands in a phase round to 0 % (fio 3.33
// takes whole percents) and are left out; "" when no phase loses more than 1 % of its commands that way.
std::string rare_sizes_note(const PhasePlan& plan) {
    double worst = 0;
    size_t at = 0, lost = 0, of = 0;
    for (size_t i = 0; i < plan.phases.size(); ++i) {
        const MixSummary m = summarize(plan.data, plan.phases[i].begin, plan.phases[i].end);
        uint64_t gone = 0;
        for (const auto& [key, c] : m.sizes)
            if (200.0 * double(c) < double(key % 2 ? m.writes : m.reads)) gone += c;
        const double share = double(gone) / double(std::max<size_t>(1, plan.phases[i].cmds()));
        if (share > worst) worst = share, at = i, lost = gone, of = plan.phases[i].cmds();
    }
    if (worst <= 0.01) return "";
    char b[400];
    std::snprintf(
        b, sizeof b,
        "not reproduced: sizes below 0.5 %% of their direction's commands in a phase (fio 3.33's bssplit takes whole "
        "percents): up to %zu of phase %zu's %zu commands (%.1f %%), so its windows' size TV cannot go below about "
        "%.3f",
        lost, at + 1, of, 100 * worst, worst);
    return b;
}

// A size that bssplit would draw at random but the trace places: in a one-direction section, at most 10 % and at
// least 0.5 % of the commands (below, bssplit leaves it out), at least 3 of them, every g-th command with g varying by
// at most max(1, g / 8) (kvio gen's 4 KiB slot header at each object's start, one every 50 writes). fio's bssplit
// draws each command's size, so a score window of W commands holds Binomial(W, p) of them where the trace holds a
// fixed count: sqrt(p (1 - p) / W) of size TV, 0.014 at p = 2 %, W = 100, and 1 / w per header in the window of w
// writes where the phase ends. A job of their own in a flow pair with the rest is issued every 1 / p commands, as in
// the trace.
constexpr double kPlacedMaxShare = 0.10, kPlacedMinShare = 0.005;
constexpr size_t kPlacedMinCmds = 3;

struct PlacedSize {
    uint64_t bytes = 0;
    bool write = false;
    size_t cmds = 0, of = 0;        ///< its commands, the section's data commands
    size_t gap_lo = 0, gap_hi = 0;  ///< data commands from one of them to the next
};

std::optional<PlacedSize> placed_size(const EventTrace& s) {
    std::map<uint64_t, std::vector<size_t>> at;  // size -> places among the data commands
    size_t n = 0;
    bool dir[2] = {false, false};
    for (const auto& c : s.cmds) {
        if (c.op != Op::Read && c.op != Op::Write) continue;
        dir[c.op == Op::Write] = true;
        at[c.bytes].push_back(n++);
    }
    if ((dir[0] && dir[1]) || at.size() < 2) return std::nullopt;
    std::optional<PlacedSize> best;
    for (const auto& [bytes, pos] : at) {
        const double share = double(pos.size()) / double(n);
        if (pos.size() < kPlacedMinCmds || share > kPlacedMaxShare || share < kPlacedMinShare) continue;
        size_t lo = SIZE_MAX, hi = 0;
        for (size_t i = 1; i < pos.size(); ++i)
            lo = std::min(lo, pos[i] - pos[i - 1]), hi = std::max(hi, pos[i] - pos[i - 1]);
        if (hi > lo + std::max<size_t>(1, lo / 8)) continue;
        if (!best || pos.size() > best->cmds) best = PlacedSize{bytes, dir[1], pos.size(), n, lo, hi};
    }
    return best;
}

// Section `s`'s commands of the placed size and the others as two jobs in one flow (fio flow_id; per-job weights whose
// ratio is the commands' ratio, each divided by its job's numjobs as for concurrent streams): fio holds each job's
// share of the flow's I/O at its weight, so the placed size comes once every of / cmds commands, as in the trace.
std::vector<FioSection> placed_size_pair(const EventTrace& s, const PlacedSize& ps, const JobOptions& opt,
                                         const SectionSpec& spec, uint32_t flow_id,
                                         std::vector<std::string>& not_inferred, const std::string& name,
                                         const std::string& where) {
    EventTrace part[2] = {empty_like(s), empty_like(s)};  // the others (flushes too), the placed size
    for (const auto& c : s.cmds) part[(c.op == Op::Read || c.op == Op::Write) && c.bytes == ps.bytes].cmds.push_back(c);
    Profile pr[2];
    uint64_t clones[2] = {1, 1};
    const Profile whole = profile_events(s);
    for (int k = 0; k < 2; ++k) {
        part[k].records = part[k].cmds.size();
        pr[k] = profile_events(part[k]);
        if (k == 0) {
            // The others' sequentiality is the section's: a command that continues a placed one (a slot's first
            // transfer after its header) continues the stream, and does so in the replay, where the others run
            // as one stream of their own.
            for (auto [dst, src] : {std::pair{&pr[0].read, &whole.read}, std::pair{&pr[0].write, &whole.write}})
                dst->seq_cmds = uint64_t(std::llround(src->seq_share() * double(dst->seq_scored)));
        }
        std::vector<std::string> scratch;
        const std::string nj = derive_section(pr[k], opt, spec, scratch).get("numjobs");
        if (!nj.empty()) clones[k] = std::max<uint64_t>(1, std::stoull(nj));
    }
    const uint64_t placed = ps.cmds, rest = ps.of - ps.cmds;
    const auto [w_rest, w_placed] = flow_weights(rest * clones[1], placed * clones[0]);
    const std::string size = human_bytes(ps.bytes), dir = ps.write ? "writes" : "reads";
    const std::string every = ps.gap_lo == ps.gap_hi ? std::to_string(ps.gap_lo)
                                                     : std::to_string(ps.gap_lo) + "-" + std::to_string(ps.gap_hi);
    std::vector<FioSection> out;
    for (int k = 0; k < 2; ++k) {
        SectionSpec ss = spec;
        ss.stonewall = spec.stonewall && k == 0;
        ss.flow = k ? w_placed : w_rest;
        ss.flow_id = flow_id;
        ss.rate_why =
            std::to_string(placed) + " of the " + std::to_string(ps.of) + " " + dir + " are " + size + ", one every " +
            every + " commands: flow weights " + std::to_string(w_rest) + " : " + std::to_string(w_placed) +
            " per job (" + std::to_string(clones[0]) + " : " + std::to_string(clones[1]) +
            " jobs) issue them at that rate among the others, where bssplit would draw them at random (docs/distill.md "
            "\"Sizes at fixed places\")";
        FioSection sec = derive_section(pr[k], opt, ss, not_inferred);
        if (k) {
            // Its commands' gaps are the others' commands, which the flow holds it to: no timing of its own (a
            // thinktime of the 29 ms between gen's headers stalled the others, which wait for it when it is due).
            static const char* const kTiming[] = {"thinktime", "thinktime_blocks", "rate_iops", "rate_process"};
            std::erase_if(sec.options, [](const auto& kv) {
                return std::find(std::begin(kTiming), std::end(kTiming), kv.first) != std::end(kTiming);
            });
            std::erase_if(sec.why, [](const std::string& w) {
                return std::any_of(std::begin(kTiming), std::end(kTiming),
                                   [&](const char* t) { return w.starts_with(std::string(t) + "="); }) ||
                       w.starts_with("thinktime not set") || w.starts_with("timing model");
            });
            sec.why.push_back("timing: none of its own; the flow issues it when the others have done their share");
        }
        sec.name = k ? name + "-" + size : name;
        sec.comment =
            where + (k ? "; its " + size + " " + dir + " (one every " + every + " commands), alongside the others"
                       : "; its " + dir + " but the " + size + " ones, which a job alongside places");
        out.push_back(std::move(sec));
    }
    return out;
}

std::string ms_str(uint64_t ns) {
    std::ostringstream o;
    o.precision(1);
    o << std::fixed << double(ns) / 1e6 << " ms";
    return o.str();
}

}  // namespace

FioSection idle_section(const std::string& name, uint64_t gap_ns, const std::string& before) {
    FioSection idle;
    idle.name = name;
    idle.comment = "idle gap of " + ms_str(gap_ns) + " at the device before " + before +
                   ": one I/O on the null engine (no device command) followed by thinktime";
    idle.options = {{"stonewall", ""},
                    {"ioengine", "null"},
                    {"rw", "read"},
                    {"bs", "4k"},
                    {"size", "4k"},
                    {"number_ios", "1"},
                    {"thinktime", std::to_string((gap_ns + 500) / 1000)}};
    return idle;
}

void write_job_body(std::ostream& o, const std::vector<std::string>& notes, const std::vector<std::string>& global_why,
                    const FioJob& job) {
    for (const auto& w : notes) o << "; " << w << "\n";
    for (const auto& w : global_why) o << "; " << w << "\n";
    o << "; not inferred from the trace:\n";
    for (const auto& w : job.not_inferred) o << ";   " << w << "\n";
    o << "\n[global]\n";
    for (const auto& [k, v] : job.options) o << k << "=" << v << "\n";
    for (const auto& s : job.sections) {
        o << "\n; " << s.comment << "\n";
        for (const auto& w : s.why) o << ";   " << w << "\n";
        o << "[" << s.name << "]\n";
        for (const auto& [k, v] : s.options) o << k << (v.empty() ? "" : "=" + v) << "\n";
    }
}

nlohmann::json phases_json(const PhasePlan& plan) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& p : plan.phases)
        a.push_back({{"begin", p.begin},
                     {"end", p.end},
                     {"cmds", p.cmds()},
                     {"kind", p.kind},
                     {"idle_before_ms", double(p.idle_before_ns) / 1e6},
                     {"mix", describe(summarize(plan.data, p.begin, p.end))}});
    return a;
}

namespace {

// Threads that each read and write, k >= 2 of them at once: one randrw section of k clones, each drawing its
// direction, missed a stretch's counts (365 reads where 353 were planned, 2.5 points), so their reads and writes
// become a flow pair of k jobs in all (the threads' concurrency), split by the read share. Returns k, or 0.
uint32_t split_threads(const Profile& pp) {
    return pp.concurrent_tids >= 2 && std::min(pp.read.cmds, pp.write.cmds) >= kMinSplitDirCmds ? pp.concurrent_tids
                                                                                                : 0;
}

// The sections of a phased job, built phase by phase (make_phased_job): the trace, its plan and the job so far.
class PhasedBuilder {
public:
    PhasedBuilder(const EventTrace& t, const Profile& whole, const JobOptions& opt, const PhaseOptions& popt,
                  PhasePlan& plan, const std::vector<EventTrace>& slices, bool concurrent)
        : t_(t), whole_(whole), opt_(opt), popt_(popt), plan_(plan), slices_(slices), concurrent_(concurrent) {}

    // Every phase's sections (and the idle sections between them) into `job`.
    void add_phases(FioJob& job) {
        const auto& ph = plan_.phases;
        // Repeats of one phase separated by idle gaps: one section with loops (number_ios restarts with every loop)
        // and the gap as thinktime after each repetition.
        loop_one_ = plan_.period == 1 && ph.size() > 1 && !concurrent_;
        const size_t shown = loop_one_ ? 1 : ph.size();
        bool stonewall = false;
        for (size_t i = 0; i < shown; ++i) {
            const Phase& p = ph[i];
            if (p.idle_before_ns >= popt_.gap_ns && !loop_one_) {
                job.sections.push_back(idle_section(opt_.job_name + "-idle" + std::to_string(i + 1), p.idle_before_ns,
                                                    "phase " + std::to_string(i + 1)));
                stonewall = true;
            }
            add_phase(i, stonewall, job);
            stonewall = true;
        }
    }

private:
    // What the comment above a phase's sections says of it.
    std::string phase_where(size_t i, const MixSummary& mix) const {
        const auto& ph = plan_.phases;
        const Phase& p = ph[i];
        std::string where = "phase " + std::to_string(i + 1) + " of " + std::to_string(ph.size()) + ": commands " +
                            std::to_string(p.begin) + "-" + std::to_string(p.end - 1) + " (" +
                            std::to_string(p.cmds()) + "), " + describe(mix);
        if (plan_.period > 1 && i >= plan_.period)
            where += "; repeats phase " + std::to_string(i % plan_.period + 1) + " (pattern of " +
                     std::to_string(plan_.period) + " phases, " + std::to_string(ph.size() / plan_.period) +
                     " times: fio cannot loop a group of sections)";
        return where;
    }

    // How phase i's sections are written: no target (in [global]), the whole trace's flush rate, its runtime share.
    SectionSpec phase_spec(size_t i, bool stonewall) const {
        const auto& d = plan_.data;
        const auto& ph = plan_.phases;
        const uint64_t span = std::max<uint64_t>(1, whole_.span_ns);
        const uint64_t phase_ns =
            (i + 1 < ph.size() ? d[ph[i + 1].begin].ts : t_.cmds.back().end_ts()) - d[ph[i].begin].ts;
        SectionSpec spec;
        spec.target = false;
        spec.flushes_per_write = flush_rate(whole_, spec.flush_why);
        spec.stonewall = stonewall;
        if (opt_.mode == JobMode::Time)
            spec.runtime_ms = std::max<uint64_t>(
                1, uint64_t(std::llround(opt_.runtime_s ? double(opt_.runtime_s) * 1e3 * double(phase_ns) / double(span)
                                                        : double(phase_ns) / 1e6)));
        return spec;
    }

    // The read share drifts inside a phase (a reader slows as a writer fills the region; users of a serving
    // workload store and load in turns): each stretch of a steady read share gets its own section (or pair of
    // sections for concurrent streams), so the share is kept over time, not only on the phase's average. Steady:
    // no score window departs from the stretch's share by more than kStretchScorePoints, no detector window by
    // more than kStretchPhasePoints (so the replay's phases are cut where the trace's are), in blocks of a
    // quarter detector window. Returns the stretches [begin, end) of `s`'s commands.
    std::vector<std::pair<size_t, size_t>> stretches(const Phase& p, const EventTrace& s) const {
        const auto& d = plan_.data;
        const size_t wd = phase_window(d.size());
        const size_t step = std::max<size_t>(8, wd / 4);
        const double slack = std::max(double(step) / 2,  // D is seen at block ends only
                                      std::min(kStretchScorePoints / 100 * double(d.size()) / double(kScoreWindows),
                                               kStretchPhasePoints / 100 * double(wd)));
        // At most kMaxStretches over the trace, the phase its share of them: a randrw mix's own binomial noise
        // exceeds a small slack (a periodic 3-thread mix of 7000 commands became 138 stretches), so the slack doubles
        // until the phase's stretches fit.
        const size_t cap = std::max<size_t>(1, (kMaxStretches * p.cmds() + d.size() - 1) / d.size());
        std::vector<std::pair<size_t, size_t>> groups{{0, s.cmds.size()}};
        for (double sl = slack; !loop_one_; sl *= 2)
            if ((groups = steady_ratio_groups(s, step, sl)).size() <= cap) break;
        return groups;
    }

    // Phase i's sections: by stretch (or stream), a placed-size pair, or one section (a repeated phase's, looped).
    void add_phase(size_t i, bool stonewall, FioJob& job) {
        const Phase& p = plan_.phases[i];
        const MixSummary mix = summarize(plan_.data, p.begin, p.end);
        const std::string where = phase_where(i, mix);
        const EventTrace& s = slices_[i];
        SectionSpec spec = phase_spec(i, stonewall);
        const bool streams = separate_streams(s);
        const std::vector<std::pair<size_t, size_t>> groups = stretches(p, s);
        if (!loop_one_ && (streams || groups.size() > 1 || split_threads(profile_events(s)))) {
            for (size_t g = 0; g < groups.size(); ++g) add_stretch(i, s, groups, g, streams, where, spec, job);
        } else if (const auto placed = loop_one_ ? std::nullopt : placed_size(s)) {
            for (auto& sec : placed_size_pair(s, *placed, opt_, spec, ++flow_groups_, job.not_inferred,
                                              opt_.job_name + "-phase" + std::to_string(i + 1), where))
                job.sections.push_back(std::move(sec));
        } else {
            // A repeated phase: its values from every repetition.
            FioSection sec = derive_section(loop_one_ ? whole_ : profile_events(s), opt_, spec, job.not_inferred);
            sec.name = opt_.job_name + "-phase" + std::to_string(i + 1);
            sec.comment = where;
            if (loop_one_) loop_repetitions(mix, sec);
            job.sections.push_back(sec);
        }
    }

    // One section for every repetition of the one phase: number_ios per repetition, loops, the gap as thinktime.
    void loop_repetitions(const MixSummary& mix, FioSection& sec) const {
        const auto& ph = plan_.phases;
        uint64_t total = 0, gaps = 0;
        for (size_t k = 0; k < ph.size(); ++k) {
            total += ph[k].cmds();
            if (k) gaps += ph[k].idle_before_ns;
        }
        uint64_t per = (total + ph.size() / 2) / ph.size();
        uint64_t gap_us = (gaps / (ph.size() - 1) + 500) / 1000;
        sec.comment = "the trace repeats one phase " + std::to_string(ph.size()) + " times with idle gaps (mean " +
                      ms_str(gaps / (ph.size() - 1)) + "); its first repetition: " + describe(mix);
        std::erase_if(sec.options, [](const auto& kv) {
            return kv.first == "number_ios" || kv.first == "loops" || kv.first == "thinktime" ||
                   kv.first == "thinktime_blocks";
        });
        sec.options.emplace_back("number_ios", std::to_string(per));
        sec.why.push_back("number_ios=" + std::to_string(per) + ": mean commands per repetition (" +
                          std::to_string(total) + " in all); fio restarts the count with every loop");
        sec.options.emplace_back("loops", std::to_string(ph.size()));
        sec.why.push_back("loops=" + std::to_string(ph.size()) + ": the repetitions");
        sec.options.emplace_back("thinktime", std::to_string(gap_us));
        sec.options.emplace_back("thinktime_blocks", std::to_string(per));
        sec.why.push_back("thinktime=" + std::to_string(gap_us) + ", thinktime_blocks=" + std::to_string(per) +
                          ": the mean idle gap after each repetition, µs (fio also thinks after the last one)");
    }

    // Stretch g of phase i (slice `s`): one section, or a reads/writes flow pair for concurrent streams or threads
    // that each read and write. `spec` is the phase's; the next stretch waits for this one (stonewall).
    void add_stretch(size_t i, const EventTrace& s, const std::vector<std::pair<size_t, size_t>>& groups, size_t g,
                     bool streams, const std::string& where, SectionSpec& spec, FioJob& job) {
        EventTrace part = slice(s, groups[g].first, groups[g].second);
        const uint64_t n = part.cmds.size();
        uint64_t r = 0;
        for (const auto& c : part.cmds) r += c.op == Op::Read;
        uint64_t data = 0;
        for (const auto& c : part.cmds) data += c.op == Op::Read || c.op == Op::Write;
        const std::string part_name = groups.size() > 1 ? "-part" + std::to_string(g + 1) : "";
        const std::string part_why =
            groups.size() > 1
                ? "; part " + std::to_string(g + 1) + " of " + std::to_string(groups.size()) +
                      " (the read share changes: " + pct_str(double(r) / double(std::max<uint64_t>(1, data))) +
                      " reads here)"
                : "";
        SectionSpec ps = spec;
        if (opt_.mode == JobMode::Time && spec.runtime_ms)
            ps.runtime_ms = std::max<uint64_t>(1, spec.runtime_ms * n / std::max<uint64_t>(1, s.cmds.size()));
        uint32_t threads = 0;
        if (!streams) {
            Profile pp = profile_events(part);
            if (!split_threads(pp)) {
                FioSection sec = derive_section(pp, opt_, ps, job.not_inferred);
                sec.name = opt_.job_name + "-phase" + std::to_string(i + 1) + part_name;
                sec.comment = where + part_why;
                job.sections.push_back(sec);
                spec.stonewall = true;
                return;
            }
            threads = pp.concurrent_tids;
        }
        add_stream_pair(part, r, data, threads,
                        {opt_.job_name + "-phase" + std::to_string(i + 1) + part_name, where + part_why}, ps, job);
        spec.stonewall = true;
    }

    // The reads and the writes of `part` (r reads of `data` commands) as two sections side by side whose flow weights
    // keep their ratio; `threads` > 0: that many threads each read and write (split_threads). `name_where`: the
    // sections' name prefix and comment.
    void add_stream_pair(const EventTrace& part, uint64_t r, uint64_t data, uint32_t threads,
                         const std::pair<std::string, std::string>& name_where, SectionSpec ps, FioJob& job) {
        const uint64_t n = part.cmds.size();
        // fio weighs every job of a flow, so each of a section's numjobs clones carries its direction's weight
        // divided by numjobs (2 reader clones of weight 181 against a writer of 133 gave 73 % reads, not 58 %).
        EventTrace st[2] = {slice(part, 0, n, 0), slice(part, 0, n, 1)};
        Profile sp[2];
        uint64_t clones[2] = {1, 1};
        if (threads) {
            clones[0] = std::clamp<uint64_t>(uint64_t(std::llround(double(threads) * double(r) / double(data))), 1,
                                             threads - 1);
            clones[1] = threads - clones[0];
        }
        for (int w = 0; w < 2; ++w) {
            if (st[w].cmds.empty()) continue;
            sp[w] = profile_events(st[w]);
            if (threads) {
                sp[w].concurrent_tids = uint32_t(clones[w]);
                continue;
            }
            std::vector<std::string> scratch;
            const std::string nj = derive_section(sp[w], opt_, ps, scratch).get("numjobs");
            if (!nj.empty()) clones[w] = std::max<uint64_t>(1, std::stoull(nj));
        }
        auto [fr, fw] = flow_weights(r * clones[1], (data - r) * clones[0]);
        // A stretch where one stream issued nothing (a writer starved of CPU on a loaded VM) is one section:
        // no flow, which would have no partner to hold a ratio against.
        const bool pair = !st[0].cmds.empty() && !st[1].cmds.empty();
        if (pair) ++flow_groups_;
        for (int w = 0; w < 2; ++w) {
            if (st[w].cmds.empty()) continue;
            uint64_t k = w ? data - r : r;
            SectionSpec ss = ps;
            ss.flow = pair ? (w ? fw : fr) : 0;
            ss.flow_id = pair ? flow_groups_ : 0;
            ss.rate_why = std::string(threads ? std::to_string(threads) + " threads that each read and write, as " +
                                                    std::to_string(clones[0]) + " reader and " +
                                                    std::to_string(clones[1]) + " writer jobs"
                                              : "concurrent streams") +
                          ": " + std::string(w ? "writes" : "reads") + " are " + std::to_string(k) + " of " +
                          std::to_string(data) + " commands here; flow weights " + std::to_string(fr) + " : " +
                          std::to_string(fw) + " per job (" + std::to_string(clones[0]) + " : " +
                          std::to_string(clones[1]) +
                          " jobs; the closest ratio fio's 1..1000 weights can express) keep the streams' ratio";
            FioSection sec = derive_section(sp[w], opt_, ss, job.not_inferred);
            sec.name = name_where.first + (w ? "-writes" : "-reads");
            sec.comment = name_where.second +
                          (threads ? (w ? "; its writes, alongside its reads (exact counts: a randrw job draws "
                                          "each direction)"
                                        : "; its reads (its writes run alongside: exact counts, a randrw job "
                                          "draws each direction)")
                           : w     ? "; its writes, submitted by other threads than its reads, run alongside"
                                   : "; its reads (the writes run alongside, from other threads)");
            job.sections.push_back(sec);
            ps.stonewall = false;
        }
    }

    const EventTrace& t_;
    const Profile& whole_;
    const JobOptions& opt_;
    const PhaseOptions& popt_;
    PhasePlan& plan_;
    const std::vector<EventTrace>& slices_;
    const bool concurrent_;
    bool loop_one_ = false;
    uint32_t flow_groups_ = 0;  // flow pairs so far: each has its own flow_id
};

// What the phased job could not infer, sorted and unique; then its text: header, phase line, notes, body.
void finish_phased_job(const Profile& whole, const JobOptions& opt, const PhaseOptions& popt, const PhasePlan& plan,
                       std::vector<std::string> notes, const FioSection& global, FioJob& job) {
    job.not_inferred.push_back(
        "the access distribution inside each range (uniform random assumed; no LBA heatmap used)");
    if (whole.other_cmds > whole.flush_cmds)
        job.not_inferred.push_back(std::to_string(whole.other_cmds - whole.flush_cmds) +
                                   " discard/other commands are not reproduced");
    job.not_inferred.push_back("per-command timing and ordering (use --iolog for an exact replay)");
    std::sort(job.not_inferred.begin(), job.not_inferred.end());
    job.not_inferred.erase(std::unique(job.not_inferred.begin(), job.not_inferred.end()), job.not_inferred.end());

    std::ostringstream o;
    o << job_header(whole, opt, whole.write.cmds > 0);
    for (const auto& l : device_level_lines(whole, job, opt)) o << "; " << l << "\n";
    o << "; " << plan.phases.size()
      << " phases (docs/distill.md \"Phases\": a phase ends where the direction share, sizes, depth or "
      << "sequentiality change, or at an idle gap >= " << ms_str(popt.gap_ns)
      << "), in order, each after the previous ends (stonewall)"
      << (plan.period ? "; they repeat a pattern of " + std::to_string(plan.period) + " phase(s)" : "") << "\n";
    if (std::string r = rare_sizes_note(plan); !r.empty()) notes.push_back(std::move(r));
    write_job_body(o, notes, global.why, job);
    job.text = o.str();
}

}  // namespace

FioJob make_phased_job(const EventTrace& t, const Profile& whole, const JobOptions& opt, const PhaseOptions& popt,
                       PhasePlan* out) {
    PhasePlan plan;
    plan.data = data_cmds(t.cmds);
    plan.phases = detect_phases(plan.data, popt);
    plan.period = phase_period(plan.phases);
    plan.note = below_phase_minimum_note(plan.data, popt);
    const auto& d = plan.data;
    auto& ph = plan.phases;
    auto first_cmd = [&](size_t i) { return i == 0 ? size_t(0) : d[ph[i].begin].index; };
    auto end_cmd = [&](size_t i) { return i + 1 < ph.size() ? d[ph[i + 1].begin].index : t.cmds.size(); };

    std::vector<EventTrace> slices;
    for (size_t i = 0; i < ph.size(); ++i) slices.push_back(slice(t, first_cmd(i), end_cmd(i)));
    const bool concurrent = std::any_of(slices.begin(), slices.end(), separate_streams);
    if (ph.size() <= 1 && !concurrent) {
        std::vector<std::string> notes;
        if (!plan.note.empty()) notes.push_back(plan.note);
        if (out) *out = std::move(plan);
        return make_fio_job(whole, opt, notes);
    }

    std::vector<std::string> notes = check_trace_health(whole, opt);
    if (!plan.note.empty()) notes.push_back(plan.note);
    FioJob job;
    FioSection global;
    target_options(whole, opt, job.not_inferred, global);
    job.options = global.options;
    PhasedBuilder(t, whole, opt, popt, plan, slices, concurrent).add_phases(job);
    finish_phased_job(whole, opt, popt, plan, std::move(notes), global, job);
    if (out) *out = std::move(plan);
    return job;
}

}  // namespace kvio::distiller
