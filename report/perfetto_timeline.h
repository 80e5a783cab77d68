// A trace as a timeline for Perfetto (ui.perfetto.dev) and chrome://tracing: the Chrome JSON trace-event format
// ("JSON Object Format": {"traceEvents":[...]}; ts and dur in microseconds), written by `kvio trace --perfetto`,
// `kvio dump --perfetto` and `kvio run` (OUT/timeline.json).
//
// Tracks (a "process" groups them in the UI):
//   - one process per device ("device loop3"), or per NVMe queue ("device nvme0n1 q3"; the block-layer rows of an
//     NVMe disk get "device nvme0n1 (block layer)"): every command record is one complete slice ("X") from issue to
//     completion, named "<op> <size>" ("write 128 KiB"), args sector (block) or slba/nlb (nvme), bytes, qd, pid, tid,
//     comm, user_data, rwbs, d2c_ns. Commands in flight together cannot share one thread (slices on a thread must
//     nest), so each device's commands are laid out on slots: slot k holds commands that never overlap in time,
//     and there are as many slots as commands were ever in flight at once. A command whose completion was not seen
//     (complete_lost) is a slice of duration 0 with args.complete_lost.
//   - one thread per submitting thread (its real pid/tid, named by comm) with its syscalls (`kvio trace --syscalls`
//     records) as slices named by the syscall, args fd, ret, offset, count.
//   - with a kvio.semantic/1 file: process "object ops" with each op as a slice "store obj N" / "load obj N" (slots as
//     above), and a flow arrow (flow events "s" at the op's start, "f" with "bp":"e" at the command's issue; one id
//     each) from the op to every command `kvio validate`'s join attributed to it (validate::Options::on_command).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvio::report {

struct TimelineOptions {
    std::string events;      ///< kvio.events/1 JSONL or a kvio.events.bin/1 capture
    std::string semantic;    ///< kvio.semantic/1 JSONL; "" = no object ops, no flows
    std::string record;      ///< optional record manifest for the join's geometry (kvio gen --record)
    std::string trace_json;  ///< optional kvio.trace/1 summary for the join's geometry (max_sectors_kb)
    std::string out;         ///< the timeline file (JSON; a name ending in .zst: zstd-compressed, one frame)
};

/// What was written.
struct TimelineStats {
    uint64_t commands = 0;       ///< command slices (= cmd records in the events file)
    uint64_t syscalls = 0;       ///< syscall slices
    uint64_t ops = 0;            ///< object op slices
    uint64_t flows = 0;          ///< op -> command flow arrows
    uint64_t device_tracks = 0;  ///< device (or NVMe queue) processes
    uint64_t threads = 0;        ///< submitting threads with syscalls
    uint64_t max_slots = 0;      ///< most slots one device needed (its peak concurrency)
    /// Ops but no flows: why the join attributed nothing (validate's sentences: e.g. the ops' device and the devices
    /// the commands are on); empty otherwise.
    std::vector<std::string> warnings;
};

/// Reads `o.events` (and `o.semantic`), writes `o.out`. Timestamps are relative to the earliest one in the inputs
/// (CLOCK_MONOTONIC ns; its value is otherData.t0_ns), written in µs with ns resolution (3 decimals).
/// Throws kvio::Error naming the file (FILE:LINE: field ...) on unreadable or malformed input, or on a failed write.
TimelineStats write_perfetto(const TimelineOptions& o);

}  // namespace kvio::report
