#include "workload/serving/results/drain_report.h"

#include <cstdio>

namespace kvio::serving {

namespace {
/// The tier names of the per-tier arrays' slots (the Tier enum's order, cache.h).
constexpr const char* kSlotNames[kTierSlots] = {"gpu", "cpu", "storage", "remote"};

uint64_t since(uint64_t now, uint64_t then) { return now >= then ? now - then : 0; }
}  // namespace

std::string drain_line(uint64_t left, double waited_s, const CacheStats& at_stop, const CacheStats& now) {
    std::string line = "simulate: draining: " + std::to_string(left) + " requests in flight after " +
                       std::to_string(int64_t(waited_s)) + " s; since the stop:";
    bool first = true;
    for (int t = 0; t < kTierSlots; ++t) {
        if (!now.tier_present[t]) continue;
        const uint64_t w = since(now.tier_bytes_written[t], at_stop.tier_bytes_written[t]);
        const uint64_t r = since(now.tier_bytes_read[t], at_stop.tier_bytes_read[t]);
        line += std::string(first ? " " : "; ") + kSlotNames[t] + " tier ";
        first = false;
        if (w + r == 0) {
            line += "nothing moved";
            continue;
        }
        char b[96];
        std::snprintf(b, sizeof b, "%.2f GB written, %.2f GB read", double(w) / 1e9, double(r) / 1e9);
        line += b;
    }
    if (first) line += " no tier";
    return line;
}

}  // namespace kvio::serving
