// The referee: a capture and its replay side by side (`kvio compare A.jsonl B.jsonl`), each metric
// with the percentage difference of B from A.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "replay/stream.h"

namespace kvio::replay {

/// Metrics of one device stream's data commands (reads and writes with bytes > 0).
struct StreamStats {
    std::string path, dev, disk;
    uint64_t cmds = 0, reads = 0, writes = 0;
    uint64_t bytes = 0, read_bytes = 0, write_bytes = 0;
    double mean_bytes = 0;                    ///< bytes / cmds
    std::map<uint64_t, uint64_t> sizes;       ///< command size (bytes) -> count
    uint64_t duration_ns = 0;                 ///< first ts_issue to last ts_complete
    uint64_t d2c_p50_ns = 0, d2c_p99_ns = 0;  ///< nearest-rank percentiles of ts_complete - ts_issue
    uint64_t non_data = 0;                    ///< flush/discard/other/zero-byte commands, not counted above
};

/// Computes the metrics of `s`.
StreamStats stream_stats(const DeviceStream& s);

struct Comparison {
    StreamStats a, b;
    /// Order: positions i (in issue order, data commands only) where A's and B's command i have the same
    /// direction, size and offset; out of min(a.cmds, b.cmds).
    uint64_t same_position = 0, compared = 0;
    /// B scored against A exactly as `kvio distill --verify` scores a replay against its trace (whole-run size/depth
    /// TV, read share, phases and the worst of up to 20 windows by commands; docs/distill.md "Time-resolved scores"):
    /// filled by report::compare_scored, a floor above the distiller's peers; null when not scored or when either side
    /// has no read or write command.
    nlohmann::json fidelity;
    std::string fidelity_summary;  ///< distiller::summary_line of the same scores; empty with `fidelity` null
};

/// Loads device `dev_a` of `a` and `dev_b` of `b` (empty: the file's only device) and compares them.
/// Throws kvio::Error on unreadable or malformed input.
Comparison compare_streams(const std::string& a, const std::string& dev_a, const std::string& b,
                           const std::string& dev_b);

/// The comparison of two loaded streams (compare_streams without the loading; `fidelity` left null).
Comparison compare_loaded(const DeviceStream& a, const DeviceStream& b);

/// (b - a) / a × 100; 0 when both are 0, +inf shown as "n/a" by the printer when only a is 0.
double pct_diff(double a, double b);

/// A table: metric, A, B, difference in %; then the top 5 command sizes with their share on each side.
void print_comparison(std::ostream& os, const Comparison& c);

/// {"schema":"kvio.compare/1","a":{...},"b":{...},"diff_pct":{...},"order":{"same_position","compared"},
/// "fidelity":{...distill --verify's scores, "time_resolved":{...},"summary"} or null}.
nlohmann::ordered_json comparison_json(const Comparison& c);

}  // namespace kvio::replay
