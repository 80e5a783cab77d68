#include "drives/kv_line.h"

#include <cstdio>

namespace kvio::drives {

KvLine kv_line(const KvObject& obj, double read_bytes_per_s, double write_bytes_per_s) {
    KvLine l;
    const auto b = static_cast<double>(obj.bytes);
    if (write_bytes_per_s > 0) l.store_ms = b / write_bytes_per_s * 1000;
    if (read_bytes_per_s > 0) {
        l.load_ms = b / read_bytes_per_s * 1000;
        l.loads_per_s = read_bytes_per_s / b;
        l.users = l.loads_per_s / obj.user_objects_per_s;
    }
    return l;
}

nlohmann::json kv_line_json(const KvLine& l) {
    auto v = [](double x) { return x < 0 ? nlohmann::json(nullptr) : nlohmann::json(x); };
    return {{"store_ms", v(l.store_ms)},
            {"load_ms", v(l.load_ms)},
            {"loads_per_s", v(l.loads_per_s)},
            {"users", v(l.users)}};
}

std::string kv_line_text(const std::string& drive, const KvObject& obj, const KvLine& l) {
    auto ms = [](double x) {
        char b[32];
        if (x < 0) return std::string("-");
        std::snprintf(b, sizeof b, x < 10 ? "%.2f ms" : "%.1f ms", x);
        return std::string(b);
    };
    char b[320];
    std::snprintf(b, sizeof b, "KV %s: store %s, load %s per %.1f MiB object", drive.c_str(), ms(l.store_ms).c_str(),
                  ms(l.load_ms).c_str(), static_cast<double>(obj.bytes) / (1 << 20));
    std::string s = b;
    if (l.loads_per_s >= 0) {
        // three significant digits: a slow drive's 0.646 loads/s is not "1"
        std::snprintf(b, sizeof b, "; %.3g loads/s = %.3g users at %g object/s each", l.loads_per_s, l.users,
                      obj.user_objects_per_s);
        s += b;
    } else {
        s += "; no reads in the workload, so no loads/s";
    }
    return s;
}

}  // namespace kvio::drives
