// `kvio replay --events`: device-level replay of a captured kvio.events/1 stream, as btreplay does —
// same offsets (sector × 512, relative to the target's start), sizes, directions and issue order, with the
// recorded inter-arrival times, as fast as possible, or scaled; O_DIRECT through a workload engine.
#pragma once
#include <csignal>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "replay/schedule.h"

namespace kvio::replay {

struct EventsOptions {
    std::string events;  ///< kvio.events/1 JSONL
    std::string target;  ///< target of the trace's only device (when `maps` is empty)
    /// Source device ("MAJ:MIN" or disk name) -> target path; when given, only these devices are replayed.
    std::vector<std::pair<std::string, std::string>> maps;
    Timing timing;
    std::string engine =
        "io_uring";        ///< io_uring: captured overlap kept (schedule.h Dependencies); posix: one at a time
    uint32_t max_qd = 64;  ///< cap on commands in flight (and on I/O buffers)
    bool force = false;    ///< overwrite non-zero bytes where writes land (never a mounted device)
    /// When it becomes non-zero (a stop signal's number): no more commands are issued, those in flight complete, and
    /// the summary says how many of the commands were replayed (stopped_by). nullptr: never.
    const volatile sig_atomic_t* stop = nullptr;
};

/// One replayed device.
struct DeviceReplay {
    std::string source_dev, source_disk, target;
    bool nvme_rows = false;
    uint64_t target_bytes = 0;   ///< capacity used for wrapping (a regular file is grown first)
    uint64_t grown_to = 0;       ///< regular file: new size when it was grown, else 0
    uint64_t wrapped = 0;        ///< commands whose offset was wrapped (target smaller than the source)
    uint64_t checked_bytes = 0;  ///< bytes verified zero before writing (0 with --force)
    /// Block-device target: requests its disk completed during the replay and bios merged into others (the
    /// device's /sys/.../stat, read before and after; other I/O to the device counts too). The block layer
    /// merges adjacent commands, so the device can see fewer than were submitted (docs/replay.md). A regular file's
    /// disk is shared with its filesystem: not counted (device_counted false).
    bool device_counted = false;
    uint64_t device_ios = 0, device_merges = 0;
};

struct EventsSummary {
    std::vector<DeviceReplay> devices;
    uint64_t source_rows = 0;        ///< command rows of the replayed devices (one src)
    uint64_t other_src_rows = 0;     ///< rows of the other src, describing the same commands (NVMe traces)
    uint64_t skipped_non_data = 0;   ///< flush, discard, other, zero-byte
    uint64_t skipped_unaligned = 0;  ///< offset or size not a multiple of the target's logical block size
    uint64_t skipped_too_large = 0;  ///< larger than the whole target
    uint64_t replayed = 0, reads = 0, writes = 0, read_bytes = 0, write_bytes = 0;
    uint64_t errors = 0;
    std::string first_error;
    uint32_t depth = 0;             ///< commands in flight at most (min(captured overlap, max_qd); posix 1)
    uint32_t captured_overlap = 0;  ///< captured in-flight maximum of the replayed commands
    uint64_t source_span_ns = 0;    ///< first to last captured ts_issue
    /// First to last captured ts_issue of the commands issued (= source_span_ns unless stopped): the part of the
    /// capture the replay's span compares with.
    uint64_t source_span_issued_ns = 0;
    uint64_t replay_span_ns = 0;  ///< first to last replay submission
    uint64_t elapsed_ns = 0;      ///< whole replay, first submission to last completion
    uint64_t late_ns_max = 0;     ///< worst lateness of a submission against its schedule
    uint64_t to_replay = 0;       ///< commands the replay was to issue (replayed == to_replay unless stopped)
    int stopped_by = 0;           ///< the stop signal that ended the replay early, else 0
};

/// Runs the replay. Throws kvio::Error before any byte is written for refusals: missing target, mounted
/// or in-use device, data in its first MiB or where writes land (unless force), an unknown device.
EventsSummary replay_events(const EventsOptions& o);

/// Prints what was replayed, skipped and wrapped, and the timing.
void print_events_summary(std::ostream& os, const EventsOptions& o, const EventsSummary& s);

}  // namespace kvio::replay
