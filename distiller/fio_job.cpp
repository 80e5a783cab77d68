#include "distiller/fio_job.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "common/histogram.h"
#include "distiller/rounding.h"
#include "distiller/target_limits.h"

namespace kvio::distiller {

namespace {
constexpr size_t kBssplitMax = 64;        // fio options.h BSSPLIT_MAX
constexpr double kMaxLossShare = 0.05;    // refuse traces that lost more than this share of events
constexpr double kThinkIdleShare = 0.10;  // idle gaps must cover this share of the span to become thinktime
constexpr double kThinkBand = 1.5;        // ... and be regular: think gaps are those within 1.5× of the median gap
constexpr double kThinkBandShare = 0.6;   //     by idle time, and they hold 60 % of the idle time,
constexpr uint64_t kThinkSpread = 4;      // ... between bursts of one size: p90 <= 4 × p10
constexpr size_t kThinkMinGaps = 3;       // ... over at least this many gaps: one stall of a phase is no pattern
constexpr uint32_t kPassMaxRandomPct =
    5;  // a direction this random or less is written sequential in passes (see derive_section)
constexpr uint64_t kLoops = 1000000;  // passes of a pass-restarting job: more than any runtime needs
constexpr double kFuaShare = 0.5;     // writes with FUA above this share make a sync=1 job
// Poisson-like arrivals (docs/distill.md "Timing"): enough intervals to judge, a coefficient of variation near 1 and
// an empirical distribution close to the exponential of the same mean (Kolmogorov-Smirnov distance).
constexpr uint64_t kPoissonMinArrivals = 200;
// The upper half of the intervals is tested (profile.h Arrivals); its excess mean must be near the overall mean, or
// the stream is bursts with exponential gaps between them, not single Poisson arrivals.
constexpr double kPoissonCvLo = 0.8, kPoissonCvHi = 1.25, kPoissonMaxKs = 0.1, kPoissonMeanLo = 0.5,
                 kPoissonMeanHi = 2.0;
// Or the counts per window (profile.h Arrivals): at least 20 windows, dispersion near 1, counts close to Poisson's.
constexpr uint64_t kPoissonMinWindows = 20;
constexpr double kPoissonDispLo = 0.7, kPoissonDispHi = 1.5, kPoissonMaxCountKs = 0.15;

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}
std::string pct(double share) { return fmt("%.1f %%", 100.0 * share); }
std::string us(double ns) { return fmt("%.1f µs", ns / 1e3); }
uint64_t round_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
// The f-quantile of a sorted vector (rank f·(n−1), rounded down); 0 when empty.
uint64_t quantile(const std::vector<uint64_t>& sorted, double f) {
    return sorted.empty() ? 0 : sorted[size_t(f * double(sorted.size() - 1))];
}
// Think time is idle time at the device in gaps of one length between bursts of one size. A submitter starved of CPU
// also leaves the device idle, but in gaps of every length (measured under load: gaps p10 144 µs, p90 5.1 ms); and a
// think-time stream on a loaded VM has short stalls inside its bursts too (fio thinktime=2000 thinktime_blocks=4 on a
// tmpfs loop device: gaps p10 122-155 µs, p90 2.1 ms in 3 runs of 8, so a p90/p10 rule over all gaps called it
// irregular). So the think gaps are those within kThinkBand of the idle-time median gap (half the idle time is in
// shorter gaps: many short stalls do not move it), which must hold kThinkBandShare of the idle time, and a burst is
// the commands between two think gaps (a stall inside a burst does not cut it).
struct ThinkPattern {
    size_t gaps = 0;                     ///< idle gaps >= kThinkGapNs
    size_t band_gaps = 0;                ///< of those, within kThinkBand of median_ns
    uint64_t median_ns = 0;              ///< the idle-time median gap
    double band_share = 0;               ///< the band's share of the idle time
    uint64_t think_ns = 0;               ///< median of the band's gaps: the thinktime
    uint64_t b10 = 0, b50 = 0, b90 = 0;  ///< commands per burst between band gaps: p10, median (thinktime_blocks), p90
    bool regular = false;
};

ThinkPattern think_pattern(const Profile& p) {
    ThinkPattern t;
    t.gaps = p.think_gaps_ns.size();
    if (t.gaps == 0) return t;
    uint64_t below = 0;  // think_gaps_ns is sorted: walk to half the idle time
    for (uint64_t g : p.think_gaps_ns)
        if ((below += g) * 2 >= p.think_idle_ns) {
            t.median_ns = g;
            break;
        }
    const double lo = double(t.median_ns) / kThinkBand, hi = double(t.median_ns) * kThinkBand;
    auto in_band = [&](uint64_t g) { return double(g) >= lo && double(g) <= hi; };
    std::vector<uint64_t> band, bursts;
    uint64_t run = 0, band_ns = 0;
    for (const auto& g : p.idle_gaps) {
        run += g.cmds_before;
        if (!in_band(g.ns)) continue;
        band.push_back(g.ns);
        band_ns += g.ns;
        if (run) bursts.push_back(run);
        run = 0;
    }
    if (run + p.cmds_after_idle) bursts.push_back(run + p.cmds_after_idle);
    t.band_gaps = band.size();
    if (band.empty() || bursts.empty()) return t;
    t.band_share = p.think_idle_ns ? double(band_ns) / double(p.think_idle_ns) : 0.0;
    std::sort(band.begin(), band.end());
    std::sort(bursts.begin(), bursts.end());
    t.think_ns = band[band.size() / 2];
    t.b10 = quantile(bursts, 0.1), t.b50 = bursts[bursts.size() / 2], t.b90 = quantile(bursts, 0.9);
    t.regular = t.band_gaps >= kThinkMinGaps && t.band_share >= kThinkBandShare &&
                t.b90 <= kThinkSpread * std::max<uint64_t>(1, t.b10);
    return t;
}

}  // namespace

static std::string lookup(const Options& o, const std::string& key) {
    for (const auto& [k, v] : o)
        if (k == key) return v;
    return "";
}
std::string FioSection::get(const std::string& key) const { return lookup(options, key); }
std::string FioJob::get(const std::string& key) const { return lookup(options, key); }

uint64_t FioJob::needs_bytes() const {
    auto need = [](const Options& o) -> uint64_t {
        std::string sz = lookup(o, "size"), off = lookup(o, "offset");
        return sz.empty() ? 0 : std::stoull(off.empty() ? "0" : off) + std::stoull(sz);
    };
    uint64_t n = need(options);
    for (const auto& s : sections) n = std::max<uint64_t>(n, need(s.options));
    return n;
}

nlohmann::json job_json(const FioJob& job) {
    auto obj = [](const Options& o) {
        nlohmann::json j = nlohmann::json::object();
        for (const auto& [k, v] : o) j[k] = v;
        return j;
    };
    nlohmann::json j = obj(job.options);
    if (!job.sections.empty()) {
        j["sections"] = nlohmann::json::array();
        for (const auto& s : job.sections) j["sections"].push_back({{"name", s.name}, {"options", obj(s.options)}});
    }
    return j;
}

