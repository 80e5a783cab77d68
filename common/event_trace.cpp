#include "common/event_trace.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "common/error.h"
#include "common/events_reader.h"

namespace kvio {

namespace {
/// A command this far behind its issue-order place (in the completion-ordered file) stops the in-place insertion.
constexpr size_t kMaxInsertBack = 4096;

struct DevCmds {
    std::string disk;
    std::vector<Cmd> cmds;
    uint64_t records = 0, filtered_out = 0, lost_completes = 0;
    bool sorted = true;  // cmds is in stable ts_issue order
};

// Appends `c` at its place in ts_issue order (after equal ts_issue: what a stable sort of file order gives).
void insert_in_issue_order(DevCmds& d, const Cmd& c) {
    auto& v = d.cmds;
    v.push_back(c);
    if (!d.sorted) return;
    size_t i = v.size() - 1;
    size_t stop = i > kMaxInsertBack ? i - kMaxInsertBack : 0;
    while (i > stop && v[i - 1].ts_issue > c.ts_issue) {
        v[i] = v[i - 1];
        --i;
    }
    if (i > 0 && v[i - 1].ts_issue > c.ts_issue) {
        // Too far back: undo and sort everything once at the end.
        std::move(v.begin() + i + 1, v.end(), v.begin() + i);
        v.back() = c;
        d.sorted = false;
        return;
    }
    v[i] = c;
}
}  // namespace

void set_rwbs_flags(std::string_view rwbs, Cmd& c) {
    // blk_fill_rwbs() order: 'F' (preflush), the op letter(s), then 'F' (FUA), 'A', 'S', 'M'. A flush is "F" or
    // "FF": no op letter of its own to anchor on, and neither flag means anything for it.
    const size_t op = rwbs.find_first_of("RWDN");
    if (op == std::string_view::npos) return;
    c.preflush = op > 0 && rwbs[0] == 'F';
    c.secure_erase = rwbs.substr(op, 2) == "DE";
    const size_t after = op + (c.secure_erase ? 2 : 1);
    c.fua = after < rwbs.size() && rwbs[after] == 'F';
}

namespace {
// Every device's commands of `path` that pass the pid/comm part of `filter`; `out` receives the file's health.
std::map<std::string, DevCmds, std::less<>> read_devices(const std::string& path, const EventFilter& filter,
                                                         EventTrace& out, const volatile sig_atomic_t* stop) {
    EventsReader rd(path);
    std::map<std::string, DevCmds, std::less<>> devs;
    out.path = path;
    if (rd.is_capture()) out.format = "kvio.events.bin/1";
    EventRecord r;
    while (rd.next_checked(r)) {
        if (stop && *stop)
            throw Stopped(int(*stop), "stopped by signal " + std::to_string(int(*stop)) + " while loading " + path);
        if (r.kind == EventType::Syscall || r.kind == EventType::Stages) continue;
        if (r.kind == EventType::Summary) {
            out.has_summary = true;
            out.summary_events = r.events;
            out.dropped = r.dropped;
            out.unmatched_completes = r.unmatched_completes;
            out.negative_deltas = r.negative_deltas;
            out.trace_id = r.trace_id;
            continue;
        }
        auto it = devs.find(r.dev);
        if (it == devs.end()) it = devs.emplace(std::string(r.dev), DevCmds{}).first;
        auto& d = it->second;
        if (d.disk != r.disk) d.disk = r.disk;
        ++d.records;
        Cmd c;
        c.op = r.io;
        c.sector = r.sector;
        c.bytes = r.bytes;
        c.ts_issue = r.ts_issue;
        if (!r.has_field(EventField::TsComplete)) {  // "complete_lost": kvio trace never saw its completion
            ++d.lost_completes;
            c.ts_complete = 0;
        } else {
            c.ts_complete = r.ts_complete;
        }
        c.qd = uint32_t(r.qd);
        c.pid = uint32_t(r.pid);
        c.tid = uint32_t(r.tid);
        c.io_worker = r.comm.starts_with("iou-wrk-") || r.comm.starts_with("iou-sqp-");
        c.has_user_data = r.has_field(EventField::UserData);
        c.nvme = r.nvme;
        c.passthrough = c.nvme && r.rwbs == "N";
        set_rwbs_flags(r.rwbs, c);
        if ((filter.pid && c.pid != filter.pid) || (!filter.comm.empty() && r.comm != filter.comm)) {
            ++d.filtered_out;
            continue;
        }
        insert_in_issue_order(d, c);
    }
    if (devs.empty()) throw NoDeviceCommands(path + ": no device commands (\"type\":\"cmd\" records) in the trace");
    return devs;
}

EventTrace take_device(const EventTrace& common, const std::string& dev, DevCmds& d) {
    EventTrace out = common;
    out.dev = dev;
    out.disk = d.disk;
    out.records = d.records;
    out.filtered_out = d.filtered_out;
    out.lost_completes = d.lost_completes;
    out.cmds = std::move(d.cmds);
    if (!d.sorted)
        std::stable_sort(out.cmds.begin(), out.cmds.end(),
                         [](const Cmd& a, const Cmd& b) { return a.ts_issue < b.ts_issue; });
    return out;
}
}  // namespace

EventTrace empty_like(const EventTrace& t) {
    EventTrace s;
    s.path = t.path;
    s.dev = t.dev;
    s.disk = t.disk;
    s.format = t.format;
    s.trace_id = t.trace_id;
    s.has_summary = true;
    return s;
}

EventTrace load_events(const std::string& path, const EventFilter& filter, const volatile sig_atomic_t* stop) {
    EventTrace common;
    auto devs = read_devices(path, filter, common, stop);
    auto pick = devs.end();
    if (filter.dev.empty()) {
        if (devs.size() > 1) {
            std::string list;
            for (const auto& [k, v] : devs) list += (list.empty() ? "" : ", ") + k + " (" + v.disk + ")";
            throw Error(path + ": the trace has commands on several devices: " + list + "; choose one with --dev");
        }
        pick = devs.begin();
    } else {
        for (auto it = devs.begin(); it != devs.end(); ++it)
            if (it->first == filter.dev || it->second.disk == filter.dev) pick = it;
        if (pick == devs.end())
            throw NoDeviceCommands(path + ": no commands on device " + filter.dev + " in the trace");
    }
    return take_device(common, pick->first, pick->second);
}

std::vector<EventTrace> load_all_events(const std::string& path, const EventFilter& filter,
                                        const volatile sig_atomic_t* stop) {
    if (!filter.dev.empty()) return {load_events(path, filter, stop)};
    EventTrace common;
    auto devs = read_devices(path, filter, common, stop);
    std::vector<EventTrace> out;
    for (auto& [dev, d] : devs) out.push_back(take_device(common, dev, d));
    return out;
}

}  // namespace kvio
