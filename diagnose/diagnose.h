// A diagnosis from a trace alone: what a storage engineer would change, each finding with the figures it rests on.
// Rules and thresholds: docs/diagnose.md.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::diagnose {

/// One finding. `id` is one of: low_queue_depth, split_by_max_sectors, split_by_max_segments, page_cache_reads,
/// fsync_dominated_writes, small_write_amplification, unaligned_io, queue_wait, requeues, merged_small_io
/// (docs/diagnose.md, one section each; the two split ids share one).
struct Finding {
    std::string id;
    std::string device;      ///< disk name ("loop3", "nvme0n1"), "" for a finding about the processes' syscalls
    std::string op;          ///< "read", "write" or "" when both or neither
    std::string summary;     ///< one sentence with the measured figures
    std::string action;      ///< what to change
    nlohmann::json figures;  ///< the same figures by name (units in the names: _bytes, _ns, _bps, _pct)
};

/// What a diagnosis reads: a `kvio trace --json` summary and, when there is one, the same trace's --events file.
struct Inputs {
    nlohmann::json trace;  ///< kvio.trace/1 (docs/formats.md)
    std::string events;    ///< kvio.events/1 (JSONL, .zst) or kvio.events.bin/1 of the same trace; "" for none
    std::string trace_path = "the trace summary";  ///< the summary's file, for errors naming both files
};

/// Every finding the inputs support, in the order of docs/diagnose.md. Findings that need per-command records
/// (low_queue_depth, the chains of split_by_max_sectors, unaligned_io's commands) or syscall records
/// (page_cache_reads, small_write_amplification, unaligned_io's calls) are skipped without them. Throws kvio::Error
/// "FILE:LINE: field 'F': ..." for a malformed events file, and one naming both files when the events are not the
/// summary's trace (a device it does not trace, or another number of commands than it counted beyond the drops).
std::vector<Finding> diagnose(const Inputs& in);

/// {"schema":"kvio.diagnosis/1","findings":[{"id","device","op","summary","action","figures"},...]}.
nlohmann::json to_json(const std::vector<Finding>& findings);
/// Human text: a line per finding (`[id] device op: summary`) and its action indented below; "no findings" when none.
std::string to_text(const std::vector<Finding>& findings);

}  // namespace kvio::diagnose
