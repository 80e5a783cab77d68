#include "report/report_diagnosis.h"

#include <sstream>

#include "report/svg_chart.h"

namespace kvio::report {

std::string diagnosis_section(const std::vector<diagnose::Finding>& findings, bool with_events) {
    std::ostringstream h;
    h << "<section id=\"diagnosis\"><h2>Diagnosis</h2><p class=\"note\">From the trace alone (docs/diagnose.md): "
         "each finding with the figures it rests on and what to change. "
      << (with_events ? "Per-command records were read (queue depth over time, split runs, and the page-cache share "
                        "when syscall records are present)."
                      : "Only the summary was read: the queue-depth, split-run and page-cache rules need the "
                        "trace's --events file.")
      << "</p>";
    if (findings.empty()) return h.str() + "<p id=\"no-findings\">No finding.</p></section>\n";
    h << "<table id=\"findings\"><tr><th>finding</th><th>device</th><th>op</th><th>measured</th><th>change</th></tr>";
    for (const auto& f : findings)
        h << "<tr><td>" << html_escape(f.id) << "</td><td>" << html_escape(f.device) << "</td><td>" << html_escape(f.op)
          << "</td><td style=\"text-align:left\">" << html_escape(f.summary) << "</td><td style=\"text-align:left\">"
          << html_escape(f.action) << "</td></tr>";
    h << "</table></section>\n";
    return h.str();
}

}  // namespace kvio::report
