#include "report/perfetto_timeline.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/events_bin.h"
#include "common/input_file.h"
#include "common/jsonl.h"
#include "common/output_file.h"
#include "trace/capture_records.h"
#include "trace/event_format.h"
#include "validate/semantic.h"
#include "validate/validate.h"

namespace kvio::report {

namespace {

using nlohmann::json;

// Synthetic pids and tids of the device and object-op tracks: above any Linux pid (PID_MAX_LIMIT is 2^22), below
// 2^31 (the viewers read pid/tid as 32-bit integers). Track t, slot s -> tid kSynthetic + (t << 16) + s.
constexpr int64_t kSynthetic = int64_t(1) << 30;
constexpr int64_t kOpsPid = kSynthetic;
constexpr size_t kMaxTracks = 16383, kMaxSlots = 65535;

/// Calls `f` for every record of a kvio.events/1 JSONL file or a kvio.events.bin/1 capture (decoded by the
/// reference definitions cmd_event_json / syscall_event_json, device facts from the capture).
void for_each_record(const std::string& path, const std::function<void(const json&, const std::string& where)>& f) {
    // Detect on the bytes the readers will see (a .zst capture decompressed), through the stream they reopen.
    const std::string head = peek_input(path, sizeof evbin::kMagic);
    const bool capture = evbin::has_magic(head.data(), head.size());
    if (!capture) {
        JsonlReader r(path);
        json j;
        while (r.next(j)) f(j, r.source().where());
        return;
    }
    evbin::Reader r(path);
    auto where = [&] { return path + ": record " + std::to_string(r.record()); };
    trace::CaptureVisitor v;
    v.cmd = [&](const kvio_cmd_event& e, trace::DevCache& devs, std::span<const kvio_file_part> files) {
        f(trace::cmd_event_json(e, devs, files), where());
    };
    v.syscall = [&](const kvio_syscall_event& e) { f(trace::syscall_event_json(e), where()); };
    v.json = [&](std::string_view, const json& j) { f(j, where()); };
    trace::visit_capture(r, path, v);
}

uint64_t u64(const json& j, const char* k, const std::string& where) {
    auto it = j.find(k);
    if (it == j.end()) throw Error(where + ": field '" + k + "': missing");
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
        throw Error(where + ": field '" + k + "': expected a non-negative integer");
    return it->get<uint64_t>();
}
std::string str_or(const json& j, const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// 131072 -> "128 KiB", 4096 -> "4 KiB", 1536 -> "1536 B".
std::string size_name(uint64_t b) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
    return std::to_string(b) + " " + units[u];
}

/// One slice: [start, end] ns, its track (index) and its slot there (filled by assign_slots).
struct Slice {
    uint64_t start = 0, end = 0;
    uint32_t track = 0;
    uint32_t slot = 0;
    std::string name;
    json args;
};

/// Lays the slices of each track onto slots so that no two slices of a slot overlap: by start time, each slice
/// takes the lowest slot free at its start. A slot is free once its last slice ended before the start (end < start):
/// two slices of a slot never touch, so a flow event at a slice's start binds to that slice alone. Returns the slot
/// count per track.
std::vector<uint32_t> assign_slots(std::vector<Slice>& s, size_t tracks) {
    std::vector<size_t> order(s.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::tie(s[a].track, s[a].start) < std::tie(s[b].track, s[b].start);
    });
    std::vector<std::vector<uint64_t>> busy_until(tracks);
    for (size_t i : order) {
        auto& lanes = busy_until[s[i].track];
        size_t k = 0;
        while (k < lanes.size() && lanes[k] >= s[i].start) ++k;
        if (k == lanes.size()) {
            if (lanes.size() >= kMaxSlots)
                throw Error("timeline: more than 65535 commands in flight at once on one track");
            lanes.push_back(0);
        }
        lanes[k] = s[i].end;
        s[i].slot = uint32_t(k);
    }
    std::vector<uint32_t> n(tracks);
    for (size_t t = 0; t < tracks; ++t) n[t] = uint32_t(busy_until[t].size());
    return n;
}

/// Streams the traceEvents array: one event per line, comma-separated.
class EventSink {
public:
    explicit EventSink(std::ostream& os) : os_(os) {}
    void put(const json& e) {
        os_ << (first_ ? "\n" : ",\n") << e.dump(-1, ' ', false, json::error_handler_t::replace);
        first_ = false;
    }

private:
    std::ostream& os_;
    bool first_ = true;
};

json meta(const char* what, int64_t pid, int64_t tid, const json& args) {
    json e = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", args}};
    if (tid >= 0) e["tid"] = tid;
    return e;
}

/// A device track of the timeline: "device DISK", with " qN" per NVMe queue, " (block layer)" for the block-layer rows
/// of a disk that also has NVMe rows.
struct Track {
    std::string name;
    bool nvme = false;
};

/// One syscall record: [start, end] ns on thread `tid` of process `pid`.
struct Syscall {
    uint64_t start, end;
    int64_t pid, tid;
    std::string name;
    json args;
};

/// The records of an events file as the timeline draws them.
struct Records {
    std::vector<Track> dev_tracks;
    std::map<std::string, uint32_t> dev_track_of;  ///< track name -> index in dev_tracks
    std::vector<Slice> cmds;                       ///< every cmd record, in file order
    std::vector<bool> cmd_is_nvme;                 ///< per cmds[i]: an NVMe-driver row
    bool any_nvme = false;
    std::vector<Syscall> calls;
    std::map<std::pair<int64_t, int64_t>, std::string> thread_comm;  ///< (pid, tid) -> comm
};

/// Reads the command and syscall records of `events` (JSONL or a capture); throws kvio::Error "WHERE: field ..." on
/// a malformed record, or when there are more than kMaxTracks device tracks.
Records read_records(const std::string& events) {
    Records r;
    auto& [dev_tracks, dev_track_of, cmds, cmd_is_nvme, any_nvme, calls, thread_comm] = r;
    for_each_record(events, [&](const json& j, const std::string& where) {
        const std::string type = str_or(j, "type");
        if (type == "cmd") {
            const bool nvme = str_or(j, "src") == "nvme";
            any_nvme |= nvme;
            std::string disk = str_or(j, "disk");
            if (disk.empty()) disk = str_or(j, "dev");
            std::string track = "device " + disk;
            if (nvme && j.contains("qid")) track += " q" + std::to_string(u64(j, "qid", where));
            Slice s;
            s.start = u64(j, "ts_issue", where);
            const bool lost = j.value("complete_lost", false);
            s.end = lost ? s.start : u64(j, "ts_complete", where);
            if (s.end < s.start) throw Error(where + ": field 'ts_complete': before ts_issue");
            const uint64_t bytes = u64(j, "bytes", where);
            s.name = str_or(j, "op") + " " + size_name(bytes);
            s.args = {{"dev", str_or(j, "dev")}, {"bytes", bytes}};
            for (const char* k : {"sector", "slba", "nlb", "qid", "cid", "qd", "pid", "tid", "user_data", "d2c_ns",
                                  "q2d_ns", "status", "error"})
                if (j.contains(k)) s.args[k] = j[k];
            for (const char* k : {"comm", "rwbs", "key"})
                if (j.contains(k)) s.args[k] = j[k];
            if (lost) s.args["complete_lost"] = true;
            auto [it, added] = dev_track_of.try_emplace(track, uint32_t(dev_tracks.size()));
            if (added) {
                if (dev_tracks.size() >= kMaxTracks) throw Error(where + ": timeline: more than 16383 device tracks");
                dev_tracks.push_back({track, nvme});
            }
            s.track = it->second;
            cmds.push_back(std::move(s));
            cmd_is_nvme.push_back(nvme);
        } else if (type == "syscall") {
            Syscall c;
            c.start = u64(j, "ts_enter", where);
            c.end = std::max(c.start, u64(j, "ts_exit", where));
            c.pid = int64_t(u64(j, "pid", where));
            c.tid = int64_t(u64(j, "tid", where));
            c.name = str_or(j, "name");
            c.args = json::object();
            for (const char* k : {"fd", "ret", "offset", "count", "lat_ns"})
                if (j.contains(k)) c.args[k] = j[k];
            thread_comm.try_emplace({c.pid, c.tid}, str_or(j, "comm"));
            calls.push_back(std::move(c));
        }
    });
    // Block-layer rows of an NVMe disk are the same commands again: their own track, so each row shows once.
    if (any_nvme)
        for (auto& t : dev_tracks)
            if (!t.nvme) t.name += " (block layer)";
    return r;
}

/// The object ops of --semantic and which op each command record was joined to (validate::run's join).
struct JoinedOps {
    std::vector<Slice> ops;
    std::vector<int64_t> cmd_op;  ///< per command record, in file order: the op it was joined to, or -1
    std::vector<std::string> join_warnings;
};

/// The ops of o.semantic ("" : none) joined to the `n_cmds` command records of o.events.
JoinedOps join_ops(const TimelineOptions& o, size_t n_cmds) {
    JoinedOps r;
    auto& [ops, cmd_op, join_warnings] = r;
    if (!o.semantic.empty()) {
        const validate::SemanticTrace st = validate::read_semantic(o.semantic);
        for (const auto& op : st.ops) {
            Slice s;
            s.start = op.ts_start;
            s.end = std::max(op.ts, op.ts_start);
            s.name = std::string(validate::op_kind_name(op.kind)) + " obj " + std::to_string(op.object_id);
            s.args = {{"object_id", op.object_id}, {"bytes", op.bytes}, {"extents", op.extents.size()}};
            if (!op.key.empty()) s.args["key"] = op.key;
            if (op.trace_id) s.args["trace_id"] = op.trace_id;
            if (op.failed) s.args["failed"] = true;
            ops.push_back(std::move(s));
        }
        validate::Options vo;
        vo.commands = o.events;
        vo.semantic = o.semantic;
        vo.record = o.record;
        vo.geometry.trace_json = o.trace_json;
        vo.on_command = [&](const validate::Command&, int64_t op) { cmd_op.push_back(op); };
        const validate::Report rep = validate::run(vo);
        join_warnings = rep.warnings;
        if (!rep.nothing_measured.empty()) join_warnings.insert(join_warnings.begin(), rep.nothing_measured);
        if (cmd_op.size() != n_cmds)
            throw Error(o.events + ": the join read " + std::to_string(cmd_op.size()) +
                        " command records, the timeline " + std::to_string(n_cmds));
    }

    return r;
}

/// Whether command record i is drawn with a flow from its op: joined, and not a block-layer row of an NVMe disk.
bool has_flow(const Records& r, const JoinedOps& j, size_t i) {
    return i < j.cmd_op.size() && j.cmd_op[i] >= 0 && !(r.any_nvme && !r.cmd_is_nvme[i]);
}

/// The pid of device track `track`.
int64_t dev_pid(uint32_t track) { return kSynthetic + 1 + int64_t(track); }
/// The tid of slot `slot` of track `track` (track 0 of kOpsPid: the ops).
int64_t slot_tid(uint32_t track, uint32_t slot) { return kSynthetic + (int64_t(track) << 16) + int64_t(slot); }

/// The process and thread names and sort order: object ops first (sort index 0), then devices, then threads (by pid).
void write_track_names(EventSink& out, const TimelineOptions& o, const Records& r, const JoinedOps& j,
                       const std::vector<uint32_t>& op_slots, const std::vector<uint32_t>& dev_slots) {
    const std::vector<Track>& dev_tracks = r.dev_tracks;
    if (!j.ops.empty()) {
        out.put(meta("process_name", kOpsPid, -1, {{"name", "object ops (" + o.semantic + ")"}}));
        out.put(meta("process_sort_index", kOpsPid, -1, {{"sort_index", 0}}));
        for (uint32_t k = 0; k < op_slots[0]; ++k) {
            out.put(meta("thread_name", kOpsPid, slot_tid(0, k), {{"name", "ops slot " + std::to_string(k + 1)}}));
            out.put(meta("thread_sort_index", kOpsPid, slot_tid(0, k), {{"sort_index", k}}));
        }
    }
    for (uint32_t t = 0; t < dev_tracks.size(); ++t) {
        out.put(meta("process_name", dev_pid(t), -1, {{"name", dev_tracks[t].name}}));
        out.put(meta("process_sort_index", dev_pid(t), -1, {{"sort_index", 1 + t}}));
        for (uint32_t k = 0; k < dev_slots[t]; ++k) {
            out.put(meta("thread_name", dev_pid(t), slot_tid(t, k), {{"name", "slot " + std::to_string(k + 1)}}));
            out.put(meta("thread_sort_index", dev_pid(t), slot_tid(t, k), {{"sort_index", k}}));
        }
    }
    {
        std::map<int64_t, bool> named;
        for (const auto& [pt, comm] : r.thread_comm) {
            if (!named[pt.first]) {
                out.put(
                    meta("process_name", pt.first, -1, {{"name", comm + " (pid " + std::to_string(pt.first) + ")"}}));
                out.put(meta("process_sort_index", pt.first, -1, {{"sort_index", 1 + dev_tracks.size()}}));
                named[pt.first] = true;
            }
            out.put(meta("thread_name", pt.first, pt.second,
                         {{"name", comm + " " + std::to_string(pt.second) + " (syscalls)"}}));
        }
    }
}

/// The slices: ops, commands (each joined one with a flow from its op), syscalls; times in µs since `t0` ns.
void write_slices(EventSink& out, const Records& r, const JoinedOps& j, uint64_t t0) {
    auto us = [&](uint64_t ns) { return double(ns - t0) / 1000.0; };
    auto dur = [](uint64_t a, uint64_t b) { return double(b - a) / 1000.0; };
    const std::vector<Slice>&ops = j.ops, &cmds = r.cmds;
    const std::vector<int64_t>& cmd_op = j.cmd_op;
    for (size_t i = 0; i < ops.size(); ++i) {
        const Slice& s = ops[i];
        out.put({{"ph", "X"},
                 {"cat", "op"},
                 {"name", s.name},
                 {"pid", kOpsPid},
                 {"tid", slot_tid(0, s.slot)},
                 {"ts", us(s.start)},
                 {"dur", dur(s.start, s.end)},
                 {"args", s.args}});
    }
    uint64_t flow_id = 0;
    for (size_t i = 0; i < cmds.size(); ++i) {
        const Slice& s = cmds[i];
        const int64_t pid = dev_pid(s.track), tid = slot_tid(s.track, s.slot);
        json args = s.args;
        const bool flow = has_flow(r, j, i);
        if (flow) args["op"] = ops[size_t(cmd_op[i])].name;
        out.put({{"ph", "X"},
                 {"cat", "cmd"},
                 {"name", s.name},
                 {"pid", pid},
                 {"tid", tid},
                 {"ts", us(s.start)},
                 {"dur", dur(s.start, s.end)},
                 {"args", std::move(args)}});
        if (!flow) continue;
        const Slice& op = ops[size_t(cmd_op[i])];
        ++flow_id;
        out.put({{"ph", "s"},
                 {"cat", "join"},
                 {"name", "attributed"},
                 {"id", flow_id},
                 {"pid", kOpsPid},
                 {"tid", slot_tid(0, op.slot)},
                 {"ts", us(op.start)}});
        out.put({{"ph", "f"},
                 {"bp", "e"},
                 {"cat", "join"},
                 {"name", "attributed"},
                 {"id", flow_id},
                 {"pid", pid},
                 {"tid", tid},
                 {"ts", us(s.start)}});
    }
    for (const auto& c : r.calls)
        out.put({{"ph", "X"},
                 {"cat", "syscall"},
                 {"name", c.name},
                 {"pid", c.pid},
                 {"tid", c.tid},
                 {"ts", us(c.start)},
                 {"dur", dur(c.start, c.end)},
                 {"args", c.args}});
}

}  // namespace

