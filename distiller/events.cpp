#include "distiller/events.h"

#include <algorithm>
#include <map>

#include "common/error.h"
#include "common/jsonl.h"

namespace kvio::distiller {

const char* op_name(Op op) {
    switch (op) {
    case Op::Read: return "read";
    case Op::Write: return "write";
    case Op::Flush: return "flush";
    case Op::Discard: return "discard";
    default: return "other";
    }
}

static Op parse_op(const std::string& s, const JsonSource& src) {
    if (s == "read") return Op::Read;
    if (s == "write") return Op::Write;
    if (s == "flush") return Op::Flush;
    if (s == "discard") return Op::Discard;
    if (s == "other") return Op::Other;
    src.fail("op", "expected read|write|flush|discard|other, got \"" + s + "\"");
}

namespace {
struct DevCmds {
    std::string disk;
    std::vector<Cmd> cmds;
    uint64_t records = 0, filtered_out = 0;
};
}  // namespace

EventTrace load_events(const std::string& path, const EventFilter& filter) {
    JsonlReader rd(path);
    std::map<std::string, DevCmds> devs;
    EventTrace out;
    out.path = path;
    json j;
    while (rd.next(j)) {
        const auto& src = rd.source();
        std::string type = get_string(j, "type", src);
        if (type == "syscall") continue;
        if (type == "summary") {
            out.has_summary = true;
            out.summary_events = get_u64_or(j, "events", 0, src);
            out.dropped = get_u64_or(j, "dropped", 0, src);
            out.unmatched_completes = get_u64_or(j, "unmatched_completes", 0, src);
            out.negative_deltas = get_u64_or(j, "negative_deltas", 0, src);
            continue;
        }
        if (type != "cmd") src.fail("type", "expected \"cmd\", \"syscall\" or \"summary\", got \"" + type + "\"");
        std::string dev = get_string(j, "dev", src);
        auto& d = devs[dev];
        d.disk = get_string_or(j, "disk", "", src);
        ++d.records;
        Cmd c;
        c.op = parse_op(get_string(j, "op", src), src);
        c.sector = get_u64(j, "sector", src);
        c.bytes = get_u64(j, "bytes", src);
        c.ts_issue = get_u64(j, "ts_issue", src);
        c.ts_complete = get_u64(j, "ts_complete", src);
        if (c.ts_complete < c.ts_issue)
            src.fail("ts_complete", "is before ts_issue (" + std::to_string(c.ts_complete) + " < " +
                                        std::to_string(c.ts_issue) + ")");
        c.qd = uint32_t(get_u64_or(j, "qd", 0, src));
        c.pid = uint32_t(get_u64_or(j, "pid", 0, src));
        c.tid = uint32_t(get_u64_or(j, "tid", 0, src));
        c.has_user_data = j.contains("user_data");
        std::string s = get_string_or(j, "src", "block", src);
        if (s != "block" && s != "nvme") src.fail("src", "expected \"block\" or \"nvme\", got \"" + s + "\"");
        c.nvme = s == "nvme";
        c.passthrough = c.nvme && get_string_or(j, "rwbs", "", src) == "N";
        std::string comm = get_string_or(j, "comm", "", src);
        if ((filter.pid && c.pid != filter.pid) || (!filter.comm.empty() && comm != filter.comm)) {
            ++d.filtered_out;
            continue;
        }
        d.cmds.push_back(c);
    }
    if (devs.empty()) throw Error(path + ": no device commands (\"type\":\"cmd\" records) in the trace");

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
        if (pick == devs.end()) throw Error(path + ": no commands on device " + filter.dev + " in the trace");
    }
    out.dev = pick->first;
    out.disk = pick->second.disk;
    out.records = pick->second.records;
    out.filtered_out = pick->second.filtered_out;
    out.cmds = std::move(pick->second.cmds);
    std::stable_sort(out.cmds.begin(), out.cmds.end(),
                     [](const Cmd& a, const Cmd& b) { return a.ts_issue < b.ts_issue; });
    return out;
}

}  // namespace kvio::distiller
