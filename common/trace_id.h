// A trace's identity on both its outputs: the readers given a trace's events and its summary as a pair check it.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace kvio {

/// Refuses `events_path` (whose summary record carried `events_id`, "" when none) and the kvio.trace/1 document
/// `summary` read from `summary_path` as one trace when both carry a `trace_id` and the two differ
/// (check_same_trace_id, common/events_reader.h: "EVENTS and SUMMARY are not the same trace: ..."). A `trace_id` in
/// `summary` that is not a string is "SUMMARY: field 'trace_id': expected a string" (docs/formats.md).
void check_same_trace(const std::string& events_path, std::string_view events_id, const std::string& summary_path,
                      const nlohmann::json& summary);

}  // namespace kvio
