// The records of a kvio.events.bin/1 capture (common/events_bin.h) decoded once, for every userspace reader of
// captures: `kvio dump` (JSONL) and the Perfetto timeline.
#pragma once
#include <functional>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/events_bin.h"
#include "trace/event_format.h"

namespace kvio::trace {

/// What each kind of record is handed to (an empty function skips that kind). Device records are not handed on:
/// they fill the DevCache a command is decoded with (the capture's facts, never this machine's sysfs).
struct CaptureVisitor {
    /// A command and its file parts (the capture's Files record before it; empty: none).
    std::function<void(const kvio_cmd_event&, DevCache&, std::span<const kvio_file_part>)> cmd;
    std::function<void(const kvio_syscall_event&)> syscall;
    std::function<void(const kvio_stages_event&, DevCache&)> stages;
    /// A json record (the summary, stop notes): its text, one JSON object on one line, and the parsed object.
    std::function<void(std::string_view text, const nlohmann::json&)> json;
};

/// Reads the records of `r` (opened on `path`) in order and hands each to `v`. Throws kvio::Error
/// "PATH: record N at byte B: a json record that is not one JSON object", the Reader's errors for a damaged or cut
/// off capture, or what a visitor throws; the records before the damage were handed on.
void visit_capture(evbin::Reader& r, const std::string& path, const CaptureVisitor& v);

}  // namespace kvio::trace
