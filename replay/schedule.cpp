#include "replay/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "common/error.h"

namespace kvio::replay {

Timing parse_timing(const std::string& s) {
    Timing t;
    if (s == "asis") return t;
    if (s == "afap" || s == "fast") {  // fast: the io-trace spelling
        t.mode = Timing::Mode::Afap;
        t.factor = 0;
        return t;
    }
    if (s.rfind("scale=", 0) == 0) {
        size_t used = 0;
        double f = 0;
        try {
            f = std::stod(s.substr(6), &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != s.size() - 6 || !(f > 0) || !std::isfinite(f))
            throw Error("--timing " + s + ": scale=F needs a positive number F (recorded gaps are multiplied by F)");
        t.mode = Timing::Mode::Scale;
        t.factor = f;
        return t;
    }
    throw Error("--timing " + s + ": expected asis, afap (or fast) or scale=F");
}

std::string timing_name(const Timing& t) {
    if (t.mode == Timing::Mode::AsIs) return "asis";
    if (t.mode == Timing::Mode::Afap) return "afap";
    char b[48];
    std::snprintf(b, sizeof b, "scale=%g", t.factor);
    return b;
}

std::optional<uint64_t> map_offset(uint64_t off, uint64_t len, uint64_t target_bytes, uint64_t align) {
    if (align == 0) align = 512;
    const uint64_t w = target_bytes / align * align;
    if (len > w) return std::nullopt;
    if (off + len <= target_bytes) return off;
    uint64_t o = off % w;
    if (o + len > w) o = 0;
    return o;
}

uint64_t scheduled_ns(uint64_t ts_issue, uint64_t first_ts_issue, const Timing& t) {
    if (t.mode == Timing::Mode::Afap || ts_issue <= first_ts_issue) return 0;
    const uint64_t gap = ts_issue - first_ts_issue;
    if (t.mode == Timing::Mode::AsIs) return gap;
    return uint64_t(std::llround(double(gap) * t.factor));
}

Dependencies dependencies(const std::vector<uint64_t>& ts_issue, const std::vector<uint64_t>& ts_complete) {
    const size_t n = ts_issue.size();
    Dependencies d;
    d.completion_order.resize(n);
    std::iota(d.completion_order.begin(), d.completion_order.end(), 0u);
    std::stable_sort(d.completion_order.begin(), d.completion_order.end(),
                     [&](uint32_t a, uint32_t b) { return ts_complete[a] < ts_complete[b]; });
    d.need.resize(n);
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
        // ts_issue is non-decreasing, so the completed prefix only grows. Strictly before: a command j
        // after i (ts_issue_j >= ts_issue_i, ts_complete_j >= ts_issue_j) can never be in i's prefix.
        while (k < n && ts_complete[d.completion_order[k]] < ts_issue[i]) ++k;
        d.need[i] = uint32_t(k);
        d.max_inflight = std::max<uint32_t>(d.max_inflight, uint32_t(i + 1 - k));
    }
    return d;
}

}  // namespace kvio::replay
