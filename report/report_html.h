// report.html of `kvio run`: one self-contained page (inline SVG, inline CSS, no script, no network).
#pragma once
#include <string>
#include <vector>

#include "diagnose/diagnose.h"

namespace kvio::report {

/// Renders OUT_DIR's run.json, trace.json (kvio.trace/1), events.jsonl (kvio.events/1), semantic.jsonl
/// (kvio.semantic/1), validate.json (kvio.validate/1), verify.json and job.fio into one HTML file at `path`:
/// sections #summary, #scores, #latency (D2C, Q2D, VFS, fsync, gaps), #sizes (bssplit), #qd, #lba (heatmap),
/// #breakdown (with --breakdown stages), #diagnosis, #timeline (object ops vs device commands), #job, #files. Throws
/// kvio::Error when an input is unreadable.
void write_report(const std::string& out_dir, const std::string& path);

/// What `kvio report TRACE.json` renders from any `kvio trace --json` summary.
struct TraceReportInputs {
    std::string trace_json;  ///< kvio.trace/1 (docs/formats.md)
    std::string out;         ///< the HTML file, written to a temporary name and renamed
    std::string events;      ///< the same trace's --events file (kvio.events/1 or capture), "" for none
};

/// Renders `in.trace_json` into one self-contained HTML file: #summary (kernel, duration, losses, per device
/// commands, bytes and limits), #diagnosis (diagnose/diagnose.h, with `in.events` when given), per busy device its
/// latency (D2C, Q2D; VFS, fsync and gaps once), command sizes and queue depth, and #breakdown when the trace has
/// --breakdown stages. Throws kvio::Error when the input is unreadable or not kvio.trace/1, or the output cannot be
/// written. Returns the diagnosis' findings.
std::vector<diagnose::Finding> write_trace_report(const TraceReportInputs& in);

}  // namespace kvio::report
