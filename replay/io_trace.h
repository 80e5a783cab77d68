// The MLPerf Storage KV-cache benchmark's `--io-trace-log` CSV (also what `kvio simulate --io-trace-log` writes,
// workload/serving/io_trace_log.h): header `Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase`, one row per
// cache operation. A strict reader: every row is checked, the first bad one is an error naming FILE:LINE and field.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvio::replay {

enum class TracePhase : uint8_t { Prefill, Decode, Evict };
/// "Prefill" | "Decode" | "Evict".
const char* trace_phase_name(TracePhase p);

/// One row. `ts_ns` is the Timestamp (Unix epoch seconds, CLOCK_REALTIME, up to 9 decimals; the benchmark writes
/// 6) in ns, exactly (no floating point).
struct IoTraceRow {
    uint64_t ts_ns = 0;
    bool write = false;  ///< Operation Write (else Read)
    uint64_t bytes = 0;  ///< Object_Size_Bytes
    uint8_t tier = 0;    ///< Tier-0 (GPU), Tier-1 (CPU), Tier-2 (storage), Tier-3 (kvio's remote tier)
    TracePhase phase = TracePhase::Prefill;
    uint32_t key = 0;   ///< index into IoTrace::keys
    uint64_t line = 0;  ///< line number in the file (1 = header)
};

struct IoTrace {
    std::string path;
    std::vector<IoTraceRow> rows;   ///< in file order
    std::vector<std::string> keys;  ///< distinct keys, in order of first appearance
};

/// Parses `text` (the whole file; `path` names it in errors). Rules: the first line is exactly the header;
/// every other line has six comma-separated fields (a field may be double-quoted RFC 4180 style, `""` for a
/// quote; no line breaks inside); Timestamp digits with an optional '.' and 1..9 decimal digits; Operation
/// `Write` | `Read`; Object_Size_Bytes a decimal integer 1 .. 2^40; Tier `Tier-0` | `Tier-1` | `Tier-2`;
/// Key non-empty, at most 4096 bytes; Phase `Prefill` | `Decode` | `Evict`. CRLF line ends and a last line
/// without newline are accepted; blank lines are errors. Throws kvio::Error "FILE:LINE: field 'NAME': ...".
IoTrace parse_io_trace(std::string_view text, const std::string& path);

/// Reads `path` (plain or zstd-compressed, through common/input_file.h) and parses it.
IoTrace read_io_trace(const std::string& path);

}  // namespace kvio::replay
