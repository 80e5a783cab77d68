// The figures of one fio run (fio's JSON output) and of the device under it (kvio trace's kvio.trace/1), and their
// spread over rounds.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::drives {

/// One direction of a phase, from fio's JSON (`read` / `write` of a job entry). Latency: fio's completion latency
/// (`clat_ns`), ns; rates per second of the phase's runtime.
struct DirFigures {
    double iops = 0;
    double mb_s = 0;  ///< 10^6 bytes per second (fio's `bw_bytes`)
    uint64_t io_bytes = 0;
    uint64_t ios = 0;
    double clat_p50 = 0, clat_p90 = 0, clat_p99 = 0, clat_p999 = 0;
    /// fio's completion latency percentiles (percent, ns), ascending: the points of a CDF.
    std::vector<std::pair<double, double>> clat_cdf;
};

/// One phase (a job name of the job file; numjobs clones merged) or the whole run.
struct PhaseFigures {
    std::string name;
    double runtime_s = 0;
    /// The section ran on fio's `null` engine (the distiller's idle sections: docs/distill.md): its I/O never
    /// reached a device, so no device rate is taken from it.
    bool null_engine = false;
    DirFigures read, write;
};

/// A whole fio run: its phases in the order fio printed them and the total. The total's rates are its bytes and
/// I/Os over the sum of the phases' runtimes (phases run one after another, as the distiller's stonewalled phases
/// do; for sections that run side by side, read the phases), its latency that of the phase with the most I/Os of
/// that direction.
struct FioRun {
    std::vector<PhaseFigures> phases;
    PhaseFigures total;
    std::string fio_version;
    std::string host;  ///< fio's `hostname` of a client run; empty locally
    /// Throughput over time from fio's bandwidth logs (parse_bw_logs): [t_s since fio started, read MB/s, write
    /// MB/s] per window; empty when the run wrote no log (a remote run).
    std::vector<std::vector<double>> bw_timeline;
};

/// Sums fio bandwidth logs into windows of `window_ms` from `origin_ms`. Each text is one job's log written with
/// `log_avg_msec=window_ms` and `log_unix_epoch=1`: lines "time_ms, KiB/s, ddir, bs, offset[, prio]", time in ms
/// since the epoch (so stonewalled jobs, each logging from its own start, share one clock), ddir 0 read, 1 write,
/// others skipped. A sample is fio's mean rate since that job's previous sample of its direction (the first: over one
/// window before it), so its bytes (KiB/s × 1024 × its span) are spread over the windows that span overlaps.
/// Returns [t_s, read MB/s, write MB/s] per window (t_s: the window's end after `origin_ms`; MB = 10^6 bytes, as
/// DirFigures::mb_s) from the first to the last window holding bytes. Throws kvio::Error naming `source` on a line
/// that is not numbers.
std::vector<std::vector<double>> parse_bw_logs(const std::vector<std::string>& texts, int window_ms, double origin_ms,
                                               const std::string& source);

/// Caps a timeline from parse_bw_logs at what fio moved: when a direction's windows hold more than `moved_bytes[d]`
/// (fio's JSON io_bytes, d 0 read, 1 write), that direction's MB/s are scaled down to it; a direction holding less
/// (fio leaves a job's last windows unlogged) is left as logged. `window_ms` is the windows' width. An over-count
/// happens because fio logs the unweighted mean of the rate samples inside a log window: after a stall a throttled
/// job catches up in short fast samples that count as much as the long slow one (docs/drives.md). Returns the factor
/// applied per direction (1 when none).
std::array<double, 2> cap_bw_timeline(std::vector<std::vector<double>>& timeline, const uint64_t moved_bytes[2],
                                      int window_ms);

/// Reads fio's `--output-format=json` document (local `jobs` or client `client_stats`; the "All clients" summary is
/// skipped). `source` names it in errors. Throws kvio::Error when it holds no job or a job reports an error.
FioRun parse_fio_json(const nlohmann::json& j, const std::string& source);

/// Device-side figures of one run from kvio.trace/1 (docs/formats.md): D2C and Q2D percentiles per direction (ns,
/// interpolated in their log2 bucket) and the mean queue depth at dispatch (`qd_read`/`qd_write`). A duty-cycled
/// trace (its "duty" object, trace/duty.h): the percentiles from its windows; commands, bytes and the mean depth (the
/// requests of a direction in flight while the disk was busy, Little's law) from the disk's stat file, whole trace.
struct DeviceFigures {
    bool present = false;
    std::string disk;
    double d2c_read_p50 = 0, d2c_read_p99 = 0, d2c_read_p999 = 0;
    double d2c_write_p50 = 0, d2c_write_p99 = 0, d2c_write_p999 = 0;
    double q2d_read_p50 = 0, q2d_read_p99 = 0, q2d_write_p50 = 0, q2d_write_p99 = 0;
    double qd_read_mean = 0, qd_write_mean = 0;
    uint64_t read_cmds = 0, write_cmds = 0, read_bytes = 0, write_bytes = 0;
    double traced_share = 1;  ///< commands the histograms hold / the disk's commands (duty-cycled: below 1)
};

/// The device named `disk` in a kvio.trace/1 document; `present` false when the trace has no such device.
DeviceFigures parse_trace_json(const nlohmann::json& j, const std::string& disk);

/// min / median / max of one figure over rounds (median: the middle value, the mean of the two middle ones for an
/// even count). All zero for no values.
struct Spread {
    double min = 0, median = 0, max = 0;
    size_t n = 0;
};
Spread spread_of(std::vector<double> v);
nlohmann::json spread_json(const Spread& s);

/// The verdict between two targets on one figure: `a` ranked before `b` by median; `pct` how much better a's median
/// is (throughput: a/b − 1; latency: b/a − 1, in %); `separated` when every round of a beats every round of b.
struct Verdict {
    std::string a, b;
    double pct = 0;
    bool separated = false;
    std::string text;  ///< "A faster than B by X % (rounds don't overlap)" or "A vs B: inside noise (...)"
};
/// Ranks by median (higher first when `higher_is_better`) and compares each target with the next. `figure` names
/// the figure in the text ("MB/s").
std::vector<Verdict> rank_and_compare(const std::vector<std::pair<std::string, Spread>>& by_target,
                                      bool higher_is_better, const std::string& figure);

/// The probability that n rounds of one drive and m of another of equal speed come out with no overlap (either
/// way): 2 / C(n+m, n) for continuous figures (2 and 2 rounds: 1/3; 3 and 3: 1/10; 5 and 5: 1/126). The verdict
/// says it beside "rounds don't overlap" (docs/drives.md, "The verdict").
double separation_by_chance(size_t n, size_t m);

/// Bytes/s of one direction of `f` while the job moved it: its bytes over the time the phases that moved any spent
/// on it (each phase's io_bytes over its bw_bytes), so a stonewalled phase of the other direction does not dilute
/// it; the distiller's idle sections (null_engine) are left out. 0 when no phase moved that direction.
double moving_rate(const FioRun& f, bool write);

}  // namespace kvio::drives
