// drives.html: kvio.drives/1 as one self-contained page (no script, no network), like report.html.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::drives {

/// The page for a kvio.drives/1 document: per load mode the table (median of each figure, the best value per
/// column marked), the verdicts, and the completion-latency CDF per drive and direction (fio's percentiles of the
/// median round).
std::string drives_html(const nlohmann::json& drives);

}  // namespace kvio::drives