std::string fio_filename_escape(const std::string& path) {
    std::string o;
    for (char c : path) {
        if (c == ':') o += '\\';
        o += c;
    }
    return o;
}

std::string bssplit_list(const Dist& sizes, uint64_t* dropped, Dist* kept) {
    std::vector<std::pair<uint64_t, uint64_t>> v(sizes.begin(), sizes.end());  // (size, count)
    std::stable_sort(v.begin(), v.end(), [](auto a, auto b) { return a.second > b.second; });
    uint64_t lost = 0;
    if (v.size() > kBssplitMax) {
        for (size_t i = kBssplitMax; i < v.size(); ++i) lost += v[i].second;
        v.resize(kBssplitMax);
    }
    std::vector<uint64_t> counts;
    for (auto& e : v) counts.push_back(e.second);
    auto share = largest_remainder(counts, 100);
    std::vector<std::pair<uint64_t, uint32_t>> out;
    for (size_t i = 0; i < v.size(); ++i)
        if (share[i])
            out.emplace_back(v[i].first, share[i]);
        else
            lost += v[i].second;
    std::sort(out.begin(), out.end());
    std::string s;
    for (const auto& [size, p] : out) s += (s.empty() ? "" : ":") + human_bytes(size) + "/" + std::to_string(p);
    if (dropped) *dropped = lost;
    if (kept)
        for (const auto& [size, p] : out) (*kept)[size] = p;
    return s;
}

std::vector<std::string> check_trace_health(const Profile& p, const JobOptions& opt) {
    if (!p.cmds()) throw Error(p.source + ": no read or write commands: empty input, no job");
    const std::string where = p.source + " (device " + p.dev + (p.disk.empty() ? "" : " " + p.disk) + ")";
    // Trace health: completions ≪ issues means every distribution below is biased. Dropped events and commands
    // whose completion was never seen count; completions without an issue (unmatched) do not: a device that
    // emulates FUA/flush ends the requests of its flush sequences without ever issuing them (measured: `dd
    // oflag=direct,sync` on a loop device gives two per write), and they are not commands the profile lacks.
    if (p.has_summary) {
        uint64_t lost = p.dropped + p.lost_completes;
        double denom = double(p.records + p.dropped);
        if (denom > 0 && double(lost) / denom > kMaxLossShare)
            throw Error(
                where + ": the trace lost " + std::to_string(lost) + " of " + std::to_string(p.records + p.dropped) +
                " events (dropped " + std::to_string(p.dropped) + ", completions not seen " +
                std::to_string(p.lost_completes) +
                "): completions ≪ issues, so sizes and queue depths would be biased; re-trace with a larger buffer");
    }
    uint32_t cap = opt.nr_requests;
    auto check_cap = [&](double v, const std::string& what) {
        if (cap && v > double(cap))
            throw Error(where + ": " + what + " is " + fmt("%.1f", v) + " but the device has only " +
                        std::to_string(cap) + " tags (nr_requests, " + opt.nr_requests_source +
                        "): implausible queue depth, the trace's in-flight tracking is broken; no job written");
    };
    check_cap(p.max_inflight, "the maximum in-flight count (issue/complete sweep)");
    if (!p.qd_field.empty()) check_cap(double(p.qd_field.rbegin()->first), "the kernel's qd field maximum");
    check_cap(p.little_busy(), "Little's law depth (sum of D2C / busy time)");

    std::vector<std::string> notes;
    if (p.unmatched_completes)
        notes.push_back("note: " + std::to_string(p.unmatched_completes) +
                        " completions without an issue in the trace (flush sequences of a device without FUA, or "
                        "requests issued before the trace started); not counted as loss");
    if (p.per_command && !p.has_summary)
        notes.push_back(
            "WARNING: the events file has no summary record: the trace was cut off (killed, crashed or out of "
            "space), its last commands are missing and its loss check could not be made");
    return notes;
}

double flush_rate(const Profile& p, std::string& why) {
    if (!p.write.cmds) return 0;
    if (p.flush_cmds || p.preflush_writes) {
        why = std::to_string(p.flush_cmds) + " flush commands" +
              (p.preflush_writes ? " and " + std::to_string(p.preflush_writes) + " preflushed writes (rwbs FW)" : "") +
              " for " + std::to_string(p.write.cmds) + " writes";
        return double(p.flush_cmds + p.preflush_writes) / double(p.write.cmds);
    }
    if (p.unmatched_completes >= 16) {  // fewer: requests issued before the trace started, as likely as flushes
        why = std::to_string(p.unmatched_completes) +
              " completions without an issue (the flush requests of a device without "
              "FUA) for " +
              std::to_string(p.write.cmds) + " writes";
        return double(p.unmatched_completes) / double(p.write.cmds);
    }
    return 0;
}

std::string job_header(const Profile& p, const JobOptions& opt, bool writes) {
    std::ostringstream o;
    o << "; fio job distilled by `kvio distill` from a kernel trace\n";
    o << "; source: " << p.source << " (" << p.format << "), device " << p.dev
      << (p.disk.empty() ? "" : " (" + p.disk + ")") << ", " << p.cmds() << " read/write commands over "
      << fmt("%.3f", double(p.span_ns) / 1e9) << " s";
    if (p.filtered_out) o << ", " << p.filtered_out << " commands of other processes filtered out";
    o << "\n";
    if (writes && opt.target_is_block)
        o << "; WARNING: this job WRITES to the block device " << opt.filename << ": its data will be destroyed\n";
    if (opt.filename.empty())
        o << "; no filename in this job: give the target on fio's command line, e.g. `fio --filename=/dev/DEV JOB`"
          << (writes ? " (the job writes to it)" : "") << "\n";
    return o.str();
}

namespace {

// Sizes fio can issue with direct=1: whole 512-byte sectors, not 0. A 1000-byte or 0-byte command among 64 KiB
// ones (a trace of odd ioctls or of a buffered tail) would make fio refuse the job with EINVAL.
Dist issuable(const Dist& d, uint64_t& left_out) {
    Dist o;
    for (const auto& [size, n] : d)
        if (size && size % 512 == 0)
            o[size] = n;
        else
            left_out += n;
    return o;
}

std::string engine_of(const Profile& p, std::string& why, std::vector<std::string>& not_inferred) {
    if (p.any_passthrough) {
        why = "the trace holds NVMe passthrough commands (src nvme, rwbs N)";
        return "io_uring_cmd";
    }
    if (p.any_user_data) {
        why = "commands carry io_uring SQE user_data";
        return "io_uring";
    }
    why = "no io_uring user_data in the trace; libaio is the default asynchronous engine";
    not_inferred.push_back("the submitting API (libaio, psync, io_uring without user_data look alike at the device)");
    return "libaio";
}

}  // namespace

