// report.html of `kvio run`: one self-contained page (inline SVG, inline CSS, no script, no network).
#pragma once
#include <string>

namespace kvio::report {

/// Renders OUT_DIR's run.json, trace.json (kvio.trace/1), events.jsonl (kvio.events/1), semantic.jsonl
/// (kvio.semantic/1), validate.json (kvio.validate/1), verify.json and job.fio into one HTML file at `path`:
/// sections #summary, #scores, #latency (D2C, Q2D, VFS, fsync, gaps), #sizes (bssplit), #qd, #lba (heatmap),
/// #timeline (object ops vs device commands), #job, #files. Throws kvio::Error when an input is unreadable.
void write_report(const std::string& out_dir, const std::string& path);

}  // namespace kvio::report
