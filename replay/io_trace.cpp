#include "replay/io_trace.h"

#include <unordered_map>

#include "common/error.h"
#include "common/quoted_excerpt.h"
#include "common/input_file.h"

namespace kvio::replay {

const char* trace_phase_name(TracePhase p) {
    switch (p) {
        case TracePhase::Prefill:
            return "Prefill";
        case TracePhase::Decode:
            return "Decode";
        case TracePhase::Evict:
            return "Evict";
    }
    return "?";
}

namespace {

constexpr std::string_view kHeader = "Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase";
constexpr const char* kFields[6] = {"Timestamp", "Operation", "Object_Size_Bytes", "Tier", "Key", "Phase"};
constexpr uint64_t kMaxObjectBytes = uint64_t(1) << 40;
constexpr size_t kMaxKeyBytes = 4096;

struct LineError {
    const std::string& path;
    uint64_t line;
    [[noreturn]] void fail(const char* field, const std::string& what) const {
        throw Error(path + ":" + std::to_string(line) + ": field '" + field + "': " + what);
    }
    [[noreturn]] void fail_line(const std::string& what) const {
        throw Error(path + ":" + std::to_string(line) + ": " + what);
    }
};

/// Splits one line into six fields; quoted fields are unquoted into `store`.
void split_fields(std::string_view line, std::string_view (&f)[6], std::string (&store)[6], const LineError& err) {
    size_t n = 0, i = 0;
    while (true) {
        if (n == 6) err.fail_line("more than 6 fields (expected " + std::string(kHeader) + ")");
        if (i < line.size() && line[i] == '"') {
            std::string& s = store[n];
            s.clear();
            ++i;
            while (true) {
                if (i >= line.size()) err.fail(kFields[n], "unterminated quoted field");
                if (line[i] == '"') {
                    if (i + 1 < line.size() && line[i + 1] == '"') {
                        s += '"';
                        i += 2;
                        continue;
                    }
                    ++i;
                    break;
                }
                s += line[i++];
            }
            if (i < line.size() && line[i] != ',') err.fail(kFields[n], "text after the closing quote");
            f[n++] = s;
        } else {
            size_t e = line.find(',', i);
            std::string_view v = line.substr(i, e == std::string_view::npos ? std::string_view::npos : e - i);
            if (v.find('"') != std::string_view::npos)
                err.fail(kFields[n], "a quote inside an unquoted field: " + quoted_excerpt(v));
            f[n++] = v;
            i += v.size();
        }
        if (i >= line.size()) break;
        ++i;                     // the comma
        if (i == line.size()) {  // trailing comma: an empty last field
            if (n == 6) err.fail_line("more than 6 fields (expected " + std::string(kHeader) + ")");
            f[n++] = std::string_view();
            break;
        }
    }
    if (n != 6) err.fail_line(std::to_string(n) + " fields, expected 6 (" + std::string(kHeader) + ")");
}

uint64_t parse_timestamp(std::string_view v, const LineError& err) {
    const char* F = "Timestamp";
    size_t dot = v.find('.');
    std::string_view whole = v.substr(0, dot),
                     frac = dot == std::string_view::npos ? std::string_view() : v.substr(dot + 1);
    if (whole.empty()) err.fail(F, "expected epoch seconds like 1730000000.123456, got " + quoted_excerpt(v));
    if (dot != std::string_view::npos && (frac.empty() || frac.size() > 9))
        err.fail(F, "expected 1 to 9 decimals, got " + quoted_excerpt(v));
    uint64_t s = 0;
    for (char c : whole) {
        if (c < '0' || c > '9') err.fail(F, "expected epoch seconds like 1730000000.123456, got " + quoted_excerpt(v));
        if (s > (UINT64_MAX / 1000000000ull - 10) / 10)
            err.fail(F, quoted_excerpt(v) + " is beyond any date (more than 2^64 ns)");
        s = s * 10 + uint64_t(c - '0');
    }
    uint64_t ns = 0, scale = 100000000ull;
    for (char c : frac) {
        if (c < '0' || c > '9') err.fail(F, "expected epoch seconds like 1730000000.123456, got " + quoted_excerpt(v));
        ns += uint64_t(c - '0') * scale;
        scale /= 10;
    }
    return s * 1000000000ull + ns;
}

uint64_t parse_bytes(std::string_view v, const LineError& err) {
    const char* F = "Object_Size_Bytes";
    if (v.empty() || v.size() > 14) err.fail(F, "expected a byte count from 1 to 2^40, got " + quoted_excerpt(v));
    uint64_t b = 0;
    for (char c : v) {
        if (c < '0' || c > '9') err.fail(F, "expected a byte count from 1 to 2^40, got " + quoted_excerpt(v));
        b = b * 10 + uint64_t(c - '0');
    }
    if (b == 0 || b > kMaxObjectBytes) err.fail(F, "expected a byte count from 1 to 2^40, got " + quoted_excerpt(v));
    return b;
}

}  // namespace

IoTrace parse_io_trace(std::string_view text, const std::string& path) {
    IoTrace t;
    t.path = path;
    std::unordered_map<std::string, uint32_t> key_index;
    uint64_t line_no = 0;
    size_t pos = 0;
    std::string_view f[6];
    std::string store[6];
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const LineError err{path, line_no};
        if (line_no == 1) {
            if (line.size() >= 3 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // a UTF-8 BOM
            if (line != kHeader)
                err.fail_line("expected the header " + std::string(kHeader) + ", got " + quoted_excerpt(line));
            continue;
        }
        if (line.empty()) err.fail_line("blank line (every row has 6 fields: " + std::string(kHeader) + ")");
        split_fields(line, f, store, err);
        IoTraceRow r;
        r.line = line_no;
        r.ts_ns = parse_timestamp(f[0], err);
        if (f[1] == "Write")
            r.write = true;
        else if (f[1] != "Read")
            err.fail("Operation", "expected Write or Read, got " + quoted_excerpt(f[1]));
        r.bytes = parse_bytes(f[2], err);
        if (f[3] == "Tier-0")
            r.tier = 0;
        else if (f[3] == "Tier-1")
            r.tier = 1;
        else if (f[3] == "Tier-2")
            r.tier = 2;
        else if (f[3] == "Tier-3")  // kvio's remote tier (simulate --remote-tier with --io-trace-log)
            r.tier = 3;
        else
            err.fail("Tier", "expected Tier-0, Tier-1, Tier-2 or Tier-3, got " + quoted_excerpt(f[3]));
        if (f[4].empty()) err.fail("Key", "empty");
        if (f[4].size() > kMaxKeyBytes) err.fail("Key", std::to_string(f[4].size()) + " bytes, at most 4096");
        if (f[5] == "Prefill")
            r.phase = TracePhase::Prefill;
        else if (f[5] == "Decode")
            r.phase = TracePhase::Decode;
        else if (f[5] == "Evict")
            r.phase = TracePhase::Evict;
        else
            err.fail("Phase", "expected Prefill, Decode or Evict, got " + quoted_excerpt(f[5]));
        auto [it, fresh] = key_index.try_emplace(std::string(f[4]), uint32_t(t.keys.size()));
        if (fresh) {
            if (t.keys.size() == UINT32_MAX) err.fail("Key", "more than 2^32 distinct keys");
            t.keys.push_back(it->first);
        }
        r.key = it->second;
        t.rows.push_back(r);
    }
    if (line_no == 0) throw Error(path + ": empty file (expected the header " + std::string(kHeader) + ")");
    return t;
}

IoTrace read_io_trace(const std::string& path) { return parse_io_trace(read_input(path), path); }

}  // namespace kvio::replay
