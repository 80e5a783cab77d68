#include "validate/gate.h"

#include <cmath>
#include <cstdio>

namespace kvio::validate {

static std::string fmt(const char* f, double a, double b = 0, double c = 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, f, a, b, c);
    return buf;
}

std::vector<std::string> missed_thresholds(const Report& r, const Gate& g) {
    std::vector<std::string> out;
    const Scores& s = r.all;
    if (g.fail_below_pct) {
        const double want = *g.fail_below_pct;
        if (!s.objects) {
            out.push_back(fmt("no op was scored: exact-match is n/a, --fail-below %g%% missed", want));
        } else {
            const double pct = 100.0 * double(s.exact_match) / double(s.objects);
            if (pct < want)
                out.push_back(fmt("exact-match %.2f%% (", pct) + std::to_string(s.exact_match) + "/" +
                              std::to_string(s.objects) +
                              fmt(") is below --fail-below %g%% by %.2f points", want, want - pct));
        }
    }
    if (g.max_wape_pct) {
        const double want = *g.max_wape_pct;
        if (std::isnan(s.wape))
            out.push_back(fmt("WAPE is n/a (no command was measured): --max-wape %g%% missed", want));
        else if (100 * s.wape > want)
            out.push_back(
                fmt("WAPE %.4f%% is above --max-wape %g%% by %.4f points", 100 * s.wape, want, 100 * s.wape - want));
    }
    return out;
}

}  // namespace kvio::validate
