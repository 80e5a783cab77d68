// Reading `kvio trace --events` (kvio.events/1, docs/formats.md) into device commands: the event model the
// distiller, replay and `kvio run` read traces through.
#pragma once
#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/events_reader.h"

namespace kvio {

/// Direction of a device command, as the `op` field names it.
using Op = kvio::IoOp;

/// "read", "write", "flush", "discard", "other".
inline const char* op_name(Op op) { return io_op_name(op); }

/// One completed device command (`"type":"cmd"` record). Times are CLOCK_MONOTONIC ns.
struct Cmd {
    uint64_t sector = 0;        ///< start, 512-byte units on the whole disk
    uint64_t bytes = 0;         ///< bytes transferred
    uint64_t ts_issue = 0;      ///< block_rq_issue (NVMe: setup)
    uint64_t ts_complete = 0;   ///< final block_rq_complete; 0 when the trace never saw it ("complete_lost")
    uint32_t qd = 0;            ///< kernel-side in-flight count at dispatch, this one included (0 = absent)
    uint32_t pid = 0, tid = 0;  ///< submitter, 0 when unknown
    Op op = Op::Other;
    bool has_user_data : 1 = false;  ///< io_uring SQE user_data was seen
    bool passthrough : 1 = false;    ///< `src` "nvme" with rwbs "N" (io_uring_cmd / ioctl passthrough)
    bool nvme : 1 = false;           ///< `src` "nvme"
    bool fua : 1 = false;            ///< rwbs 'F' after the op letter (REQ_FUA): a write the device made durable itself
    bool preflush : 1 = false;  ///< rwbs 'F' before the op letter (REQ_PREFLUSH): the device cache was flushed first
    bool secure_erase : 1 = false;  ///< rwbs "DE" (REQ_OP_SECURE_ERASE), op "discard"
    bool io_worker : 1 =
        false;  ///< submitted by an io_uring worker thread (comm iou-wrk-N / iou-sqp-N) of process `pid`
    /// False for a "complete_lost" record: size, op, sector and issue time are real, the completion is unknown.
    bool completion_seen() const { return ts_complete != 0; }
    /// When the command left the device as far as the trace knows: ts_complete, or ts_issue when not seen.
    uint64_t end_ts() const { return completion_seen() ? ts_complete : ts_issue; }
    /// D2C (ns); only meaningful when completion_seen().
    uint64_t d2c_ns() const { return ts_complete - ts_issue; }
    uint64_t end_sector() const { return sector + bytes / 512; }
};
static_assert(sizeof(Cmd) == 48, "10 M commands of a trace are held in memory: keep Cmd small");

/// Sets c.preflush, c.fua and c.secure_erase from a blktrace-style rwbs string ("FWFS": a preflushed FUA write).
void set_rwbs_flags(std::string_view rwbs, Cmd& c);

/// Which commands to keep. Empty / zero fields do not filter.
struct EventFilter {
    std::string dev;   ///< "MAJ:MIN" or disk name ("loop3"); empty: the only device in the trace
    uint32_t pid = 0;  ///< keep commands submitted by this pid
    std::string comm;  ///< keep commands whose submitter comm equals this
};

/// The commands of one device, sorted by ts_issue, and what the trace said about its own losses.
struct EventTrace {
    std::string path;
    std::string dev;        ///< "MAJ:MIN" of the selected device
    std::string disk;       ///< its name in the trace
    std::vector<Cmd> cmds;  ///< filtered, sorted by ts_issue
    uint64_t records = 0;   ///< cmd records on this device before the pid/comm filter
    uint64_t filtered_out = 0;
    bool has_summary = false;
    uint64_t summary_events = 0, dropped = 0, unmatched_completes = 0, negative_deltas = 0;
    uint64_t lost_completes =
        0;  ///< this device's cmd records without ts_complete ("complete_lost"): kept with ts_complete 0
    std::string format = "kvio.events/1";  ///< or "kvio.events.bin/1" for a binary capture
    std::string trace_id;  ///< the summary record's `trace_id` ("" without one: check_same_trace_id skips it)
};

/// An EventTrace of no commands with `t`'s path, device, disk and format, and a summary (a part of `t`, whose health
/// was checked on the whole).
EventTrace empty_like(const EventTrace& t);

/// Reads a kvio.events/1 file (through common/events_reader.h) and keeps the commands of one device that pass
/// `filter`, 48 bytes each. The file is in completion order; each command is inserted at its issue-order place
/// from the back (a stable sort by ts_issue costing O(commands in flight) per command); when a command lands
/// more than 4096 places back, the rest is sorted once at the end instead.
/// Syscall records are ignored. Throws kvio::Error "FILE:LINE: field 'F': ..." on records that break the format's
/// rules (kvio::EventsReader::next_checked, the same for every command), and a one-sentence error when the trace holds
/// several devices and `filter.dev` is empty, or when the requested device is absent. When `stop` is non-null and
/// becomes non-zero (a signal's number, kvio::StopSignal::flag()), throws kvio::Stopped "stopped by signal N while
/// loading PATH" at the next record.
EventTrace load_events(const std::string& path, const EventFilter& filter, const volatile sig_atomic_t* stop = nullptr);

/// What load_events and load_all_events throw when the trace holds no device command (of `filter.dev`, when set):
/// a caller for which an idle device is a result (an audit of a command that moved nothing) catches this one.
struct NoDeviceCommands : Error {
    using Error::Error;
};

/// Every device of the trace (ordered by "MAJ:MIN"), each as load_events() would return it; with `filter.dev` set,
/// only that one. The summary's counts (dropped, unmatched completions) are the whole file's, in every element.
std::vector<EventTrace> load_all_events(const std::string& path, const EventFilter& filter,
                                        const volatile sig_atomic_t* stop = nullptr);

}  // namespace kvio
