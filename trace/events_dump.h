// kvio.events.bin/1 (common/events_bin.h) back to kvio.events/1 JSONL, as `kvio dump` prints it.
#pragma once
#include <string>

namespace kvio::trace {

/// Writes the capture `in` as kvio.events/1 JSONL to the file `out` ("" = stdout): for every record the bytes
/// the JSONL writer (EventWriter, EventsFormat::Jsonl) would have written, with device names and LBA sizes from
/// the capture's device records (never this machine's sysfs). Throws kvio::Error naming the file and the record
/// for an unreadable or truncated capture, or naming `out` for a failed write.
void dump_capture(const std::string& in, const std::string& out);

}  // namespace kvio::trace