namespace {

// ---- derive_section: the facts of a profile every option is derived from, then one deriver per option (kRules).

// What derive_section measured once, for the derivers: depth, mix, sizes, region, timing, passes.
struct SectionFacts {
    const Profile& p;
    const JobOptions& opt;
    const SectionSpec& spec;
    bool has_r = false, has_w = false;
    uint64_t n = 0;  // read/write commands
    // Queue depth.
    uint64_t qd_med = 0, qd_p90 = 0;
    double little = 0;
    uint32_t numjobs = 1, depth_total = 1, iodepth = 1;
    // Direction mix and randomness.
    double byte_rshare = 0;
    uint32_t rwmix = 0, rr = 0, rw_ = 0;  // read share, random % of reads and of writes
    bool sequential = false;
    std::string rw, prand, seq_why;
    // Sizes fio can issue and the region.
    Dist rsizes, wsizes, kept_r, kept_w;
    uint64_t drop_r = 0, drop_w = 0, max_bs = 0, off = 0, size = 0;
    std::string bs_r, bs_w, bssplit;
    // Timing.
    ThinkPattern tp;
    bool idle_enough = false, enough_gaps = false, by_intervals = false, by_counts = false;
    bool poisson_like = false, poisson = false, think = false;
    std::string arrivals_why, flush_why;
    double fpw = 0, fua_share = 0;
    // Passes of a sequential stream of mixed sizes.
    uint64_t pass_bytes = 0;
    std::string pass_why;
    double total_bytes = 0;
};

// Queue depth: the depth the submitters kept, read as the p90 of the in-flight count over busy time (sweep),
// cross-checked with the kernel's qd and Little's law. A closed-loop submitter at depth N that reaps in batches
// leaves the device anywhere between 1 and N in flight, so the median sits below N and moves with how fast the
// submitter is scheduled (a fio QD-4 reader: median 3 or 4 from run to run); the top of the distribution is N
// (docs/distill.md, the `iodepth` row). Per-command input: the time-weighted in-flight distribution (robust to
// simultaneous completions); histogram input: the qd histogram (at dispatch).
void measure_depth(SectionFacts& f, std::vector<std::string>& why, std::vector<std::string>& not_inferred) {
    const Profile& p = f.p;
    const Dist& qdd = p.qd_time.empty() ? p.qd_at_issue : p.qd_time;
    f.qd_med = dist_quantile(qdd, 0.5), f.qd_p90 = dist_quantile(qdd, 0.9);
    f.little = p.little_busy();
    const uint32_t cap = f.opt.nr_requests;
    f.numjobs = std::max<uint32_t>(1, p.concurrent_tids);
    f.depth_total = uint32_t(std::max<uint64_t>(1, f.qd_p90));
    if (qdd.empty()) {
        f.depth_total = uint32_t(std::max<long>(1, std::lround(f.little)));
        not_inferred.push_back("the in-flight distribution (no qd histogram): iodepth from Little's law alone");
    }
    f.iodepth = std::max<uint32_t>(1, uint32_t(std::lround(double(f.depth_total) / f.numjobs)));
    // The measured in-flight values were checked against the tags above; what is left is rounding (128 in flight over
    // 36 threads rounds to 4 each: 144 > 128 tags), so the per-job depth is capped, not the trace refused.
    if (cap && uint64_t(f.iodepth) * f.numjobs > cap) {
        const uint32_t capped = std::max<uint32_t>(1, cap / f.numjobs);
        why.push_back("iodepth=" + std::to_string(capped) + ": " + std::to_string(f.iodepth) + " × numjobs " +
                      std::to_string(f.numjobs) + " would exceed the device's " + std::to_string(cap) +
                      " tags, rounded down to fit");
        f.iodepth = capped;
    }
}

// rw and percentage_random from the random shares of the reads and the writes.
void set_randomness(SectionFacts& f) {
    const bool has_r = f.has_r, has_w = f.has_w;
    f.sequential = (!has_r || f.rr == 0) && (!has_w || f.rw_ == 0);
    const bool sequential = f.sequential;
    f.rw = has_r && has_w ? (sequential ? "rw" : "randrw")
           : has_r        ? (sequential ? "read" : "randread")
           : f.spec.trim  ? (sequential ? "trim" : "randtrim")
                          : (sequential ? "write" : "randwrite");
    f.prand = has_r && has_w && f.rr != f.rw_ ? std::to_string(f.rr) + "," + std::to_string(f.rw_)
                                              : std::to_string(has_r ? f.rr : f.rw_);
}

// Direction mix and randomness; the sizes fio can issue (the others are left out, with a note) and the LBA range.
void measure_mix_and_sizes(SectionFacts& f, std::vector<std::string>& why, std::vector<std::string>& not_inferred) {
    const Profile& p = f.p;
    const bool has_r = f.has_r, has_w = f.has_w;
    f.byte_rshare = double(p.read.bytes) / double(p.read.bytes + p.write.bytes);
    f.rwmix = uint32_t(std::lround(100.0 * double(p.read.cmds) / double(f.n)));
    auto rand_pct = [](const DirProfile& d) { return uint32_t(std::lround(100.0 * (1.0 - d.seq_share()))); };
    f.rr = has_r ? rand_pct(p.read) : 0, f.rw_ = has_w ? rand_pct(p.write) : 0;
    if (!p.per_command) {
        f.rr = f.rw_ = 100;
        not_inferred.push_back("sequentiality (histograms carry no command order): fully random assumed");
    }
    set_randomness(f);
    f.seq_why = "sequential share (command starts where one of the last " + std::to_string(kSeqWindow) +
                " same-direction commands ended)";
    if (has_r) f.seq_why += ": reads " + pct(p.read.seq_share());
    if (has_w) f.seq_why += std::string(has_r ? ", " : ": ") + "writes " + pct(p.write.seq_share());

    uint64_t odd = 0;
    f.rsizes = issuable(p.read.sizes, odd), f.wsizes = issuable(p.write.sizes, odd);
    if (odd)
        why.push_back("note: " + std::to_string(odd) +
                      " commands of 0 bytes or of a size that is not a whole number of "
                      "512-byte sectors left out of bssplit (fio refuses such sizes with direct=1: EINVAL)");
    if ((has_r && f.rsizes.empty()) || (has_w && f.wsizes.empty()))
        throw Error(p.source + " (device " + p.dev + (p.disk.empty() ? "" : " " + p.disk) + "): every " +
                    (has_r && f.rsizes.empty() ? "read" : "write") +
                    " command is 0 bytes or not a whole number of 512-byte sectors: no size fio can issue");
    // kept_r, kept_w: the sizes bssplit holds: fio's smallest size is the smallest of these
    f.bs_r = has_r ? bssplit_list(f.rsizes, &f.drop_r, &f.kept_r) : "";
    f.bs_w = has_w ? bssplit_list(f.wsizes, &f.drop_w, &f.kept_w) : "";
    f.bssplit = has_r && has_w ? f.bs_r + "," + f.bs_w : has_r ? f.bs_r : f.bs_w;
    for (const auto* d : {&f.rsizes, &f.wsizes})
        if (!d->empty()) f.max_bs = std::max(f.max_bs, d->rbegin()->first);
    f.off = round_down(p.lba_lo_bytes, 4096);
    f.size = std::max(round_up(p.lba_hi_bytes, 4096) - f.off, round_up(f.max_bs, 4096));
}

// Think time must be idle time that is both large and regular (think_pattern); Poisson arrivals are tested first.
void measure_timing(SectionFacts& f) {
    const Profile& p = f.p;
    f.tp = think_pattern(p);
    f.idle_enough =
        !p.think_gaps_ns.empty() && p.span_ns && double(p.think_idle_ns) >= kThinkIdleShare * double(p.span_ns);
    f.enough_gaps = p.think_gaps_ns.size() >= kThinkMinGaps;
    // Poisson arrivals first: their idle gaps are exponential, never "regular", so without this rule a
    // rate_process=poisson source became an unthrottled closed loop.
    const Arrivals& arr = p.arrivals;
    // A device kept busy paces its submitter by completions, whatever the shape of the intervals (a closed loop's
    // issues follow its completions): only a stream that leaves the device idle (the thinktime share) can be open.
    f.by_intervals = arr.excess_cv >= kPoissonCvLo && arr.excess_cv <= kPoissonCvHi && arr.excess_ks <= kPoissonMaxKs &&
                     arr.excess_mean_ns >= kPoissonMeanLo * arr.mean_ns &&
                     arr.excess_mean_ns <= kPoissonMeanHi * arr.mean_ns;
    f.by_counts = arr.windows >= kPoissonMinWindows && arr.dispersion >= kPoissonDispLo &&
                  arr.dispersion <= kPoissonDispHi && arr.count_ks <= kPoissonMaxCountKs;
    // The flush rule (the sync row) comes first: fio 3.33 dies of SIGFPE with rate_process=poisson and fdatasync
    // (measured; fio's poisson rate divides by the block size of the sync direction, 0), and a sync-write stream stays
    // one.
    f.flush_why = f.spec.flush_why;
    f.fpw = f.spec.flushes_per_write >= 0 ? f.spec.flushes_per_write : flush_rate(p, f.flush_why);
    f.fua_share = p.write.cmds ? double(p.fua_writes) / double(p.write.cmds) : 0.0;
    const bool fdatasyncs = !f.spec.trim && f.has_w && (f.fua_share >= kFuaShare ? f.fpw >= 0.5 : f.fpw > 0);
    // Bursts of one size between gaps of one length are think time even when their counts per window look Poisson
    // (a fio thinktime=2000 thinktime_blocks=4 trace with stalls inside its bursts passed the count test: dispersion
    // 1.22, count KS 0.110); exponential gaps are never regular (the band around the idle-time median of an
    // exponential holds about 41 % of the idle time).
    f.poisson_like = !f.tp.regular && p.per_command && f.idle_enough && arr.n >= kPoissonMinArrivals &&
                     (f.by_intervals || f.by_counts);
    f.poisson = f.poisson_like && !fdatasyncs;
    f.arrivals_why =
        arr.n ? "inter-arrival times of " + std::to_string(arr.n + 1) + " issues: mean " + us(arr.mean_ns) +
                    ", median " + us(arr.median_ns) + "; above the median: excess mean " + us(arr.excess_mean_ns) +
                    ", CV " + fmt("%.2f", arr.excess_cv) + ", KS distance to the exponential " +
                    fmt("%.3f", arr.excess_ks) + "; issues in " + std::to_string(arr.windows) + " windows of " +
                    fmt("%.0f", kArrivalWindow) + " mean intervals: dispersion " + fmt("%.2f", arr.dispersion) +
                    ", KS distance to the Poisson counts " + fmt("%.3f", arr.count_ks)
              : "";
    f.think = f.idle_enough && f.tp.regular && !f.poisson;
}

// A sequential stream of mixed sizes must not reach the end of the region. There fio (io_u.c get_next_buflen)
// redraws until a size fits, so the region's tail fills with the smallest size (measured on the `kvio run` default:
// 131 of 151 replayed 4 KiB writes in the last MiB, write-size TV up to 0.096). A time-based job only wraps at the
// end, so such a job restarts passes instead: io_size bytes per pass, `loops` passes (fio resets every stream to
// `offset` at a pass).
void measure_passes(SectionFacts& f) {
    const Profile& p = f.p;
    f.total_bytes = double(p.read.bytes + p.write.bytes);
    if (p.lba_hi_bytes != 0) {
        auto entries = [](const std::string& list) {
            return list.empty() ? 0 : 1 + std::count(list.begin(), list.end(), ':');
        };
        double worst = 0;  // the largest share of the pass one at-risk direction's stream advances, with margin
        std::string risky;
        for (auto [d, list, rand, name] :
             {std::tuple{&p.read, f.bs_r, f.rr, "reads"}, std::tuple{&p.write, f.bs_w, f.rw_, "writes"}}) {
            if (!d->cmds || entries(list) < 2 || rand >= 100) continue;
            double byte_share = double(d->bytes) / f.total_bytes, cmd_share = double(d->cmds) / double(f.n);
            // rwmix draws the direction per command: over a pass of m commands this direction's count has a
            // relative standard deviation sqrt((1 - q) / (m q)); 4 of them keep a pass off the end.
            double m = double(f.size) / (f.total_bytes / double(f.n));
            double margin = std::min(0.5, 4.0 * std::sqrt((1.0 - cmd_share) / (m * cmd_share)));
            worst = std::max(worst, byte_share * (1.0 + margin));
            risky += std::string(risky.empty() ? "" : " and ") + name + " (" + std::to_string(entries(list)) +
                     " sizes, " + pct(byte_share) + " of the bytes, margin " + pct(margin) + ")";
        }
        const uint64_t max_bs = f.max_bs, size = f.size;
        uint64_t pass = worst > 0 && size > max_bs ? round_down(uint64_t(double(size - max_bs) / worst), 4096) : 0;
        if (worst > 0 && pass < 4 * max_bs) {  // a region of a few commands: the tail is the whole job
            f.pass_why = "sequential " + risky + " in a region of only " + std::to_string(size) +
                         " bytes, too small for passes that stay off its end: fio may fill the region's tail with the "
                         "smallest size";
        } else if (worst > 0) {
            f.pass_bytes = pass;
            f.pass_why = "sequential " + risky + ": a pass of " + std::to_string(f.pass_bytes) +
                         " bytes keeps each stream at least one largest command (" + human_bytes(max_bs) +
                         ") short of the region's end, where fio would fill the tail with the smallest size";
        }
    }

    // In count mode a pass also ends when any stream reaches the region's end (fio 3.33 io_u.c: get_next_seq_offset
    // fails there), and a random jump puts a mostly sequential stream anywhere, near the end too. Measured on a
    // `kvio run --workload simulate` section of 946 commands (rwmixread=89, percentage_random=1, 3 passes): 546-829
    // commands in 4 runs; with percentage_random=0: 948 in 3. So such a direction is written all sequential.
    if (f.pass_bytes && f.opt.mode == JobMode::Count) {
        std::string made;
        for (auto [r, name] : {std::pair{&f.rr, "reads"}, std::pair{&f.rw_, "writes"}})
            if (*r > 0 && *r <= kPassMaxRandomPct) {
                made += std::string(made.empty() ? "" : ", ") + name + " " + std::to_string(*r) + " % random";
                *r = 0;
            }
        if (!made.empty()) {
            set_randomness(f);
            f.seq_why += "; written all sequential (" + made +
                         " in the trace): in passes a random jump can put a stream near the "
                         "region's end, where fio ends the pass early and the section issues too few commands";
        }
    }
}

// What one option's deriver gives: its value (none: the option is not set) and the header lines it owns.
struct Derived {
    std::optional<std::string> value;       ///< "" sets a flag option (stonewall)
    std::string why;                        ///< its header comment, written "key=value: why"; "" = none
    std::vector<std::string> before;        ///< header lines it owns above its own (a reason it is not needed)
    std::vector<std::string> after;         ///< header lines it owns below its own (why it is not set, a warning)
    std::vector<std::string> not_inferred;  ///< what the trace could not tell it
};

Derived set(std::string value, std::string why = "") { return {std::move(value), std::move(why), {}, {}, {}}; }

// ---- the derivers, one per option, in file order (kRules)

Derived d_stonewall(const SectionFacts& f) { return f.spec.stonewall ? set("") : Derived{}; }

Derived d_ioengine(const SectionFacts& f) {
    Derived d;
    std::string why;
    d.value = engine_of(f.p, why, d.not_inferred);
    d.why = why;
    return d;
}

Derived d_cmd_type(const SectionFacts& f) {
    std::string why;
    std::vector<std::string> ignored;
    return engine_of(f.p, why, ignored) == "io_uring_cmd" ? set("nvme", "passthrough commands are NVMe commands")
                                                          : Derived{};
}

Derived d_filename(const SectionFacts& f) {
    const std::string& name = f.opt.filename;
    if (name.empty())
        return {{}, "", {}, {}, {"the target: no --filename, so the job leaves filename= to fio's command line"}};
    return set(fio_filename_escape(name), name.find(':') == std::string::npos
                                              ? "given with --filename"
                                              : "given with --filename; ':' escaped as '\\:' (fio splits filename= "
                                                "at ':')");
}

Derived d_direct(const SectionFacts&) { return set("1", "device commands bypass the page cache"); }

Derived d_rw(const SectionFacts& f) { return set(f.rw, f.seq_why); }

Derived d_rwmixread(const SectionFacts& f) {
    if (!f.has_r || !f.has_w) return {};
    return set(std::to_string(f.rwmix), std::to_string(f.p.read.cmds) + " of " + std::to_string(f.n) +
                                            " commands are reads (by bytes: " + pct(f.byte_rshare) + ")");
}

Derived d_percentage_random(const SectionFacts& f) {
    return set(f.prand, f.p.per_command ? "100 - sequential share, per direction" : "unknown, see below");
}

Derived d_norandommap(const SectionFacts& f) {
    if (f.sequential) return {};
    return set("1",
               "uniform random offsets; fio's random map skews the realized mix (measured on a loop device: "
               "rwmixread=70 gave 68.3 % reads with the map, 70.2 % without)");
}

Derived d_bssplit(const SectionFacts& f) {
    return set(f.bssplit,
               std::string(f.p.per_command ? "measured command sizes" : "log2 size-bucket floors (no events)") +
                   " per direction (" + std::to_string(f.rsizes.size()) + " read, " + std::to_string(f.wsizes.size()) +
                   " write sizes), largest-remainder rounded to 100" +
                   (f.drop_r + f.drop_w
                        ? "; " + std::to_string(f.drop_r + f.drop_w) + " commands in sizes below 0.5 % left out"
                        : ""));
}

// fio rounds every block size down to a multiple of the smallest one unless bs_unaligned is set (fio 3.33,
// measured: bssplit=484k/1:512k/99 issued only 484k): keep the measured sizes exact. The sizes are bssplit's own:
// with a 4 KiB size left out below 0.5 %, bssplit=488k/1:512k/99 issued 488k and 504k for 512k (serving workload,
// window size TV 0.995). Returns the sizes' greatest common divisor, 0 when they are all multiples of the smallest.
uint64_t unaligned_sizes_gcd(const SectionFacts& f) {
    bool multiples = true;
    uint64_t align = 0;
    for (const Dist* d : {&f.kept_r, &f.kept_w}) {
        if (d->empty()) continue;
        uint64_t smallest = d->begin()->first;
        for (const auto& [sz, c] : *d) {
            if (sz % smallest) multiples = false;
            align = std::gcd(align, sz);
        }
    }
    return multiples ? 0 : align;
}

Derived d_bs_unaligned(const SectionFacts& f) {
    if (!unaligned_sizes_gcd(f)) return {};
    return set("1", "command sizes are not all multiples of the smallest one; without this fio would round them down");
}

Derived d_blockalign(const SectionFacts& f) {
    const uint64_t align = unaligned_sizes_gcd(f);
    if (!align) return {};
    return set(human_bytes(align), "offsets aligned to the greatest common divisor of the sizes (O_DIRECT safe)");
}

// Commands larger than max_segments x 4 KiB need a physically contiguous buffer, or the block layer splits them:
// a direct-I/O buffer of scattered 4 KiB pages made 1280 KiB reads into 512 + 512 + 256 KiB commands on a loop device
// (max_segments 128), fio's iomem=shmhuge gave 1280 KiB at iodepth 1-32 (docs/distill.md "Sizes the target must not
// split"). The limit is the target's when it is a block device here, else Linux's default 128 segments.
uint64_t largest_kept(const SectionFacts& f) {
    uint64_t m = 0;
    for (const Dist* d : {&f.kept_r, &f.kept_w})
        if (!d->empty()) m = std::max(m, d->rbegin()->first);
    return m;
}

bool needs_contiguous(const SectionFacts& f) {
    if (!f.p.per_command) return false;
    const QueueLimits q = f.opt.target_is_block ? queue_limits(f.opt.filename) : QueueLimits{};
    return largest_kept(f) > uint64_t(q.max_segments ? q.max_segments : kDefaultMaxSegments) * kBasePage;
}

Derived d_iomem(const SectionFacts& f) {
    if (!needs_contiguous(f)) return {};
    const QueueLimits q = f.opt.target_is_block ? queue_limits(f.opt.filename) : QueueLimits{};
    const uint32_t segs = q.max_segments ? q.max_segments : kDefaultMaxSegments;
    return set("shmhuge", "commands up to " + human_bytes(largest_kept(f)) + " exceed max_segments " +
                              std::to_string(segs) + (q.max_segments ? " (" + q.source + ")" : " (Linux default)") +
                              " x 4 KiB: buffers of 2 MiB huge pages, physically contiguous, so they are not split; " +
                              std::to_string(huge_pages_for(f.iodepth, largest_kept(f), f.numjobs)) +
                              " huge pages for this section (iodepth x largest size, per clone)");
}

Derived d_hugepage_size(const SectionFacts& f) {
    if (!needs_contiguous(f)) return {};
    return set("2m", "the x86-64 huge page (/proc/meminfo Hugepagesize)");
}

Derived d_iodepth(const SectionFacts& f) {
    const Profile& p = f.p;
    const uint64_t n = f.n;
    const uint32_t cap = f.opt.nr_requests;
    Derived d = set(
        std::to_string(f.iodepth),
        std::string(p.qd_time.empty() ? "p90 of the qd histogram "
                                      : "p90 of the in-flight count over busy time (issue/complete sweep) ") +
            std::to_string(f.qd_p90) + " (median " + std::to_string(f.qd_med) + ", max " +
            std::to_string(p.max_inflight) + ")" +
            (f.numjobs > 1 ? " divided over " + std::to_string(f.numjobs) + " jobs" : "") +
            (p.qd_field.empty() ? "" : "; kernel qd field median " + std::to_string(dist_quantile(p.qd_field, 0.5))) +
            "; Little's law: " + fmt("%.0f", p.iops()) + " IOPS × mean D2C " +
            us(double(p.sum_d2c_ns) / double(n + p.other_cmds)) + " = " +
            fmt("%.2f", p.iops() * double(p.sum_d2c_ns) / double(n + p.other_cmds) / 1e9) + " over the span, " +
            fmt("%.2f", f.little) + " over busy time" +
            (cap ? "; cap nr_requests " + std::to_string(cap) : "; device tags unknown, not capped"));
    if (std::fabs(f.little - double(f.depth_total)) > std::max(1.0, 0.5 * double(f.depth_total)))
        d.after.push_back("WARNING: Little's law busy-time depth " + fmt("%.2f", f.little) +
                          " disagrees with the p90 " + std::to_string(f.depth_total) +
                          ": the depth varies a lot over the trace");
    return d;
}

Derived d_numjobs(const SectionFacts& f) {
    const Profile& p = f.p;
    Derived d = set(std::to_string(f.numjobs), p.distinct_tids ? std::to_string(p.concurrent_tids) +
                                                                     " submitting threads with overlapping activity (" +
                                                                     std::to_string(p.distinct_tids) + " distinct tids)"
                                                               : "no submitter tids in the trace; 1 assumed");
    if (!p.per_command) d.not_inferred.push_back("submitting threads (histograms have no tids): numjobs=1");
    if (!p.distinct_tids && p.per_command)
        d.not_inferred.push_back("submitting-thread concurrency (no tids): numjobs=1");
    return d;
}

Derived d_group_reporting(const SectionFacts& f) { return f.numjobs > 1 ? set("1") : Derived{}; }

Derived d_offset(const SectionFacts& f) {
    if (f.p.lba_hi_bytes == 0)
        return {{}, "", {}, {}, {"the LBA range (no lba histogram): offset/size not set, fio uses the whole target"}};
    return set(std::to_string(f.off),
               "lowest byte touched (" + std::to_string(f.p.lba_lo_bytes) + ") rounded down to 4 KiB");
}

Derived d_size(const SectionFacts& f) {
    if (f.p.lba_hi_bytes == 0) return {};
    return set(std::to_string(f.size), "highest byte touched (" + std::to_string(f.p.lba_hi_bytes) +
                                           ") rounded up to 4 KiB, minus offset; the target needs " +
                                           std::to_string(f.off + f.size) + " bytes");
}

// fio needs a rate for rate_process: the measured one, per job and per direction (read,write).
Derived d_rate_iops(const SectionFacts& f) {
    if (!f.poisson) return {};
    const Profile& p = f.p;
    const double per_s = 1e9 / p.arrivals.mean_ns / double(f.numjobs);
    auto rate = [&](const DirProfile& d) {
        return std::max<uint64_t>(1, uint64_t(std::llround(per_s * double(d.cmds) / double(f.n))));
    };
    const bool both = f.has_r && f.has_w;
    return set(both ? std::to_string(rate(p.read)) + "," + std::to_string(rate(p.write))
                    : std::to_string(rate(f.has_r ? p.read : p.write)),
               "the measured arrival rate 1 / mean inter-arrival" + std::string(f.numjobs > 1 ? " per job" : "") +
                   (both ? ", split by the read and write shares (read,write)" : "") + ", IOPS");
}

Derived d_rate_process(const SectionFacts& f) {
    if (!f.poisson) return {};
    return set("poisson", "timing model: Poisson arrivals (" +
                              std::string(f.by_intervals ? "the intervals above the median" : "the counts per window") +
                              " pass), " + f.arrivals_why + " (Poisson-like: excess CV " + fmt("%.2f", kPoissonCvLo) +
                              "-" + fmt("%.2f", kPoissonCvHi) + ", KS <= " + fmt("%.2f", kPoissonMaxKs) +
                              ", excess mean " + fmt("%.1f", kPoissonMeanLo) + "-" + fmt("%.0f", kPoissonMeanHi) +
                              " x the mean; or dispersion " + fmt("%.1f", kPoissonDispLo) + "-" +
                              fmt("%.1f", kPoissonDispHi) + ", count KS <= " + fmt("%.2f", kPoissonMaxCountKs) +
                              "); not thinktime");
}

// Set for regular bursts (think_pattern); otherwise its lines say why not, and which timing model is left.
Derived d_thinktime(const SectionFacts& f) {
    const Profile& p = f.p;
    const ThinkPattern& tp = f.tp;
    if (f.poisson) return {};
    if (f.think)
        return set(std::to_string(std::max<uint64_t>(1, uint64_t(std::llround(double(tp.think_ns) / 1e3)))),
                   "the median think gap at the device, µs: " + std::to_string(tp.band_gaps) + " of the " +
                       std::to_string(tp.gaps) + " idle gaps >= " + us(double(kThinkGapNs)) + " are within " +
                       fmt("%.1f", kThinkBand) + "x of the idle-time median " + us(double(tp.median_ns)) +
                       " and hold " + pct(tp.band_share) + " of the idle time" +
                       (tp.band_gaps < tp.gaps ? " (the others: stalls inside bursts)" : "") + "; " +
                       pct(double(p.think_idle_ns) / double(p.span_ns)) + " of the span is idle");
    Derived d;
    if (!p.per_command) {
        d.not_inferred.push_back("idle gaps between bursts (histograms have no timeline): no thinktime");
    } else if (f.idle_enough && !f.enough_gaps) {
        d.after.push_back("thinktime not set: " + std::to_string(p.think_gaps_ns.size()) +
                          " idle gap(s) >= " + us(double(kThinkGapNs)) + " cover " +
                          pct(double(p.think_idle_ns) / double(p.span_ns)) + " of the span: fewer than " +
                          std::to_string(kThinkMinGaps) + " gaps are a stall, not a think-time pattern");
    } else if (f.idle_enough) {
        const uint64_t g10 = quantile(p.think_gaps_ns, 0.1), g90 = quantile(p.think_gaps_ns, 0.9);
        d.after.push_back(
            "thinktime not set: idle gaps >= " + us(double(kThinkGapNs)) + " cover " +
            pct(double(p.think_idle_ns) / double(p.span_ns)) + " of the span but are irregular (gap p10 " +
            us(double(g10)) + ", p90 " + us(double(g90)) + "; the " + std::to_string(tp.band_gaps) + " of " +
            std::to_string(tp.gaps) + " within " + fmt("%.1f", kThinkBand) + "x of the idle-time median " +
            us(double(tp.median_ns)) + " hold " + pct(tp.band_share) + " of the idle time, " + pct(kThinkBandShare) +
            " needed; bursts between those: p10 " + std::to_string(tp.b10) + ", p90 " + std::to_string(tp.b90) +
            " commands): submitter stalls (e.g. CPU contention), not think time");
        d.not_inferred.push_back("whether the irregular idle gaps at the device were application think time");
    } else {
        d.after.push_back("thinktime not set: idle gaps >= " + us(double(kThinkGapNs)) + " cover " +
                          pct(p.span_ns ? double(p.think_idle_ns) / double(p.span_ns) : 0.0) + " of the span (< " +
                          pct(kThinkIdleShare) + ")");
    }
    if (f.poisson_like)
        d.after.push_back(
            "timing model: the arrivals are Poisson-like, but the section has fdatasync and fio 3.33 crashes "
            "(SIGFPE) with rate_process=poisson and fdatasync (measured): not rate_process=poisson; " +
            f.arrivals_why);
    else if (p.arrivals.n)
        d.after.push_back("timing model: no rate (as fast as the depth allows), not Poisson: " + f.arrivals_why);
    return d;
}

Derived d_thinktime_blocks(const SectionFacts& f) {
    if (!f.think) return {};
    const ThinkPattern& tp = f.tp;
    Derived d = set(std::to_string(std::max<uint64_t>(1, tp.b50)),
                    "median commands per burst between two think gaps (p10 " + std::to_string(tp.b10) + ", p90 " +
                        std::to_string(tp.b90) + ")");
    if (f.p.arrivals.n) d.after.push_back("timing model: thinktime (regular bursts), not Poisson: " + f.arrivals_why);
    return d;
}

// The section's flushes: FUA writes (sync=1) or flush requests per write (fdatasync). Discards carry none.
bool fua_sync(const SectionFacts& f) { return !f.spec.trim && f.has_w && f.fua_share >= kFuaShare; }
bool flushes(const SectionFacts& f) { return !f.spec.trim && !fua_sync(f) && f.fpw > 0 && f.has_w; }

Derived d_sync(const SectionFacts& f) {
    const Profile& p = f.p;
    if (fua_sync(f))
        // A device with FUA sees an O_SYNC / O_DSYNC direct write as one write with REQ_FUA and no flush command.
        return set("1", std::to_string(p.fua_writes) + " of " + std::to_string(p.write.cmds) +
                            " writes carry FUA (rwbs WF): O_SYNC writes on a device with FUA (block/fops.c sets "
                            "REQ_FUA for a dsync direct write)");
    Derived d;
    if (f.spec.trim || !f.has_w || (!flushes(f) && !p.fua_writes)) return d;
    if (p.fua_writes)
        d.before.push_back(
            std::to_string(p.fua_writes) + " of " + std::to_string(p.write.cmds) +
            " writes carry FUA, too few for sync=1: not reproduced (fio's write_barrier issues no flush or FUA with "
            "libaio, measured)");
    // Measured on a loop device (write back, no FUA): fio libaio sync=1 gives 1 flush request per write (the FUA
    // emulation's post-flush), dd oflag=direct,sync and fio psync sync=1 give 2 (plus generic_write_sync's flush
    // after each write(2)), libaio sync=1 + fdatasync=1 gives 599 per 300 writes.
    if (flushes(f) && f.fpw >= 1.5) {
        d.value = "1";
        d.why = f.flush_why +
                ": two flush requests per write are what a synchronous O_SYNC write(2) becomes on a "
                "device without FUA (the FUA emulation's post-flush and generic_write_sync's flush)";
    }
    return d;
}

Derived d_fdatasync(const SectionFacts& f) {
    const uint64_t every = f.fpw > 0 ? std::max<uint64_t>(1, uint64_t(std::llround(1.0 / f.fpw))) : 1;
    if (fua_sync(f))
        return f.fpw >= 0.5 ? set(std::to_string(every),
                                  f.flush_why + ": besides FUA, one flush every " + std::to_string(every) + " writes")
                            : Derived{};
    if (!flushes(f)) return {};
    if (f.fpw >= 1.5)
        return set("1",
                   "the second flush per write: with an asynchronous engine sync=1 alone gives one (measured: "
                   "libaio sync=1 300 per 300 writes, with fdatasync=1 599)");
    return set(std::to_string(every), f.flush_why + ": one flush every " + std::to_string(every) +
                                          " writes (fsync and fdatasync look alike at the "
                                          "device, and so does an O_SYNC write on a device without FUA: one "
                                          "post-flush)");
}

Derived d_flow_id(const SectionFacts& f) { return f.spec.flow ? set(std::to_string(f.spec.flow_id)) : Derived{}; }

Derived d_flow(const SectionFacts& f) {
    return f.spec.flow ? set(std::to_string(f.spec.flow), f.spec.rate_why) : Derived{};
}

// ---- how the section ends: after the trace's commands (Count) or its time (Time), in passes or not.

uint64_t commands_per_job(const SectionFacts& f) { return (f.n + f.numjobs - 1) / f.numjobs; }

// Count mode in passes: fio's number_ios counts within one pass (it restarts with each loop, measured: fio 3.33
// never ended a loops=1000000 job with number_ios=100), so the trace's commands are spread over just enough passes.
uint64_t count_passes(const SectionFacts& f) {
    const uint64_t job_bytes = uint64_t(f.total_bytes / double(f.numjobs));
    return std::max<uint64_t>(1, uint64_t(std::ceil(1.05 * double(job_bytes) / double(f.pass_bytes))));
}

Derived d_io_size(const SectionFacts& f) {
    if (f.pass_bytes) return set(std::to_string(f.pass_bytes), f.pass_why);
    if (f.opt.mode != JobMode::Count) return {};
    // io_size only bounds the job; number_ios ends it after the trace's commands (fio ends a job at whichever comes
    // first; io_size above size wraps the region, as the trace's stream would).
    const uint64_t cap_bytes = round_up(uint64_t(2.0 * f.total_bytes / double(f.numjobs)) + 16 * f.max_bs, 4096);
    return set(std::to_string(cap_bytes), "an upper bound (twice the trace's bytes): number_ios ends the section");
}

Derived d_number_ios(const SectionFacts& f) {
    if (f.opt.mode != JobMode::Count) return {};
    const uint64_t per_job = commands_per_job(f);
    const std::string jobs = f.numjobs > 1 ? " over " + std::to_string(f.numjobs) + " jobs" : "";
    if (!f.pass_bytes)
        return set(std::to_string(per_job), std::to_string(f.n) + (f.spec.trim ? " discard" : " read/write") +
                                                " commands in the trace" + jobs +
                                                " (the same amount of I/O, not a rounded-up runtime)");
    const uint64_t passes = count_passes(f);
    return set(
        std::to_string((per_job + passes - 1) / passes),
        std::to_string(f.n) + " commands in the trace" + jobs +
            (passes > 1 ? ", in " + std::to_string(passes) + " passes (5 % slack: a pass ends at whichever comes first)"
                        : ""));
}

Derived d_loops(const SectionFacts& f) {
    if (!f.pass_bytes) return {};
    if (f.opt.mode == JobMode::Count) {
        const uint64_t passes = count_passes(f);
        return passes > 1 ? set(std::to_string(passes), "passes restart every stream at offset") : Derived{};
    }
    return set(std::to_string(kLoops),
               "passes restart every stream at offset; runtime ends the job (not time_based: a time-based job never "
               "ends a pass)");
}

Derived d_randrepeat(const SectionFacts& f) {
    if (!f.pass_bytes) return {};
    return set("0", "fio reseeds at every pass: with the default each pass would repeat the same commands");
}

Derived d_time_based(const SectionFacts& f) {
    return f.opt.mode == JobMode::Time && !f.pass_bytes ? set("1", f.pass_why) : Derived{};
}

Derived d_runtime(const SectionFacts& f) {
    if (f.opt.mode != JobMode::Time) return {};
    const SectionSpec& spec = f.spec;
    const JobOptions& opt = f.opt;
    const uint64_t ms = spec.runtime_ms ? spec.runtime_ms
                        : opt.runtime_s ? uint64_t(opt.runtime_s) * 1000
                                        : std::max<uint64_t>(1, (f.p.span_ns + 999'999) / 1'000'000);
    return set(ms % 1000 == 0 ? std::to_string(ms / 1000) : std::to_string(ms) + "ms",
               spec.runtime_ms ? "this part's share of the run (--mode time)"
               : opt.runtime_s ? "given with --runtime, s"
                               : "trace span " + fmt("%.3f", double(f.p.span_ns) / 1e9) + " s (--mode time)");
}

// One row of the table: the fio option, its deriver, and whether it is a target option (target_options; in a
// section only with SectionSpec::target). The rows are in file order.
struct OptionRule {
    const char* name;
    Derived (*derive)(const SectionFacts&);
    bool target = false;
};

// Every option a derived section may set, in the order it is written (docs/distill.md has the rules).
constexpr OptionRule kRules[] = {
    {"stonewall", d_stonewall},
    {"ioengine", d_ioengine, true},
    {"cmd_type", d_cmd_type, true},
    {"filename", d_filename, true},
    {"direct", d_direct, true},
    {"rw", d_rw},
    {"rwmixread", d_rwmixread},
    {"percentage_random", d_percentage_random},
    {"norandommap", d_norandommap},
    {"bssplit", d_bssplit},
    {"bs_unaligned", d_bs_unaligned},
    {"blockalign", d_blockalign},
    {"iodepth", d_iodepth},
    {"numjobs", d_numjobs},
    {"group_reporting", d_group_reporting},
    {"iomem", d_iomem},
    {"hugepage-size", d_hugepage_size},
    {"offset", d_offset},
    {"size", d_size},
    {"rate_iops", d_rate_iops},
    {"rate_process", d_rate_process},
    {"thinktime", d_thinktime},
    {"thinktime_blocks", d_thinktime_blocks},
    {"sync", d_sync},
    {"fdatasync", d_fdatasync},
    {"flow_id", d_flow_id},
    {"flow", d_flow},
    {"io_size", d_io_size},
    {"number_ios", d_number_ios},
    {"loops", d_loops},
    {"randrepeat", d_randrepeat},
    {"time_based", d_time_based},
    {"runtime", d_runtime},
};

// Runs a row: its header lines and value into `s`, what it could not tell into `not_inferred`.
void apply(const OptionRule& r, const SectionFacts& f, FioSection& s, std::vector<std::string>& not_inferred) {
    Derived d = r.derive(f);
    s.why.insert(s.why.end(), d.before.begin(), d.before.end());
    if (d.value) {
        s.options.emplace_back(r.name, *d.value);
        if (!d.why.empty()) s.why.push_back(std::string(r.name) + "=" + *d.value + ": " + d.why);
    }
    s.why.insert(s.why.end(), d.after.begin(), d.after.end());
    not_inferred.insert(not_inferred.end(), d.not_inferred.begin(), d.not_inferred.end());
}

}  // namespace

void target_options(const Profile& p, const JobOptions& opt, std::vector<std::string>& not_inferred, FioSection& s) {
    const SectionSpec spec;
    const SectionFacts f{p, opt, spec};
    for (const OptionRule& r : kRules)
        if (r.target) apply(r, f, s, not_inferred);
}

std::vector<std::string> derived_options() {
    std::vector<std::string> names;
    for (const OptionRule& r : kRules) names.emplace_back(r.name);
    return names;
}

FioSection derive_section(const Profile& p, const JobOptions& opt, const SectionSpec& spec,
                          std::vector<std::string>& not_inferred) {
    FioSection sec;
    SectionFacts f{p, opt, spec};
    f.has_r = p.read.cmds > 0, f.has_w = p.write.cmds > 0;
    f.n = p.cmds();
    measure_depth(f, sec.why, not_inferred);
    measure_mix_and_sizes(f, sec.why, not_inferred);
    measure_timing(f);
    measure_passes(f);
    for (const OptionRule& r : kRules)
        if (!r.target || spec.target) apply(r, f, sec, not_inferred);
    return sec;
}

FioJob make_fio_job(const Profile& p, const JobOptions& opt, const std::vector<std::string>& more_notes) {
    std::vector<std::string> notes = check_trace_health(p, opt);
    notes.insert(notes.end(), more_notes.begin(), more_notes.end());
    FioJob job;
    SectionSpec spec;
    FioSection s = derive_section(p, opt, spec, job.not_inferred);
    s.name = opt.job_name;
    job.options = s.options;
    job.why = s.why;
    job.not_inferred.push_back(
        "the access distribution inside the range (uniform random assumed; no LBA heatmap used)");
    if (p.other_cmds > p.flush_cmds)
        job.not_inferred.push_back(std::to_string(p.other_cmds - p.flush_cmds) +
                                   " discard/other commands are not reproduced");
    job.not_inferred.push_back("per-command timing and ordering (use --iolog for an exact replay)");

    std::ostringstream o;
    o << job_header(p, opt, p.write.cmds > 0);
    for (const auto& l : device_level_lines(p, job, opt)) o << "; " << l << "\n";
    o << "; derivation (docs/distill.md):\n";
    for (const auto& w : notes) o << ";   " << w << "\n";
    for (const auto& w : s.why) o << ";   " << w << "\n";
    o << "; not inferred from the trace:\n";
    for (const auto& w : job.not_inferred) o << ";   " << w << "\n";
    o << "\n[" << opt.job_name << "]\n";
    for (const auto& [k, v] : job.options) o << k << (v.empty() ? "" : "=" + v) << "\n";
    job.text = o.str();
    return job;
}

}  // namespace kvio::distiller