TimelineStats write_perfetto(const TimelineOptions& o) {
    Records r = read_records(o.events);
    JoinedOps j = join_ops(o, r.cmds.size());
    const std::vector<uint32_t> dev_slots = assign_slots(r.cmds, r.dev_tracks.size());
    const std::vector<uint32_t> op_slots = assign_slots(j.ops, 1);

    uint64_t t0 = UINT64_MAX;
    for (const auto& s : r.cmds) t0 = std::min(t0, s.start);
    for (const auto& s : j.ops) t0 = std::min(t0, s.start);
    for (const auto& c : r.calls) t0 = std::min(t0, c.start);
    if (t0 == UINT64_MAX) t0 = 0;

    TimelineStats st;
    st.commands = r.cmds.size();
    st.syscalls = r.calls.size();
    st.ops = j.ops.size();
    st.device_tracks = r.dev_tracks.size();
    st.threads = r.thread_comm.size();
    for (uint32_t n : dev_slots) st.max_slots = std::max<uint64_t>(st.max_slots, n);
    for (size_t i = 0; i < j.cmd_op.size(); ++i)
        if (has_flow(r, j, i)) ++st.flows;
    if (st.ops && !st.flows) {
        st.warnings = j.join_warnings;
        if (st.warnings.empty())
            st.warnings.push_back("no command was joined to any of the " + std::to_string(st.ops) + " ops of " +
                                  o.semantic);
    }

    OutputFile file(o.out);  // a name ending in .zst: one zstd frame
    std::ostream& f = file.stream();
    json other = {{"schema", "kvio.timeline/1"},
                  {"clock", "CLOCK_MONOTONIC"},
                  {"t0_ns", t0},
                  {"events", o.events},
                  {"semantic", o.semantic},
                  {"commands", st.commands},
                  {"syscalls", st.syscalls},
                  {"ops", st.ops},
                  {"flows", st.flows}};
    f << "{\"displayTimeUnit\":\"ns\",\"otherData\":" << other.dump() << ",\"traceEvents\":[";
    EventSink out(f);
    write_track_names(out, o, r, j, op_slots, dev_slots);
    write_slices(out, r, j, t0);
    f << "\n]}\n";
    file.close();
    return st;
}

}  // namespace kvio::report
