// "1 phase", "2 phases": a count and its noun, for console lines.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kvio {

/// `n` and `one` when n is 1, else `n` and `many` (default: `one` + "s"): count_noun(1, "phase") is "1 phase",
/// count_noun(3, "phase") "3 phases", count_noun(2, "I/O", "I/Os") "2 I/Os".
inline std::string count_noun(uint64_t n, std::string_view one, std::string_view many = {}) {
    std::string s = std::to_string(n) + " ";
    if (n == 1) return s.append(one);
    return many.empty() ? s.append(one).append("s") : s.append(many);
}

}  // namespace kvio
