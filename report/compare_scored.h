// `kvio compare` with its fidelity line: replay's comparison of two captured streams, and B scored against A by the
// distiller's replay scores (a floor above both, so neither includes the other).
#pragma once
#include <string>

#include "replay/compare.h"

namespace kvio::report {

/// Loads device `dev_a` of `a` and `dev_b` of `b` (empty: the file's only device) once, compares them
/// (replay::compare_loaded) and fills Comparison::fidelity and fidelity_summary with distiller::score and
/// score_over_time of B against A, as `kvio distill --verify` scores a replay (docs/replay.md "Fidelity"). Throws
/// kvio::Error on unreadable or malformed input.
replay::Comparison compare_scored(const std::string& a, const std::string& dev_a, const std::string& b,
                                  const std::string& dev_b);

}  // namespace kvio::report
