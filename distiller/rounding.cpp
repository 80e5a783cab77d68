#include "distiller/rounding.h"

#include <algorithm>
#include <numeric>

namespace kvio::distiller {

std::vector<uint32_t> largest_remainder(const std::vector<uint64_t>& counts, uint32_t total) {
    std::vector<uint32_t> share(counts.size(), 0);
    unsigned __int128 n = 0;
    for (uint64_t c : counts) n += c;
    if (n == 0) return share;
    std::vector<unsigned __int128> rem(counts.size());
    uint32_t given = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        unsigned __int128 scaled = (unsigned __int128)counts[i] * total;
        share[i] = uint32_t(scaled / n);
        rem[i] = scaled % n;
        given += share[i];
    }
    std::vector<size_t> order(counts.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (rem[a] != rem[b]) return rem[a] > rem[b];
        return counts[a] > counts[b];
    });
    for (size_t k = 0; given < total && k < order.size(); ++k, ++given) ++share[order[k]];
    return share;
}

}  // namespace kvio::distiller
