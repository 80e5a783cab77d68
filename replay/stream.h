// One device's command stream out of a kvio.events/1 capture, as replay and compare use it: read with
// the distiller's reader (one reader per format), one src per device, in issue order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/event_trace.h"

namespace kvio::replay {

/// The commands of one device of a capture. Times CLOCK_MONOTONIC ns, offsets bytes on the whole disk.
struct DeviceStream {
    std::string path;             ///< the events file
    std::string dev, disk;        ///< "MAJ:MIN" and name as the trace wrote them
    bool nvme_rows = false;       ///< the device had src "nvme" rows: only those are kept
    std::vector<kvio::Cmd> cmds;  ///< one src, sorted by ts_issue (all ops, data or not)
    uint64_t other_src_rows = 0;  ///< rows dropped because the other src describes the same commands
    uint64_t dropped = 0;         ///< the trace summary's `dropped` (events the tracer lost)
};

/// Reads device `dev` ("MAJ:MIN" or disk name; empty: the trace's only device) of `path`. On NVMe
/// traces each command appears twice (block and nvme rows): the nvme rows are kept when the device has
/// any, else the block rows. Throws kvio::Error (FILE:LINE: field ...) on malformed input, and when `dev`
/// is empty but the trace holds several devices (naming them and `choose_with`, the caller's option).
DeviceStream load_stream(const std::string& path, const std::string& dev,
                         const std::string& choose_with = "--map-dev MAJ:MIN=PATH");

/// True for a read or write with bytes > 0 (what replay reissues).
bool is_data(const kvio::Cmd& c);

}  // namespace kvio::replay
