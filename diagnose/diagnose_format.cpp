#include "diagnose/diagnose_format.h"

#include <cmath>
#include <cstdio>

namespace kvio::diagnose {

std::string fixed(double v, int prec) {
    char b[48];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    return b;
}

std::string iec_bytes(double bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (bytes >= 1024 && u + 1 < std::size(units)) bytes /= 1024, ++u;
    const bool whole = std::fabs(bytes - std::round(bytes)) < 0.05;
    return fixed(bytes, whole ? 0 : 1) + " " + units[u];
}

std::string mb_per_s(double bps) { return fixed(bps / 1e6, bps >= 1e8 ? 0 : 1) + " MB/s"; }

std::string duration_ns(double ns) {
    if (ns < 1e3) return fixed(ns, 0) + " ns";
    if (ns < 1e6) return fixed(ns / 1e3, 1) + " µs";
    if (ns < 1e9) return fixed(ns / 1e6, 2) + " ms";
    return fixed(ns / 1e9, 2) + " s";
}

}  // namespace kvio::diagnose
