// The diagnosis section of report.html (diagnose/diagnose.h's findings).
#pragma once
#include <string>
#include <vector>

#include "diagnose/diagnose.h"

namespace kvio::report {

/// `<section id="diagnosis">`: a table of the findings (id, device, direction, what was measured, what to change)
/// or a line saying none was found and which inputs the rules had (`with_events`: per-command records).
std::string diagnosis_section(const std::vector<diagnose::Finding>& findings, bool with_events);

}  // namespace kvio::report
