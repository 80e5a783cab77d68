#include "validate/foreign_fields.h"

#include <cmath>

namespace kvio::validate {

uint64_t get_u64_lenient(const json& obj, const char* field, const JsonSource& src) {
    auto it = obj.find(field);
    if (it == obj.end()) src.fail(field, "missing");
    if (!it->is_string()) return get_u64(obj, field, src);
    const std::string& s = it->get_ref<const std::string&>();
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const unsigned base = hex ? 16 : 10;
    uint64_t v = 0;
    size_t digits = 0;
    char prev = '_';
    for (size_t i = hex ? 2 : 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '_' && hex && prev != '_') {
            prev = c;
            continue;
        }
        unsigned d = c >= '0' && c <= '9'          ? unsigned(c - '0')
                     : hex && c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                     : hex && c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10)
                                                   : 99;
        if (d >= base)
            src.fail(field, "expected a non-negative integer (decimal, or hex \"0x...\" with optional '_'), got \"" +
                                s + "\"");
        if (v > (UINT64_MAX - d) / base) src.fail(field, "\"" + s + "\" does not fit in 64 bits");
        v = v * base + d;
        ++digits;
        prev = c;
    }
    if (!digits || prev == '_')
        src.fail(field,
                 "expected a non-negative integer (decimal, or hex \"0x...\" with optional '_'), got \"" + s + "\"");
    return v;
}

uint64_t get_time_ns(const json& obj, const char* field, const JsonSource& src) {
    auto it = obj.find(field);
    if (it == obj.end()) src.fail(field, "missing");
    if (it->is_number_float()) {
        const double s = it->get<double>();
        const double ns = std::round(s * 1e9);
        if (!(s >= 0) || !(ns < 18446744073709551616.0))  // NaN fails too; 2^64 ns is 584 years
            src.fail(field, "expected CLOCK_MONOTONIC seconds from 0 to 2^64 ns, got " + it->dump());
        return uint64_t(ns);
    }
    if (!it->is_number_integer())
        src.fail(field, "expected CLOCK_MONOTONIC seconds (a fraction) or nanoseconds (an integer), got " + it->dump());
    return get_u64(obj, field, src);
}

void check_string_opt(const json& obj, const char* field, const JsonSource& src) {
    if (obj.contains(field)) (void)get_string(obj, field, src);
}

void check_u64_opt(const json& obj, const char* field, const JsonSource& src) {
    if (obj.contains(field)) (void)get_u64(obj, field, src);
}

}  // namespace kvio::validate
