// `kvio replay --io-trace`: executes the storage-tier operations of an MLPerf KV-cache io-trace-log (replay/io_trace.h)
// for real through kvio's engines: one object per Key, a Write stores it (creating or overwriting), a Read loads
// back what the last Write stored (verified against the pattern), on the trace's schedule or as fast as possible,
// with a kvio.semantic/1 trace that `kvio validate` scores.
#pragma once
#include <csignal>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "replay/io_trace.h"
#include "replay/schedule.h"
#include "workload/gen.h"

namespace kvio::replay {

struct IoTraceReplayOptions {
    std::string io_trace;          ///< the CSV (.zst accepted)
    std::string target;            ///< block device, regular file (slots) or directory (files: one file per key)
    uint8_t tiers = 1u << 2;       ///< bit k: replay Tier-k rows (default Tier-2, the storage tier)
    Timing timing;                 ///< asis: rows at their recorded offsets; afap/fast; scale=F
    std::string engine = "posix";  ///< posix | io_uring
    uint32_t qd = 1;               ///< transfers in flight (ops overlap when > 1)
    uint64_t max_io_bytes = 0;     ///< 0: workload::default_max_io(target)
    std::string semantic_path;     ///< kvio.semantic/1 of the run, empty = none
    bool force = false;            ///< overwrite data in the first MiB or in the slots (never a mounted device)
    std::ostream* progress = nullptr;
    const volatile sig_atomic_t* stop = nullptr;  ///< see workload::GenOptions::stop
};

/// Parses "--tiers" values: a comma list of 0, 1, 2 (or Tier-0, ...). Throws kvio::Error.
uint8_t parse_tiers(const std::string& s);

/// The ops an io-trace becomes on a target of geometry `d` (lba_bytes, block_align, layout, header_bytes set
/// by the caller; slots: data_base too). Pure: no I/O.
struct IoTracePlan {
    std::vector<workload::ObjectOp> ops;  ///< in row order; trace_id = position + 1; object_id = key's slot index
    std::vector<uint64_t> due_ns;         ///< per op: start offset from the replay start (Timing applied), ns
    std::vector<TracePhase> phase;        ///< per op
    std::vector<uint64_t> rows;           ///< per op: the CSV line
    std::vector<std::pair<uint64_t, uint64_t>> slots;  ///< per object: {offset, bytes} (slots layout)
    uint64_t objects = 0;                              ///< distinct keys written
    uint64_t need_bytes = 0;                           ///< slots: end of the last slot; files: Σ object io_bytes
    uint64_t largest_payload = 0;
    uint64_t rows_other_tiers = 0;     ///< rows of tiers not replayed
    uint64_t reads_never_written = 0;  ///< Reads of a key no earlier replayed Write stored: skipped
    uint64_t reads_resized = 0;        ///< Reads whose size differs from the stored object's: read the stored size
    uint64_t span_ns = 0;              ///< first to last replayed row's Timestamp
};

/// Builds the plan. Each written key gets one slot sized for its largest Write (header + payload rounded up to
/// lba_bytes, the whole rounded up to block_align), slots in order of first Write from d.data_base; files layout:
/// object file kvobj-<id>.bin. A store writes the row's bytes; a load reads the bytes of the key's latest store.
/// Timestamps earlier than the first replayed row's (rows are logged out of order by µs) start at once.
IoTracePlan plan_io_trace(const IoTrace& trace, uint8_t tiers, const workload::DeviceGeometry& d, const Timing& timing);

/// Latency of one (phase, direction) class of ops, ns.
struct PhaseStats {
    uint64_t ops = 0, bytes = 0, errors = 0;
    uint64_t p50_ns = 0, p95_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;  ///< nearest rank of ts - ts_start
};

struct IoTraceReplayResult {
    IoTracePlan plan;
    workload::DeviceGeometry device;
    std::vector<std::string> notes;
    uint64_t checked_bytes = 0;
    workload::GenSummary summary;
    PhaseStats phases[3][2];    ///< [TracePhase][0 store, 1 load]
    uint64_t late_ns_max = 0;   ///< worst op start after its due time (asis/scale)
    uint64_t late_ops_1ms = 0;  ///< ops that started more than 1 ms late
};

/// Reads the trace, plans it, checks the target (workload::check_device_safe; the slots about to be written zero or
/// kvio's, unless force; room), grows a regular file, runs it (workload::run_ops) and collects per-phase latencies.
/// Throws kvio::Error before any byte is written for refusals and for malformed input (FILE:LINE: field ...).
IoTraceReplayResult replay_io_trace(const IoTraceReplayOptions& o);

/// What was replayed and skipped, throughput per direction, per-phase latency percentiles, the schedule's lateness.
void print_io_trace_replay(std::ostream& os, const IoTraceReplayOptions& o, const IoTraceReplayResult& r);

}  // namespace kvio::replay
