// The measured shape of a device workload: what the distiller derives fio options from, and what
// `kvio distill --verify` compares between the original and the replayed trace.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/event_trace.h"

namespace kvio::distiller {

/// A discrete distribution: value -> count.
using Dist = std::map<uint64_t, uint64_t>;

/// Per-direction (read or write) measurements.
struct DirProfile {
    uint64_t cmds = 0;
    uint64_t bytes = 0;
    Dist sizes;               ///< command size in bytes -> commands (exact sizes from events)
    uint64_t seq_cmds = 0;    ///< commands starting where a recent same-direction command ended (see sequential_share)
    uint64_t seq_scored = 0;  ///< commands that had a predecessor to compare with
    /// Share of commands in [0,1] that continue a stream; 0 when there is nothing to compare.
    double seq_share() const { return seq_scored ? double(seq_cmds) / double(seq_scored) : 0.0; }
};

/// A stream's issue instants compared with a Poisson process, two ways (docs/distill.md "Timing"), each robust to one
/// distortion of a submitter that does not run when its arrivals fall due (measured on fio's own
/// rate_process=poisson on this loaded VM):
///  - intervals, upper half: the excess of each interval over the median one. An exponential is memoryless, so that
///    excess is exponential with the same mean; the lower half is left out because an oversleeping submitter issues
///    the arrivals that fell due meanwhile back to back (28 % of the intervals under 50 µs in one trace);
///  - counts in windows of 20 mean intervals: Poisson counts have variance = mean (index of dispersion 1), and a delay
///    much shorter than a window moves few arrivals across its edges.
struct Arrivals {
    uint64_t n = 0;             ///< intervals measured (data commands - 1)
    double mean_ns = 0;         ///< mean interval: 1 / rate
    double median_ns = 0;       ///< median interval
    double excess_mean_ns = 0;  ///< mean of (interval − median) over the intervals >= the median
    double excess_cv = 0;       ///< their coefficient of variation (stddev / mean): 1 for an exponential
    /// Kolmogorov-Smirnov distance sup |F_n(x) − (1 − e^(−x/m))| between the excesses and the exponential of their
    /// mean m, in [0,1].
    double excess_ks = 1;
    uint64_t windows = 0;   ///< windows of 20 mean intervals in the span (the last, partial one left out)
    double dispersion = 0;  ///< variance / mean of the issues per window: 1 for a Poisson process
    /// KS distance between the per-window counts' empirical distribution and the Poisson distribution of their mean.
    double count_ks = 1;
};

/// Arrivals::windows are this many mean intervals long (about 20 arrivals each).
constexpr double kArrivalWindow = 20;

/// Arrivals of the issue instants `ts` (ns, ascending).
Arrivals arrival_stats(const std::vector<uint64_t>& ts);

/// What the trace says about the workload at one device. Times in ns (CLOCK_MONOTONIC), sizes in bytes.
struct Profile {
    std::string source;     ///< trace path
    std::string format;     ///< "kvio.events/1" or "kvio.trace/1"
    std::string dev, disk;  ///< "MAJ:MIN", name
    /// False for histogram input (kvio.trace/1): no command order, so no sequentiality, submitter threads,
    /// idle gaps or exact sizes (log2 bucket floors instead); the job says so.
    bool per_command = true;
    DirProfile read, write;
    uint64_t other_cmds = 0;         ///< flush / discard / other
    uint64_t flush_cmds = 0;         ///< of other_cmds: flushes (become fdatasync=)
    uint64_t discard_cmds = 0;       ///< of other_cmds: discards (secure erases included)
    uint64_t secure_erase_cmds = 0;  ///< of discard_cmds: secure erases (rwbs "DE")
    Dist discard_sizes;              ///< discard size in bytes -> discards
    uint64_t fua_writes = 0;         ///< writes with REQ_FUA (rwbs "WF"): O_SYNC/O_DSYNC writes on a device with FUA
    uint64_t preflush_writes = 0;    ///< writes with REQ_PREFLUSH (rwbs "FW"): a cache flush folded into the write
    /// Data-command arrivals (ts_issue to ts_issue): what the timing model is chosen from (docs/distill.md "Timing").
    Arrivals arrivals;

