// The rules that read per-command and syscall records: queue depth against the device's best in the same trace,
// runs of split commands, the page-cache share (docs/diagnose.md).
#include <algorithm>
#include <cmath>

#include "common/event_trace.h"
#include "common/syscall_trace.h"
#include "common/trace_id.h"
#include "diagnose/diagnose_format.h"
#include "diagnose/rules.h"

namespace kvio::diagnose {

using nlohmann::json;

namespace {

/// One time window of a device: busy time and in-flight time (ns; in-flight summed over commands) and bytes
/// completed, for all reads and writes and for reads alone.
struct Window {
    uint64_t busy_all = 0, inflight_all = 0, bytes_all = 0;
    uint64_t busy_read = 0, inflight_read = 0, bytes_read = 0, reads = 0;
};

/// Adds the busy and in-flight time of `cmds` (those `keep` selects) to windows of `w` ns starting at `t0`.
template <class Keep>
void sweep(const std::vector<Cmd>& cmds, uint64_t t0, uint64_t w, std::vector<Window>& win, bool reads, Keep keep) {
    std::vector<std::pair<uint64_t, int>> edges;
    for (const auto& c : cmds)
        if (c.completion_seen() && keep(c)) edges.push_back({c.ts_issue, +1}), edges.push_back({c.ts_complete, -1});
    std::sort(edges.begin(), edges.end());
    int depth = 0;
    for (size_t i = 0; i + 1 < edges.size(); ++i) {
        depth += edges[i].second;
        uint64_t a = edges[i].first, b = edges[i + 1].first;
        while (depth > 0 && a < b) {
            const size_t k = std::min(win.size() - 1, size_t((a - t0) / w));
            const uint64_t end = std::min(b, t0 + (k + 1) * w);
            const uint64_t len = (end > a ? end : b) - a;
            (reads ? win[k].busy_read : win[k].busy_all) += len;
            (reads ? win[k].inflight_read : win[k].inflight_all) += len * uint64_t(depth);
            a += len;
        }
    }
}

/// low_queue_depth of one device's commands (docs/diagnose.md): reads at a low in-flight count in windows where the
/// device, at a depth of 4 or more, moved at least twice as much in the same trace.
void low_depth_rule(const EventTrace& t, std::vector<Finding>& out) {
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (const auto& c : t.cmds)
        if (c.completion_seen() && (c.op == Op::Read || c.op == Op::Write))
            t0 = std::min(t0, c.ts_issue), t1 = std::max(t1, c.ts_complete);
    if (t0 >= t1) return;
    const uint64_t w = std::clamp<uint64_t>((t1 - t0) / 50, 20'000'000, 1'000'000'000);
    std::vector<Window> win((t1 - t0) / w + 1);
    sweep(t.cmds, t0, w, win, false, [](const Cmd& c) { return c.op == Op::Read || c.op == Op::Write; });
    sweep(t.cmds, t0, w, win, true, [](const Cmd& c) { return c.op == Op::Read; });
    uint64_t read_bytes = 0;
    for (const auto& c : t.cmds) {
        if (!c.completion_seen() || (c.op != Op::Read && c.op != Op::Write)) continue;
        Window& x = win[std::min(win.size() - 1, size_t((c.ts_complete - t0) / w))];
        x.bytes_all += c.bytes;
        if (c.op == Op::Read) x.bytes_read += c.bytes, read_bytes += c.bytes, ++x.reads;
    }
    // The low-depth read windows and the device's best window at depth >= 4 (only whole windows: the last is cut).
    uint64_t low_n = 0, low_bytes = 0, low_busy = 0, low_inflight = 0, read_n = 0;
    double best_bps = 0, best_depth = 0;
    for (size_t k = 0; k + 1 < win.size(); ++k) {
        const Window& x = win[k];
        read_n += x.reads >= 8;
        if (x.reads >= 8 && double(x.inflight_read) < 2.0 * double(x.busy_read))
            ++low_n, low_bytes += x.bytes_read, low_busy += x.busy_read, low_inflight += x.inflight_read;
        const double depth = x.busy_all ? double(x.inflight_all) / double(x.busy_all) : 0;
        const double bps = double(x.bytes_all) * 1e9 / double(w);
        if (depth >= 4.0 && bps > best_bps) best_bps = bps, best_depth = depth;
    }
    if (!low_n || !read_bytes || best_bps <= 0) return;
    const double low_bps = double(low_bytes) * 1e9 / double(low_n * w);
    const double low_depth = double(low_inflight) / double(low_busy);
    const double share = double(low_n) / double(read_n);  // of the windows busy with reads
    if (best_bps < 2.0 * low_bps || share < 0.2) return;
    Finding f{"low_queue_depth", t.disk, "read", "", "", json::object()};
    f.figures = {{"read_depth", low_depth},
                 {"read_bps", low_bps},
                 {"read_seconds", double(low_n * w) / 1e9},
                 {"read_time_share_pct", 100.0 * share},
                 {"device_best_bps", best_bps},
                 {"device_best_depth", best_depth},
                 {"used_pct", 100.0 * low_bps / best_bps},
                 {"window_ns", w}};
    f.summary = "reads ran at queue depth " + fixed(low_depth, 1) + " (in flight while busy) for " +
                fixed(double(low_n * w) / 1e9, 1) + " s and moved " + mb_per_s(low_bps) + " (" +
                fixed(100.0 * share, 0) + " % of the time reads ran), with the device busy " +
                fixed(100.0 * double(low_busy) / double(low_n * w), 0) + " % of that time; the same device moved " +
                mb_per_s(best_bps) + " at depth " + fixed(best_depth, 1) + " in this trace: the reads used " +
                fixed(100.0 * low_bps / best_bps, 0) + " % of it.";
    f.action =
        "Keep more reads in flight: io_uring or libaio with a queue depth (the device's best here was at "
        "depth " +
        fixed(best_depth, 0) +
        "), several loader threads, or larger reads. A loader that waits for "
        "each read before the next leaves the drive idle between them.";
    out.push_back(std::move(f));
}

/// Commands at `limit` bytes and runs of contiguous same-direction commands, each issued before the previous one
/// completed (the pieces of one split transfer), of one device, into each direction's `which`; with `basics` also
/// the commands, bytes and unaligned commands.
void chain_facts(const EventTrace& t, uint64_t limit, CapChains CommandFacts::*which, bool basics,
                 std::map<std::string, CommandFacts>& facts) {
    const Cmd* prev[2] = {nullptr, nullptr};
    uint64_t run_bytes[2] = {0, 0}, run_cmds[2] = {0, 0};
    auto close = [&](int d) {
        CapChains& f = facts[d ? "write" : "read"].*which;
        if (run_cmds[d] >= 2) f.chained_bytes += run_bytes[d], f.chained_cmds += run_cmds[d], ++f.chains;
        run_bytes[d] = run_cmds[d] = 0;
    };
    for (const auto& c : t.cmds) {
        if (c.op != Op::Read && c.op != Op::Write) continue;
        const int d = c.op == Op::Write;
        CommandFacts& f = facts[d ? "write" : "read"];
        if (basics) {
            ++f.cmds, f.bytes += c.bytes;
            if (c.sector % 8 || c.bytes % 4096) ++f.unaligned;  // 8 sectors of 512 bytes: 4 KiB
        }
        if (c.bytes == limit) ++(f.*which).at_limit;
        const Cmd* p = prev[d];
        const bool joins = p && p->bytes == limit && p->end_sector() == c.sector &&
                           (!p->completion_seen() || c.ts_issue < p->ts_complete);
        if (!joins) close(d);
        run_bytes[d] += c.bytes, ++run_cmds[d];
        prev[d] = &c;
    }
    close(0), close(1);
}

/// Refuses an events file that is not the trace summary's: another `trace_id` (when both carry one), a device the
/// summary does not trace, or more or fewer
/// command records on a device than the summary counted there (read, write and other commands), beyond the
/// events the trace dropped. Throws kvio::Error naming both files.
void check_same_trace(const Inputs& in, const EventTrace& t) {
    const json devices = in.trace.value("devices", json::array());
    const json* dev = nullptr;
    for (const auto& d : devices)
        if (d.is_object() && d.value("dev", "") == t.dev) dev = &d;
    const std::string both = in.events + " and " + in.trace_path;
    kvio::check_same_trace(in.events, t.trace_id, in.trace_path, in.trace);
    if (!dev)
        throw Error(both + " are not the same trace: the events' device " + t.dev + " (" + t.disk +
                    ") is not in the summary's devices");
    uint64_t cmds = 0;
    for (const char* op : {"read", "write", "other"})
        if (const auto it = dev->find(op); it != dev->end() && it->is_object()) cmds += it->value("cmds", uint64_t(0));
    const uint64_t gap = t.records > cmds ? t.records - cmds : cmds - t.records;
    if (gap > t.dropped && !t.has_summary && t.records < cmds)  // cut, not another trace: say so
        throw Error(in.events + " is cut (no closing summary record): it holds " + std::to_string(t.records) +
                    " commands of " + t.disk + " where " + in.trace_path + " counted " + std::to_string(cmds) +
                    "; give the whole events file");
    if (gap > t.dropped)
        throw Error(both + " are not the same trace: the events hold " + std::to_string(t.records) + " commands of " +
                    t.disk + ", the summary counted " + std::to_string(cmds) + " (" + std::to_string(t.dropped) +
                    " events dropped)");
}

}  // namespace

void command_rules(const Inputs& in, CommandFactsMap& facts, std::vector<Finding>& out) {
    uint64_t cmds = 0;  // a trace of no command has an events file of none: nothing to read
    for (const auto& d : in.trace.value("devices", json::array()))
        for (const char* op : {"read", "write"}) cmds += d.value(op, json::object()).value("cmds", uint64_t(0));
    if (in.events.empty() || !cmds) return;
    for (const auto& t : load_all_events(in.events, {})) {
        check_same_trace(in, t);
        CommandCaps caps;
        for (const auto& d : in.trace.value("devices", json::array()))
            if (d.value("dev", "") == t.dev) caps = command_caps(d);
        chain_facts(t, caps.sectors, &CommandFacts::sectors, true, facts[t.dev]);
        if (caps.segments) chain_facts(t, caps.segments, &CommandFacts::segments, false, facts[t.dev]);
        low_depth_rule(t, out);
    }
}

void page_cache_rule(const json& trace, const std::vector<SyscallRec>& sys, std::vector<Finding>& out) {
    uint64_t buffered = 0, direct = 0, calls = 0;
    for (const auto& s : sys) {
        if (s.kind != SysKind::Read || s.ret <= 0 || !s.has_file) continue;
        (s.direct ? direct : buffered) += uint64_t(s.ret);
        calls += !s.direct;
    }
    uint64_t device = 0;
    for (const auto& d : trace.value("devices", json::array()))
        device += d.value("read", json::object()).value("bytes", uint64_t(0));
    const uint64_t device_buffered = device > direct ? device - direct : 0;
    // docs/diagnose.md, page_cache_reads: 1 MiB or more read through the page cache, half of it or more not from
    // the device.
    if (buffered < (1u << 20)) return;
    const double share = 1.0 - std::min(1.0, double(device_buffered) / double(buffered));
    if (share < 0.5) return;
    Finding f{"page_cache_reads", "", "read", "", "", json::object()};
    f.figures = {{"app_buffered_read_bytes", buffered},
                 {"app_direct_read_bytes", direct},
                 {"device_read_bytes", device},
                 {"buffered_read_calls", calls},
                 {"page_cache_share", share}};
    f.summary = "the application read " + iec_bytes(double(buffered)) + " through the page cache (" +
                std::to_string(calls) + " calls) and the traced devices read " + iec_bytes(double(device_buffered)) +
                " for them: " + fixed(100.0 * share, 1) + " % came from memory, not the device.";
    f.action =
        "A storage measurement must not read from the page cache: open with O_DIRECT, or drop the pages "
        "(posix_fadvise POSIX_FADV_DONTNEED after writing, before reading back). A production engine whose "
        "reads hit the cache is served by RAM: size the cache tier, not the drive, for it.";
    out.push_back(std::move(f));
}

}  // namespace kvio::diagnose
