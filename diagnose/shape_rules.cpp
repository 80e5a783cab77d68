// The rules about the shape of the application's I/O against what reached the devices: small writes amplified,
// offsets and lengths off 4 KiB (docs/diagnose.md).
#include <algorithm>

#include "diagnose/diagnose_format.h"
#include "diagnose/rules.h"

namespace kvio::diagnose {

using nlohmann::json;

namespace {

constexpr uint64_t kPage = 4096;  // the page size and the physical block of most drives (docs/diagnose.md)

uint64_t u64(const json& j, const char* k) { return j.is_object() ? j.value(k, uint64_t(0)) : 0; }

/// Bytes, commands and flushes of every traced device in direction `op`.
struct DeviceTotals {
    uint64_t bytes = 0, cmds = 0, flushes = 0;
};
DeviceTotals device_totals(const json& trace, const char* op) {
    DeviceTotals t;
    for (const auto& d : trace.value("devices", json::array())) {
        t.bytes += u64(d.value(op, json::object()), "bytes");
        t.cmds += u64(d.value(op, json::object()), "cmds");
        t.flushes += hist_sum(d.value("histograms", json::object()), "flush_cmds").count;
    }
    return t;
}

/// The bytes a read or write call asked for: `count`, or what it moved when `count` is an iovec count.
uint64_t requested(const SyscallRec& s) { return s.vectored ? uint64_t(s.ret) : s.count; }

}  // namespace

void small_write_rule(const json& trace, const std::vector<SyscallRec>& sys, std::vector<Finding>& out) {
    uint64_t calls = 0, bytes = 0, partial = 0, app_read = 0;
    for (const auto& s : sys) {
        if (!s.has_file || s.ret <= 0) continue;
        if (s.kind == SysKind::Read) app_read += uint64_t(s.ret);
        if (s.kind != SysKind::Write) continue;
        ++calls, bytes += uint64_t(s.ret);
        partial += s.offset % kPage || uint64_t(s.ret) % kPage;
    }
    const DeviceTotals w = device_totals(trace, "write"), r = device_totals(trace, "read");
    // docs/diagnose.md, small_write_amplification: at least 16 writes of 64 KiB or less on average, and the devices
    // wrote at least twice the application's bytes.
    if (calls < 16 || bytes > 64 * 1024 * calls || w.bytes < 2 * bytes) return;
    const double amp = double(w.bytes) / double(bytes), mean = double(bytes) / double(calls);
    const uint64_t unrequested_read = r.bytes > app_read ? r.bytes - app_read : 0;
    Finding f{"small_write_amplification", "", "write", "", "", json::object()};
    f.figures = {{"app_write_calls", calls},
                 {"app_write_bytes", bytes},
                 {"app_write_bytes_mean", mean},
                 {"partial_page_write_calls", partial},
                 {"device_write_bytes", w.bytes},
                 {"device_write_cmds", w.cmds},
                 {"device_write_cmd_bytes_mean", w.cmds ? double(w.bytes) / double(w.cmds) : 0.0},
                 {"device_write_cmds_per_app_write", double(w.cmds) / double(calls)},
                 {"flush_cmds", w.flushes},
                 {"device_read_bytes_unrequested", unrequested_read},
                 {"write_amplification", amp}};
    f.summary = "the application wrote " + iec_bytes(double(bytes)) + " in " + std::to_string(calls) + " calls (" +
                iec_bytes(mean) + " a call, " + std::to_string(partial) +
                " not whole 4 KiB pages) and the devices wrote " + iec_bytes(double(w.bytes)) + " in " +
                std::to_string(w.cmds) + " commands (" + fixed(double(w.cmds) / double(calls), 1) + " a write, " +
                std::to_string(w.flushes) + " flushes): " + fixed(amp, 1) + " device bytes for each byte written";
    if (unrequested_read)
        f.summary += "; the devices also read " + iec_bytes(double(unrequested_read)) +
                     " the application did not (read-modify-write of partial pages, metadata)";
    f.summary += ".";
    f.action =
        "Write in larger units: gather an object's small writes into one write of its whole size from a 4 KiB-aligned "
        "buffer, and sync once per object, not per write. Each small write that is synced costs at least a whole "
        "page or filesystem block at the device plus the filesystem's journal commit and a cache flush";
    f.action += partial * 2 >= calls ? "; writes that cover part of a page make the kernel read the rest of the "
                                       "page first when it is not cached: keep writes whole, aligned pages."
                                     : ".";
    out.push_back(std::move(f));
}

namespace {

/// unaligned_io of the syscall records in direction `kind` ("read"/"write"): calls whose offset or requested
/// length is not a multiple of 4 KiB.
void unaligned_calls(const std::vector<SyscallRec>& sys, SysKind kind, uint64_t lbs, std::vector<Finding>& out) {
    uint64_t calls = 0, bytes = 0, by_offset = 0, by_length = 0, unaligned = 0, off_lbs = 0, direct = 0;
    for (const auto& s : sys) {
        if (s.kind != kind || !s.has_file || s.ret <= 0) continue;
        const uint64_t len = requested(s);
        ++calls, bytes += uint64_t(s.ret);
        by_offset += s.offset % kPage != 0, by_length += len % kPage != 0;
        if (s.offset % kPage || len % kPage) ++unaligned, direct += s.direct;
        off_lbs += lbs && (s.offset % lbs || len % lbs);
    }
    // docs/diagnose.md, unaligned_io: at least 16 calls, half of them or more off 4 KiB.
    if (calls < 16 || unaligned * 2 < calls) return;
    const std::string op = kind == SysKind::Read ? "read" : "write";
    Finding f{"unaligned_io", "", op, "", "", json::object()};
    f.figures = {{"calls", calls},
                 {"bytes", bytes},
                 {"unaligned_calls", unaligned},
                 {"unaligned_pct", 100.0 * double(unaligned) / double(calls)},
                 {"unaligned_offset_calls", by_offset},
                 {"unaligned_length_calls", by_length},
                 {"unaligned_direct_calls", direct},
                 {"logical_block_size", lbs},
                 {"off_logical_block_calls", off_lbs}};
    f.summary = std::to_string(unaligned) + " of " + std::to_string(calls) + " " + op + " calls (" +
                fixed(100.0 * double(unaligned) / double(calls), 1) +
                " %) were not on 4 KiB: " + std::to_string(by_offset) + " started inside a page, " +
                std::to_string(by_length) + " had a length that is not a multiple of 4 KiB (" +
                std::to_string(off_lbs) + " not even of the " + std::to_string(lbs) + "-byte logical block).";
    f.action =
        "Align file offsets and lengths to 4 KiB (for O_DIRECT at least to the logical block, better 4 KiB, with "
        "a 4 KiB-aligned buffer): an unaligned read touches a page or block more than it needs, and an unaligned "
        "buffered write to a page that is not cached makes the kernel read the page first (read-modify-write).";
    out.push_back(std::move(f));
}

/// unaligned_io of one device's commands in direction `op` (facts from the events file).
void unaligned_cmds(const json& d, const CommandFacts& cf, const std::string& op, std::vector<Finding>& out) {
    // docs/diagnose.md, unaligned_io: at least 16 commands, half of them or more off 4 KiB.
    if (cf.cmds < 16 || cf.unaligned * 2 < cf.cmds) return;
    Finding f{"unaligned_io", d.value("disk", ""), op, "", "", json::object()};
    const uint64_t lbs = u64(d, "logical_block_size");
    f.figures = {{"cmds", cf.cmds},
                 {"bytes", cf.bytes},
                 {"unaligned_cmds", cf.unaligned},
                 {"unaligned_pct", 100.0 * double(cf.unaligned) / double(cf.cmds)},
                 {"logical_block_size", lbs}};
    f.summary = std::to_string(cf.unaligned) + " of " + std::to_string(cf.cmds) + " " + op + " commands (" +
                fixed(100.0 * double(cf.unaligned) / double(cf.cmds), 1) +
                " %) started or ended inside a 4 KiB block of the device (logical block " + std::to_string(lbs) +
                " bytes).";
    f.action =
        "Issue O_DIRECT I/O at 4 KiB-aligned offsets and lengths, and start partitions on a 4 KiB (better 1 MiB) "
        "boundary: a drive with 4 KiB physical blocks reads and rewrites a whole block for a command that covers "
        "part of it.";
    out.push_back(std::move(f));
}

}  // namespace

void unaligned_rule(const json& trace, const std::vector<SyscallRec>& sys, const CommandFactsMap& facts,
                    std::vector<Finding>& out) {
    uint64_t lbs = 0;  // the largest logical block of the traced devices: what O_DIRECT must align to on all
    for (const auto& d : trace.value("devices", json::array())) lbs = std::max(lbs, u64(d, "logical_block_size"));
    unaligned_calls(sys, SysKind::Read, lbs, out);
    unaligned_calls(sys, SysKind::Write, lbs, out);
    for (const auto& d : trace.value("devices", json::array())) {
        const auto it = facts.find(d.value("dev", ""));
        if (it == facts.end()) continue;
        for (const char* op : {"read", "write"})
            if (auto jt = it->second.find(op); jt != it->second.end()) unaligned_cmds(d, jt->second, op, out);
    }
}

}  // namespace kvio::diagnose
