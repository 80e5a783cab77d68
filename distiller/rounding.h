// Integer percentages that sum to exactly 100 (largest-remainder / Hamilton apportionment).
#pragma once
#include <cstdint>
#include <vector>

namespace kvio::distiller {

/// Apportions `total` (e.g. 100) among `counts` proportionally: each share is floor(total·c/N) plus one
/// for the entries with the largest remainders until the shares sum to `total` (ties: larger count, then
/// lower index). Returns all zeros when every count is 0. Shares are in the order of `counts`.
std::vector<uint32_t> largest_remainder(const std::vector<uint64_t>& counts, uint32_t total = 100);

}  // namespace kvio::distiller
