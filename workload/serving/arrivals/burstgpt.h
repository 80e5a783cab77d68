// BurstGPT traces for `kvio simulate --use-burst-trace` (docs/mlperf-benchmark.md, "Trace replay and special modes"):
// CSV files with a header naming at least `Timestamp` (s since the trace start), `Request tokens` and `Response tokens`
// (other columns, e.g. Model, Total tokens, Log Type, are read past). Strict: every row has the header's field count
// and valid numbers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvio::serving {

/// One trace row: arrival time and sizes.
struct BurstRow {
    double timestamp_s = 0;        ///< `Timestamp`, seconds (float, >= 0)
    uint32_t request_tokens = 0;   ///< `Request tokens` → the request's context
    uint32_t response_tokens = 0;  ///< `Response tokens` → tokens generated
};

/// The rows of every file, in file order (files in the order given).
struct BurstTrace {
    std::vector<std::string> files;
    std::vector<uint64_t> rows_per_file;
    std::vector<BurstRow> rows;
};

/// --burst-trace-path: a directory (its *.csv files, sorted by name), a glob pattern (glob(3), sorted), or one
/// file. Throws kvio::Error "--burst-trace-path P: ..." when nothing matches or a directory holds no .csv file.
std::vector<std::string> resolve_burst_trace_files(const std::string& path);

/// Reads one BurstGPT CSV file and appends its rows to `out`. Throws kvio::Error naming the place and the field:
/// "FILE:1: header lacks column 'Request tokens'", "FILE:LINE: field 'Response tokens': '12x' is not a
/// non-negative integer", "FILE:LINE: 5 fields, the header has 6", "FILE:LINE: empty row", "FILE: no rows".
void read_burst_trace_file(const std::string& file, BurstTrace& out);

/// resolve_burst_trace_files + read_burst_trace_file for each file.
BurstTrace load_burst_trace(const std::string& path);

}  // namespace kvio::serving
