#include "distiller/fio_job.h"

#include <algorithm>
#include <numeric>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "common/histogram.h"
#include "distiller/rounding.h"

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

void target_options(const Profile& p, const JobOptions& opt, std::vector<std::string>& not_inferred, FioSection& s) {
    auto set = [&](const std::string& k, const std::string& v, const std::string& reason) {
        s.options.emplace_back(k, v);
        if (!reason.empty()) s.why.push_back(k + "=" + v + ": " + reason);
    };
    std::string engine_why, engine = engine_of(p, engine_why, not_inferred);
    set("ioengine", engine, engine_why);
    if (engine == "io_uring_cmd") set("cmd_type", "nvme", "passthrough commands are NVMe commands");
    if (!opt.filename.empty())
        set("filename", fio_filename_escape(opt.filename),
            opt.filename.find(':') == std::string::npos
                ? "given with --filename"
                : "given with --filename; ':' escaped as '\\:' (fio splits filename= at ':')");
    else
        not_inferred.push_back("the target: no --filename, so the job leaves filename= to fio's command line");
    set("direct", "1", "device commands bypass the page cache");
}

FioSection derive_section(const Profile& p, const JobOptions& opt, const SectionSpec& spec,
                          std::vector<std::string>& not_inferred) {
    FioSection sec;
    auto& why = sec.why;
    auto set = [&](const std::string& k, const std::string& v, const std::string& reason) {
        sec.options.emplace_back(k, v);
        if (!reason.empty()) why.push_back(k + "=" + v + ": " + reason);
    };
    const std::string where = p.source + " (device " + p.dev + (p.disk.empty() ? "" : " " + p.disk) + ")";
    const bool has_r = p.read.cmds > 0, has_w = p.write.cmds > 0;
    const uint64_t n = p.cmds();

    // Queue depth: the depth the submitters kept, read as the p90 of the in-flight count over busy time (sweep),
    // cross-checked with the kernel's qd and Little's law. A closed-loop submitter at depth N that reaps in batches
    // leaves the device anywhere between 1 and N in flight, so the median sits below N and moves with how fast the
    // submitter is scheduled (a fio QD-4 reader: median 3 or 4 from run to run); the top of the distribution is N
    // (docs/distill.md, the `iodepth` row). Per-command input: the time-weighted in-flight distribution (robust to
    // simultaneous completions); histogram input: the qd histogram (at dispatch).
    const Dist& qdd = p.qd_time.empty() ? p.qd_at_issue : p.qd_time;
    uint64_t qd_med = dist_quantile(qdd, 0.5), qd_p90 = dist_quantile(qdd, 0.9);
    double little = p.little_busy();
    uint32_t cap = opt.nr_requests;
    uint32_t numjobs = std::max<uint32_t>(1, p.concurrent_tids);
    uint32_t depth_total = uint32_t(std::max<uint64_t>(1, qd_p90));
    if (qdd.empty()) {
        depth_total = uint32_t(std::max<long>(1, std::lround(little)));
        not_inferred.push_back("the in-flight distribution (no qd histogram): iodepth from Little's law alone");
    }
    uint32_t iodepth = std::max<uint32_t>(1, uint32_t(std::lround(double(depth_total) / numjobs)));
    // The measured in-flight values were checked against the tags above; what is left is rounding (128 in flight over
    // 36 threads rounds to 4 each: 144 > 128 tags), so the per-job depth is capped, not the trace refused.
    if (cap && uint64_t(iodepth) * numjobs > cap) {
        const uint32_t capped = std::max<uint32_t>(1, cap / numjobs);
        why.push_back("iodepth=" + std::to_string(capped) + ": " + std::to_string(iodepth) + " × numjobs " +
                      std::to_string(numjobs) + " would exceed the device's " + std::to_string(cap) +
                      " tags, rounded down to fit");
        iodepth = capped;
    }

    // Direction mix and randomness.
    double rshare = double(p.read.cmds) / double(n);
    double byte_rshare = double(p.read.bytes) / double(p.read.bytes + p.write.bytes);
    uint32_t rwmix = uint32_t(std::lround(100.0 * rshare));
    auto rand_pct = [](const DirProfile& d) { return uint32_t(std::lround(100.0 * (1.0 - d.seq_share()))); };
    uint32_t rr = has_r ? rand_pct(p.read) : 0, rw_ = has_w ? rand_pct(p.write) : 0;
    if (!p.per_command) {
        rr = rw_ = 100;
        not_inferred.push_back("sequentiality (histograms carry no command order): fully random assumed");
    }
    bool sequential = false;
    std::string rw, prand;
    auto set_randomness = [&] {
        sequential = (!has_r || rr == 0) && (!has_w || rw_ == 0);
        rw = has_r && has_w ? (sequential ? "rw" : "randrw")
             : has_r        ? (sequential ? "read" : "randread")
             : spec.trim    ? (sequential ? "trim" : "randtrim")
                            : (sequential ? "write" : "randwrite");
        prand = has_r && has_w && rr != rw_ ? std::to_string(rr) + "," + std::to_string(rw_)
                                            : std::to_string(has_r ? rr : rw_);
    };
    set_randomness();
    std::string seq_why = "sequential share (command starts where one of the last " + std::to_string(kSeqWindow) +
                          " same-direction commands ended)";
    if (has_r) seq_why += ": reads " + pct(p.read.seq_share());
    if (has_w) seq_why += std::string(has_r ? ", " : ": ") + "writes " + pct(p.write.seq_share());

    // Sizes fio can issue; the others are left out, with a note.
    uint64_t odd = 0;
    const Dist rsizes = issuable(p.read.sizes, odd), wsizes = issuable(p.write.sizes, odd);
    if (odd)
        why.push_back("note: " + std::to_string(odd) +
                      " commands of 0 bytes or of a size that is not a whole number of "
                      "512-byte sectors left out of bssplit (fio refuses such sizes with direct=1: EINVAL)");
    if ((has_r && rsizes.empty()) || (has_w && wsizes.empty()))
        throw Error(where + ": every " + (has_r && rsizes.empty() ? "read" : "write") +
                    " command is 0 bytes or not a whole number of 512-byte sectors: no size fio can issue");
    uint64_t drop_r = 0, drop_w = 0;
    Dist kept_r, kept_w;  // the sizes bssplit holds: fio's smallest size is the smallest of these
    std::string bs_r = has_r ? bssplit_list(rsizes, &drop_r, &kept_r) : "";
    std::string bs_w = has_w ? bssplit_list(wsizes, &drop_w, &kept_w) : "";
    std::string bssplit = has_r && has_w ? bs_r + "," + bs_w : has_r ? bs_r : bs_w;
    uint64_t max_bs = 0;
    for (const auto* d : {&rsizes, &wsizes})
        if (!d->empty()) max_bs = std::max(max_bs, d->rbegin()->first);

    // LBA range.
    uint64_t off = round_down(p.lba_lo_bytes, 4096);
    uint64_t size = std::max(round_up(p.lba_hi_bytes, 4096) - off, round_up(max_bs, 4096));

    // Think time must be idle time that is both large and regular (think_pattern).
    const uint64_t g10 = quantile(p.think_gaps_ns, 0.1), g90 = quantile(p.think_gaps_ns, 0.9);
    const ThinkPattern tp = think_pattern(p);
    bool idle_enough =
        !p.think_gaps_ns.empty() && p.span_ns && double(p.think_idle_ns) >= kThinkIdleShare * double(p.span_ns);
    const bool enough_gaps = p.think_gaps_ns.size() >= kThinkMinGaps;
    // Poisson arrivals first: their idle gaps are exponential, never "regular", so without this rule a
    // rate_process=poisson source became an unthrottled closed loop.
    const Arrivals& arr = p.arrivals;
    // A device kept busy paces its submitter by completions, whatever the shape of the intervals (a closed loop's
    // issues follow its completions): only a stream that leaves the device idle (the thinktime share) can be open.
    const bool by_intervals = arr.excess_cv >= kPoissonCvLo && arr.excess_cv <= kPoissonCvHi &&
                              arr.excess_ks <= kPoissonMaxKs && arr.excess_mean_ns >= kPoissonMeanLo * arr.mean_ns &&
                              arr.excess_mean_ns <= kPoissonMeanHi * arr.mean_ns;
    const bool by_counts = arr.windows >= kPoissonMinWindows && arr.dispersion >= kPoissonDispLo &&
                           arr.dispersion <= kPoissonDispHi && arr.count_ks <= kPoissonMaxCountKs;
    // The flush rule (below) comes first: fio 3.33 dies of SIGFPE with rate_process=poisson and fdatasync (measured;
    // fio's poisson rate divides by the block size of the sync direction, 0), and a sync-write stream stays one.
    std::string flush_why = spec.flush_why;
    const double fpw = spec.flushes_per_write >= 0 ? spec.flushes_per_write : flush_rate(p, flush_why);
    const double fua_share = p.write.cmds ? double(p.fua_writes) / double(p.write.cmds) : 0.0;
    const bool fdatasyncs = !spec.trim && has_w && (fua_share >= kFuaShare ? fpw >= 0.5 : fpw > 0);
    // Bursts of one size between gaps of one length are think time even when their counts per window look Poisson
    // (a fio thinktime=2000 thinktime_blocks=4 trace with stalls inside its bursts passed the count test: dispersion
    // 1.22, count KS 0.110); exponential gaps are never regular (the band around the idle-time median of an
    // exponential holds about 41 % of the idle time).
    const bool poisson_like =
        !tp.regular && p.per_command && idle_enough && arr.n >= kPoissonMinArrivals && (by_intervals || by_counts);
    const bool poisson = poisson_like && !fdatasyncs;
    const std::string arrivals_why =
        arr.n ? "inter-arrival times of " + std::to_string(arr.n + 1) + " issues: mean " + us(arr.mean_ns) +
                    ", median " + us(arr.median_ns) + "; above the median: excess mean " + us(arr.excess_mean_ns) +
                    ", CV " + fmt("%.2f", arr.excess_cv) + ", KS distance to the exponential " +
                    fmt("%.3f", arr.excess_ks) + "; issues in " + std::to_string(arr.windows) + " windows of " +
                    fmt("%.0f", kArrivalWindow) + " mean intervals: dispersion " + fmt("%.2f", arr.dispersion) +
                    ", KS distance to the Poisson counts " + fmt("%.3f", arr.count_ks)
              : "";
    bool think = idle_enough && tp.regular && !poisson;
    uint64_t think_us = 0, think_blocks = 0;
    if (think) {
        think_us = std::max<uint64_t>(1, uint64_t(std::llround(double(tp.think_ns) / 1e3)));
        think_blocks = std::max<uint64_t>(1, tp.b50);
    }

    // A sequential stream of mixed sizes must not reach the end of the region. There fio (io_u.c
    // get_next_buflen) redraws until a size fits, so the region's tail fills with the smallest size (measured on
    // the `kvio run` default: 131 of 151 replayed 4 KiB writes in the last MiB, write-size TV up to 0.096). A
    // time-based job only wraps at the end, so such a job restarts passes instead: io_size bytes per pass,
    // `loops` passes (fio resets every stream to `offset` at a pass).
    uint64_t pass_bytes = 0;
    std::string pass_why;
    const double total_bytes = double(p.read.bytes + p.write.bytes);
    if (p.lba_hi_bytes != 0) {
        auto entries = [](const std::string& list) {
            return list.empty() ? 0 : 1 + std::count(list.begin(), list.end(), ':');
        };
        double worst = 0;  // the largest share of the pass one at-risk direction's stream advances, with margin
        std::string risky;
        for (auto [d, list, rand, name] :
             {std::tuple{&p.read, bs_r, rr, "reads"}, std::tuple{&p.write, bs_w, rw_, "writes"}}) {
            if (!d->cmds || entries(list) < 2 || rand >= 100) continue;
            double byte_share = double(d->bytes) / total_bytes, cmd_share = double(d->cmds) / double(n);
            // rwmix draws the direction per command: over a pass of m commands this direction's count has a
            // relative standard deviation sqrt((1 - q) / (m q)); 4 of them keep a pass off the end.
            double m = double(size) / (total_bytes / double(n));
            double margin = std::min(0.5, 4.0 * std::sqrt((1.0 - cmd_share) / (m * cmd_share)));
            worst = std::max(worst, byte_share * (1.0 + margin));
            risky += std::string(risky.empty() ? "" : " and ") + name + " (" + std::to_string(entries(list)) +
                     " sizes, " + pct(byte_share) + " of the bytes, margin " + pct(margin) + ")";
        }
        uint64_t pass = worst > 0 && size > max_bs ? round_down(uint64_t(double(size - max_bs) / worst), 4096) : 0;
        if (worst > 0 && pass < 4 * max_bs) {  // a region of a few commands: the tail is the whole job
            pass_why = "sequential " + risky + " in a region of only " + std::to_string(size) +
                       " bytes, too small for passes that stay off its end: fio may fill the region's tail with the "
                       "smallest size";
        } else if (worst > 0) {
            pass_bytes = pass;
            pass_why = "sequential " + risky + ": a pass of " + std::to_string(pass_bytes) +
                       " bytes keeps each stream at least one largest command (" + human_bytes(max_bs) +
                       ") short of the region's end, where fio would fill the tail with the smallest size";
        }
    }

    // In count mode a pass also ends when any stream reaches the region's end (fio 3.33 io_u.c: get_next_seq_offset
    // fails there), and a random jump puts a mostly sequential stream anywhere, near the end too. Measured on a
    // `kvio run --workload simulate` section of 946 commands (rwmixread=89, percentage_random=1, 3 passes): 546-829
    // commands in 4 runs; with percentage_random=0: 948 in 3. So such a direction is written all sequential.
    if (pass_bytes && opt.mode == JobMode::Count) {
        std::string made;
        for (auto [r, name] : {std::pair{&rr, "reads"}, std::pair{&rw_, "writes"}})
            if (*r > 0 && *r <= kPassMaxRandomPct) {
                made += std::string(made.empty() ? "" : ", ") + name + " " + std::to_string(*r) + " % random";
                *r = 0;
            }
        if (!made.empty()) {
            set_randomness();
            seq_why += "; written all sequential (" + made +
                       " in the trace): in passes a random jump can put a stream near the "
                       "region's end, where fio ends the pass early and the section issues too few commands";
        }
    }

    // ---- section options (order = file order)
    if (spec.stonewall) set("stonewall", "", "");
    if (spec.target) target_options(p, opt, not_inferred, sec);
    set("rw", rw, seq_why);
    if (has_r && has_w)
        set("rwmixread", std::to_string(rwmix),
            std::to_string(p.read.cmds) + " of " + std::to_string(n) +
                " commands are reads (by bytes: " + pct(byte_rshare) + ")");
    set("percentage_random", prand, p.per_command ? "100 - sequential share, per direction" : "unknown, see below");
    if (!sequential)
        set("norandommap", "1",
            "uniform random offsets; fio's random map skews the realized mix (measured on a loop device: rwmixread=70 "
            "gave 68.3 % reads with the map, 70.2 % without)");
    set("bssplit", bssplit,
        std::string(p.per_command ? "measured command sizes" : "log2 size-bucket floors (no events)") +
            " per direction (" + std::to_string(rsizes.size()) + " read, " + std::to_string(wsizes.size()) +
            " write sizes), largest-remainder rounded to 100" +
            (drop_r + drop_w ? "; " + std::to_string(drop_r + drop_w) + " commands in sizes below 0.5 % left out"
                             : ""));
    {
        // fio rounds every block size down to a multiple of the smallest one unless bs_unaligned is set
        // (fio 3.33, measured: bssplit=484k/1:512k/99 issued only 484k): keep the measured sizes exact. The sizes
        // are bssplit's own: with a 4 KiB size left out below 0.5 %, bssplit=488k/1:512k/99 issued 488k and 504k
        // for 512k (serving workload, window size TV 0.995).
        bool multiples = true;
        uint64_t align = 0;
        for (const Dist* d : {&kept_r, &kept_w}) {
            if (d->empty()) continue;
            uint64_t smallest = d->begin()->first;
            for (const auto& [sz, c] : *d) {
                if (sz % smallest) multiples = false;
                align = std::gcd(align, sz);
            }
        }
        if (!multiples) {
            set("bs_unaligned", "1",
                "command sizes are not all multiples of the smallest one; without this fio would round them down");
            set("blockalign", human_bytes(align),
                "offsets aligned to the greatest common divisor of the sizes (O_DIRECT safe)");
        }
    }
    set("iodepth", std::to_string(iodepth),
        std::string(p.qd_time.empty() ? "p90 of the qd histogram "
                                      : "p90 of the in-flight count over busy time (issue/complete sweep) ") +
            std::to_string(qd_p90) + " (median " + std::to_string(qd_med) + ", max " + std::to_string(p.max_inflight) +
            ")" + (numjobs > 1 ? " divided over " + std::to_string(numjobs) + " jobs" : "") +
            (p.qd_field.empty() ? "" : "; kernel qd field median " + std::to_string(dist_quantile(p.qd_field, 0.5))) +
            "; Little's law: " + fmt("%.0f", p.iops()) + " IOPS × mean D2C " +
            us(double(p.sum_d2c_ns) / double(n + p.other_cmds)) + " = " +
            fmt("%.2f", p.iops() * double(p.sum_d2c_ns) / double(n + p.other_cmds) / 1e9) + " over the span, " +
            fmt("%.2f", little) + " over busy time" +
            (cap ? "; cap nr_requests " + std::to_string(cap) : "; device tags unknown, not capped"));
    if (std::fabs(little - double(depth_total)) > std::max(1.0, 0.5 * double(depth_total)))
        why.push_back("WARNING: Little's law busy-time depth " + fmt("%.2f", little) + " disagrees with the p90 " +
                      std::to_string(depth_total) + ": the depth varies a lot over the trace");
    set("numjobs", std::to_string(numjobs),
        p.distinct_tids ? std::to_string(p.concurrent_tids) + " submitting threads with overlapping activity (" +
                              std::to_string(p.distinct_tids) + " distinct tids)"
                        : "no submitter tids in the trace; 1 assumed");
    if (!p.per_command) not_inferred.push_back("submitting threads (histograms have no tids): numjobs=1");
    if (!p.distinct_tids && p.per_command) not_inferred.push_back("submitting-thread concurrency (no tids): numjobs=1");
    if (numjobs > 1) set("group_reporting", "1", "");
    if (p.lba_hi_bytes == 0) {
        not_inferred.push_back("the LBA range (no lba histogram): offset/size not set, fio uses the whole target");
    } else {
        set("offset", std::to_string(off),
            "lowest byte touched (" + std::to_string(p.lba_lo_bytes) + ") rounded down to 4 KiB");
        set("size", std::to_string(size),
            "highest byte touched (" + std::to_string(p.lba_hi_bytes) +
                ") rounded up to 4 KiB, minus offset; the target needs " + std::to_string(off + size) + " bytes");
    }
    if (poisson) {
        // fio needs a rate for rate_process: the measured one, per job and per direction (read,write).
        const double per_s = 1e9 / arr.mean_ns / double(numjobs);
        auto rate = [&](const DirProfile& d) {
            return std::max<uint64_t>(1, uint64_t(std::llround(per_s * double(d.cmds) / double(n))));
        };
        std::string r = has_r && has_w ? std::to_string(rate(p.read)) + "," + std::to_string(rate(p.write))
                                       : std::to_string(rate(has_r ? p.read : p.write));
        set("rate_iops", r,
            "the measured arrival rate 1 / mean inter-arrival" + std::string(numjobs > 1 ? " per job" : "") +
                (has_r && has_w ? ", split by the read and write shares (read,write)" : "") + ", IOPS");
        set("rate_process", "poisson",
            "timing model: Poisson arrivals (" +
                std::string(by_intervals ? "the intervals above the median" : "the counts per window") + " pass), " +
                arrivals_why + " (Poisson-like: excess CV " + fmt("%.2f", kPoissonCvLo) + "-" +
                fmt("%.2f", kPoissonCvHi) + ", KS <= " + fmt("%.2f", kPoissonMaxKs) + ", excess mean " +
                fmt("%.1f", kPoissonMeanLo) + "-" + fmt("%.0f", kPoissonMeanHi) + " x the mean; or dispersion " +
                fmt("%.1f", kPoissonDispLo) + "-" + fmt("%.1f", kPoissonDispHi) +
                ", count KS <= " + fmt("%.2f", kPoissonMaxCountKs) + "); not thinktime");
    } else if (think) {
        set("thinktime", std::to_string(think_us),
            "the median think gap at the device, µs: " + std::to_string(tp.band_gaps) + " of the " +
                std::to_string(tp.gaps) + " idle gaps >= " + us(double(kThinkGapNs)) + " are within " +
                fmt("%.1f", kThinkBand) + "x of the idle-time median " + us(double(tp.median_ns)) + " and hold " +
                pct(tp.band_share) + " of the idle time" +
                (tp.band_gaps < tp.gaps ? " (the others: stalls inside bursts)" : "") + "; " +
                pct(double(p.think_idle_ns) / double(p.span_ns)) + " of the span is idle");
        set("thinktime_blocks", std::to_string(think_blocks),
            "median commands per burst between two think gaps (p10 " + std::to_string(tp.b10) + ", p90 " +
                std::to_string(tp.b90) + ")");
        if (arr.n) why.push_back("timing model: thinktime (regular bursts), not Poisson: " + arrivals_why);
    } else if (!p.per_command) {
        not_inferred.push_back("idle gaps between bursts (histograms have no timeline): no thinktime");
    } else if (idle_enough && !enough_gaps) {
        why.push_back("thinktime not set: " + std::to_string(p.think_gaps_ns.size()) +
                      " idle gap(s) >= " + us(double(kThinkGapNs)) + " cover " +
                      pct(double(p.think_idle_ns) / double(p.span_ns)) + " of the span: fewer than " +
                      std::to_string(kThinkMinGaps) + " gaps are a stall, not a think-time pattern");
    } else if (idle_enough) {
        why.push_back("thinktime not set: idle gaps >= " + us(double(kThinkGapNs)) + " cover " +
                      pct(double(p.think_idle_ns) / double(p.span_ns)) + " of the span but are irregular (gap p10 " +
                      us(double(g10)) + ", p90 " + us(double(g90)) + "; the " + std::to_string(tp.band_gaps) + " of " +
                      std::to_string(tp.gaps) + " within " + fmt("%.1f", kThinkBand) + "x of the idle-time median " +
                      us(double(tp.median_ns)) + " hold " + pct(tp.band_share) + " of the idle time, " +
                      pct(kThinkBandShare) + " needed; bursts between those: p10 " + std::to_string(tp.b10) + ", p90 " +
                      std::to_string(tp.b90) + " commands): submitter stalls (e.g. CPU contention), not think time");
        not_inferred.push_back("whether the irregular idle gaps at the device were application think time");
    } else {
        why.push_back("thinktime not set: idle gaps >= " + us(double(kThinkGapNs)) + " cover " +
                      pct(p.span_ns ? double(p.think_idle_ns) / double(p.span_ns) : 0.0) + " of the span (< " +
                      pct(kThinkIdleShare) + ")");
    }
    if (poisson_like && !poisson)
        why.push_back(
            "timing model: the arrivals are Poisson-like, but the section has fdatasync and fio 3.33 crashes "
            "(SIGFPE) with rate_process=poisson and fdatasync (measured): not rate_process=poisson; " +
            arrivals_why);
    else if (!poisson && !think && arr.n)
        why.push_back("timing model: no rate (as fast as the depth allows), not Poisson: " + arrivals_why);
    if (spec.trim) {
        // discards carry no flush semantics
    } else if (has_w && fua_share >= kFuaShare) {
        // A device with FUA sees an O_SYNC / O_DSYNC direct write as one write with REQ_FUA and no flush command.
        set("sync", "1",
            std::to_string(p.fua_writes) + " of " + std::to_string(p.write.cmds) +
                " writes carry FUA (rwbs WF): O_SYNC writes on a device with FUA (block/fops.c sets REQ_FUA for "
                "a dsync direct write)");
        if (fpw >= 0.5) {
            uint64_t every = std::max<uint64_t>(1, uint64_t(std::llround(1.0 / fpw)));
            set("fdatasync", std::to_string(every),
                flush_why + ": besides FUA, one flush every " + std::to_string(every) + " writes");
        }
    } else if (fpw > 0 && has_w) {
        if (p.fua_writes)
            why.push_back(
                std::to_string(p.fua_writes) + " of " + std::to_string(p.write.cmds) +
                " writes carry FUA, too few for sync=1: not reproduced (fio's write_barrier issues no flush or FUA "
                "with libaio, measured)");
        if (fpw >= 1.5) {
            // Measured on a loop device (write back, no FUA): fio libaio sync=1 gives 1 flush request per write (the
            // FUA emulation's post-flush), dd oflag=direct,sync and fio psync sync=1 give 2 (plus generic_write_sync's
            // flush after each write(2)), libaio sync=1 + fdatasync=1 gives 599 per 300 writes.
            set("sync", "1",
                flush_why +
                    ": two flush requests per write are what a synchronous O_SYNC write(2) becomes on a "
                    "device without FUA (the FUA emulation's post-flush and generic_write_sync's flush)");
            set("fdatasync", "1",
                "the second flush per write: with an asynchronous engine sync=1 alone gives one (measured: "
                "libaio sync=1 300 per 300 writes, with fdatasync=1 599)");
        } else {
            uint64_t every = std::max<uint64_t>(1, uint64_t(std::llround(1.0 / fpw)));
            set("fdatasync", std::to_string(every),
                flush_why + ": one flush every " + std::to_string(every) +
                    " writes (fsync and fdatasync look alike at the "
                    "device, and so does an O_SYNC write on a device without FUA: one post-flush)");
        }
    } else if (has_w && p.fua_writes) {
        why.push_back(
            std::to_string(p.fua_writes) + " of " + std::to_string(p.write.cmds) +
            " writes carry FUA, too few for sync=1: not reproduced (fio's write_barrier issues no flush or FUA with "
            "libaio, measured)");
    }
    if (spec.flow) {
        set("flow_id", std::to_string(spec.flow_id), "");
        set("flow", std::to_string(spec.flow), spec.rate_why);
    }

    // ---- how the section ends
    const uint64_t per_job = (n + numjobs - 1) / numjobs;
    if (opt.mode == JobMode::Count) {
        if (pass_bytes) {
            // fio's number_ios counts within one pass (it restarts with each loop, measured: fio 3.33 never ended a
            // loops=1000000 job with number_ios=100), so the trace's commands are spread over just enough passes.
            uint64_t job_bytes = uint64_t(total_bytes / double(numjobs));
            uint64_t passes = std::max<uint64_t>(1, uint64_t(std::ceil(1.05 * double(job_bytes) / double(pass_bytes))));
            uint64_t per_pass = (per_job + passes - 1) / passes;
            set("io_size", std::to_string(pass_bytes), pass_why);
            set("number_ios", std::to_string(per_pass),
                std::to_string(n) + " commands in the trace" +
                    (numjobs > 1 ? " over " + std::to_string(numjobs) + " jobs" : "") +
                    (passes > 1 ? ", in " + std::to_string(passes) +
                                      " passes (5 % slack: a pass ends at whichever comes first)"
                                : ""));
            if (passes > 1) set("loops", std::to_string(passes), "passes restart every stream at offset");
            set("randrepeat", "0",
                "fio reseeds at every pass: with the default each pass would repeat the same commands");
        } else {
            // io_size only bounds the job; number_ios ends it after the trace's commands (fio ends a job at
            // whichever comes first; io_size above size wraps the region, as the trace's stream would).
            uint64_t cap_bytes = round_up(uint64_t(2.0 * total_bytes / double(numjobs)) + 16 * max_bs, 4096);
            set("io_size", std::to_string(cap_bytes),
                "an upper bound (twice the trace's bytes): number_ios ends the section");
            set("number_ios", std::to_string(per_job),
                std::to_string(n) + (spec.trim ? " discard" : " read/write") + " commands in the trace" +
                    (numjobs > 1 ? " over " + std::to_string(numjobs) + " jobs" : "") +
                    " (the same amount of I/O, not a rounded-up runtime)");
        }
    } else {
        uint64_t ms = spec.runtime_ms ? spec.runtime_ms
                      : opt.runtime_s ? uint64_t(opt.runtime_s) * 1000
                                      : std::max<uint64_t>(1, (p.span_ns + 999'999) / 1'000'000);
        if (pass_bytes) {
            set("io_size", std::to_string(pass_bytes), pass_why);
            set("loops", std::to_string(kLoops),
                "passes restart every stream at offset; runtime ends the job (not time_based: a time-based job never "
                "ends a pass)");
            set("randrepeat", "0",
                "fio reseeds at every pass: with the default each pass would repeat the same commands");
        } else {
            set("time_based", "1", pass_why);
        }
        std::string rt = ms % 1000 == 0 ? std::to_string(ms / 1000) : std::to_string(ms) + "ms";
        set("runtime", rt,
            spec.runtime_ms ? "this part's share of the run (--mode time)"
            : opt.runtime_s ? "given with --runtime, s"
                            : "trace span " + fmt("%.3f", double(p.span_ns) / 1e9) + " s (--mode time)");
    }
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
