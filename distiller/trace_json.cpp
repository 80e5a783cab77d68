// Profile from kvio.trace/1 histograms (`kvio trace --json`): the fallback when no events were recorded.
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/histogram.h"
#include "common/jsonl.h"
#include "distiller/profile.h"

namespace kvio::distiller {

namespace {
constexpr size_t kLog2Slots = 65;

const json* hist(const json& hs, const char* name) {
    auto it = hs.find(name);
    return it == hs.end() ? nullptr : &*it;
}

// Checks the shape of a kvio.trace/1 histogram before anything reads it:
// {"unit"?: string, "sum"?: uint, "buckets": [[lo, hi, count], ...] of non-negative integers}.
void check_hist(const json& h, const JsonSource& src, const std::string& field) {
    if (!h.is_object() || !h.contains("buckets") || !h["buckets"].is_array())
        src.fail(field, "expected {\"buckets\":[[lo,hi,count],...]}");
    if (h.contains("unit") && !h["unit"].is_string())
        src.fail(field + ".unit", "expected a string, got " + h["unit"].dump());
    if (h.contains("sum") && !h["sum"].is_number_unsigned())
        src.fail(field + ".sum", "expected a non-negative integer, got " + h["sum"].dump());
    for (const auto& b : h["buckets"])
        if (!b.is_array() || b.size() != 3 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
            !b[2].is_number_unsigned())
            src.fail(field, "bucket " + b.dump() + " is not [lo,hi,count]");
}

// Adds a histogram's buckets to a distribution keyed by each bucket's lower bound.
void add_buckets(const json& h, Dist& d, const JsonSource& src, const std::string& field) {
    check_hist(h, src, field);
    for (const auto& b : h["buckets"])
        if (b[2].get<uint64_t>()) d[b[0].get<uint64_t>()] += b[2].get<uint64_t>();
}
}  // namespace

Profile profile_trace_json(const std::string& path, const std::string& devsel) {
    json doc = read_json_file(path);
    JsonSource src{path, 0};
    if (get_string(doc, "schema", src) != "kvio.trace/1") src.fail("schema", "expected \"kvio.trace/1\"");
    if (!doc.contains("devices") || !doc["devices"].is_array()) src.fail("devices", "missing or not an array");
    const json* d = nullptr;
    std::string list;
    for (const auto& x : doc["devices"]) {
        std::string dv = get_string(x, "dev", src), nm = get_string_or(x, "disk", "", src);
        list += (list.empty() ? "" : ", ") + dv + " (" + nm + ")";
        if (devsel.empty() || dv == devsel || nm == devsel) d = &x;
    }
    if (devsel.empty() && doc["devices"].size() > 1)
        throw Error(path + ": the trace has several devices: " + list + "; choose one with --dev");
    if (!d)
        throw Error(path + ": no device " + devsel + " in the trace (it has: " + (list.empty() ? "none" : list) + ")");

    Profile p;
    p.source = path;
    p.format = "kvio.trace/1";
    p.per_command = false;
    p.dev = get_string(*d, "dev", src);
    p.disk = get_string_or(*d, "disk", "", src);
    p.span_ns = uint64_t(std::llround(get_double(doc, "duration_s", src) * 1e9));
    p.dropped = get_u64_or(doc, "dropped", 0, src);
    p.unmatched_completes = get_u64_or(doc, "unmatched_completes", 0, src);
    p.has_summary = true;
    p.nr_requests = uint32_t(get_u64_or(*d, "nr_requests", 0, src));
    const json hs = d->value("histograms", json::object());
    if (!hs.is_object()) src.fail("histograms", "expected an object, got " + hs.dump());
    for (int dir = 0; dir < 2; ++dir) {
        const char* name = dir ? "write" : "read";
        DirProfile& dp = dir ? p.write : p.read;
        if (d->contains(name)) {
            dp.cmds = get_u64((*d)[name], "cmds", src);
            dp.bytes = get_u64((*d)[name], "bytes", src);
        }
        std::string sz = std::string("bssplit_") + name;
        if (auto h = hist(hs, sz.c_str())) add_buckets(*h, dp.sizes, src, "histograms." + sz);
        if (dp.cmds && dp.sizes.empty())
            throw Error(path + ": device " + p.dev + " has " + std::to_string(dp.cmds) + " " + name +
                        " commands but an empty or missing histograms." + sz + ": no sizes to distill");
    }
    if (!p.cmds()) throw Error(path + ": device " + p.dev + " has no read or write commands: empty input, no job");
    for (const char* q : {"qd_read", "qd_write"})
        if (auto h = hist(hs, q)) add_buckets(*h, p.qd_at_issue, src, std::string("histograms.") + q);
    if (!p.qd_at_issue.empty()) p.max_inflight = uint32_t(p.qd_at_issue.rbegin()->first);
    uint64_t completions = 0;
    for (const char* n : {"d2c_read", "d2c_write"}) {
        auto h = hist(hs, n);
        if (!h) continue;
        check_hist(*h, src, std::string("histograms.") + n);
        Histogram hh = Histogram::from_json(*h, HistKind::Log2, kLog2Slots);
        completions += hh.count();
        p.sum_d2c_ns += hh.sum();
        for (const auto& b : hh.buckets())  // D2C samples at bucket midpoints (an approximation)
            p.d2c_ns.insert(p.d2c_ns.end(), std::min<uint64_t>(b.count, 100000), (b.lo + b.hi) / 2);
    }
    std::sort(p.d2c_ns.begin(), p.d2c_ns.end());
    if (completions && double(completions) < 0.95 * double(p.cmds()))
        throw Error(path + ": device " + p.dev + " counts " + std::to_string(p.cmds()) + " commands but only " +
                    std::to_string(completions) +
                    " D2C completions: completions ≪ issues, the trace is incomplete; no job");
    p.busy_ns = p.span_ns;  // unknown; Little's law over the span
    p.records = p.cmds();
    // LBA range from lba_* histograms (linear, width = bucket bytes): first and last non-empty bucket.
    p.lba_lo_bytes = UINT64_MAX;
    for (auto it = hs.begin(); it != hs.end(); ++it) {
        if (it.key().rfind("lba", 0) != 0) continue;
        check_hist(*it, src, "histograms." + it.key());
        for (const auto& b : (*it)["buckets"]) {
            p.lba_lo_bytes = std::min(p.lba_lo_bytes, b[0].get<uint64_t>());
            p.lba_hi_bytes = std::max(p.lba_hi_bytes, b[1].get<uint64_t>());
        }
    }
    if (p.lba_lo_bytes == UINT64_MAX) p.lba_lo_bytes = 0;
    return p;
}

}  // namespace kvio::distiller