    // Concurrency at the device.
    Dist qd_at_issue;  ///< in-flight commands at each issue (this one included), from the issue/complete sweep
    Dist qd_time;      ///< in-flight count -> ns spent at that count while busy (>= 1), same sweep
    Dist qd_field;     ///< the kernel's `qd` field, when the trace has it
    uint32_t max_inflight = 0;
    uint64_t span_ns = 0;  ///< first issue -> last completion
    uint64_t busy_ns = 0;  ///< time with >= 1 command in flight
    uint64_t sum_d2c_ns = 0;
    std::vector<uint64_t> d2c_ns;  ///< every command's D2C, sorted ascending

    // Address range.
    uint64_t lba_lo_bytes = 0, lba_hi_bytes = 0;  ///< [lowest start, highest end) touched, bytes on the whole disk

    // Submitters.
    uint32_t distinct_tids = 0;    ///< 0 when the trace has no tids
    uint32_t concurrent_tids = 0;  ///< max submitting threads with overlapping activity

    // Idle gaps at the device (gaps >= kThinkGapNs between busy periods).
    std::vector<uint64_t> think_gaps_ns;  ///< sorted ascending
    uint64_t think_idle_ns = 0;           ///< total of think_gaps_ns
    /// The same gaps in time order, each with the commands issued since the previous one (or the trace's start).
    struct IdleGap {
        uint64_t ns = 0;
        uint64_t cmds_before = 0;
    };
    std::vector<IdleGap> idle_gaps;
    uint64_t cmds_after_idle = 0;  ///< commands issued after the last such gap (all of them when there is none)

    // Source engine hints.
    bool any_user_data = false, any_passthrough = false, any_nvme = false;

    // Trace health.
    uint64_t records = 0, filtered_out = 0, dropped = 0, unmatched_completes = 0, lost_completes = 0;
    bool has_summary = false;
    uint32_t nr_requests = 0;  ///< the device's tag depth when the trace recorded it (kvio.trace/1), else 0

    uint64_t cmds() const { return read.cmds + write.cmds; }
    /// Mean in-flight while busy: sum(D2C) / busy time (Little's law L = lambda * W over the busy time).
    double little_busy() const { return busy_ns ? double(sum_d2c_ns) / double(busy_ns) : 0.0; }
    /// IOPS over the span.
    double iops() const { return span_ns ? double(cmds() + other_cmds) * 1e9 / double(span_ns) : 0.0; }
    /// D2C quantile (nearest rank), ns; 0 when empty.
    double d2c_quantile(double q) const;
};

/// Gaps shorter than this are submission turnaround, not think time (100 µs).
constexpr uint64_t kThinkGapNs = 100'000;
/// A command continues a stream when it starts where one of the last kSeqWindow commands of its
/// direction ended (several threads or a queue deeper than 1 interleave their streams).
constexpr size_t kSeqWindow = 8;

/// Derives the profile of `t.cmds` (sorted by ts_issue). Throws kvio::Error when there are no
/// commands ("empty input") or no read/write commands.
Profile profile_events(const EventTrace& t);

/// Derives a coarser profile from a kvio.trace/1 document (`kvio trace --json`) for one device
/// (`dev`: "MAJ:MIN" or name; empty: the only one). Uses devices[].read/write {cmds,bytes} and the
/// histograms bssplit_read/bssplit_write (log2, bytes), qd_read/qd_write (linear, commands, at dispatch),
/// d2c_read/d2c_write (log2, ns) and lba_read/lba_write (linear) as `kvio trace --json` writes them, and the
/// device's nr_requests. Throws kvio::Error for a missing device, no commands, empty size histograms,
/// or d2c histograms counting far fewer completions than issued commands.
Profile profile_trace_json(const std::string& path, const std::string& dev);

/// Value at quantile q in [0,1] of a distribution (nearest rank); 0 when empty.
uint64_t dist_quantile(const Dist& d, double q);
/// Total count.
uint64_t dist_total(const Dist& d);

}  // namespace kvio::distiller
