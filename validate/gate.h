// Score thresholds for pipelines: `kvio validate --fail-below PCT --max-wape PCT` exits 1 when a score misses.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "validate/score.h"

namespace kvio::validate {

/// The thresholds; nullopt = not checked. Both in percent (0..100).
struct Gate {
    std::optional<double> fail_below_pct;  ///< exact-match % (exact_match / objects × 100) must be >= this
    std::optional<double> max_wape_pct;    ///< WAPE × 100 must be <= this
};

/// One sentence per missed threshold, saying which and by how much, e.g. "exact-match 62.50% (10/16) is below
/// --fail-below 90% by 27.50 points". No scored op, or a WAPE that is n/a (nothing measured), misses.
/// Empty when every given threshold holds.
std::vector<std::string> missed_thresholds(const Report& r, const Gate& g);

}  // namespace kvio::validate
