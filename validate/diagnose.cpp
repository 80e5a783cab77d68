#include "validate/diagnose.h"

#include <algorithm>

#include "common/devinfo.h"

namespace kvio::validate {

void CommandFacts::add(const Command& c) {
    if ((c.op != CmdOp::Read && c.op != CmdOp::Write) || c.bytes == 0) return;
    ++data;
    with_key += !c.key.empty();
    with_user_data += c.has_user_data && (c.user_data >> 32) != 0;
    ts_min = std::min(ts_min, c.ts_issue);
    ts_max = std::max(ts_max, c.ts_issue);
    if (std::find(devs.begin(), devs.end(), c.dev) == devs.end()) devs.push_back(c.dev);
}

static std::string dev_list(const std::vector<uint32_t>& devs) {
    std::string s;
    for (size_t i = 0; i < devs.size() && i < 16; ++i)
        s += (s.empty() ? "" : ", ") + dev_string(decode_kernel_dev(devs[i]));
    if (devs.size() > 16) s += " and " + std::to_string(devs.size() - 16) + " more";
    return s;
}

static std::vector<uint32_t> op_devices(const SemanticTrace& t) {
    std::vector<uint32_t> d;
    for (const ObjectOp& o : t.ops)
        if (std::find(d.begin(), d.end(), o.dev) == d.end()) d.push_back(o.dev);
    return d;
}

std::string nothing_measured(const SemanticTrace& t, const JoinResult& j, const CommandFacts& f) {
    if (t.ops.empty() || j.joined.cmds) return "";
    if (!f.data)
        return "the commands file holds no read or write command: the " + std::to_string(t.ops.size()) +
               " ops were scored against nothing (an empty or cut-off trace, or the trace's device filter excluded the "
               "device?)";
    const std::vector<uint32_t> ops = op_devices(t);
    if (std::none_of(f.devs.begin(), f.devs.end(), [&](uint32_t d) { return std::count(ops.begin(), ops.end(), d); }))
        return "the commands file holds no command on the ops' device " + dev_list(ops) + " (its " +
               std::to_string(f.data) + " data commands are on " + dev_list(f.devs) +
               "): trace the device the ops ran on";
    return "";
}

std::vector<std::string> join_warnings(const SemanticTrace& t, const JoinResult& j, const CommandFacts& f) {
    if (t.ops.empty() || j.joined.cmds) return {};
    const std::string none = "no command joined any op: ";
    if (!f.data) return {none + "the commands file has no read or write commands"};
    if (j.mode == JoinMode::Key) {
        if (!f.with_key)
            return {none +
                    "--join key, but no command carries a key (only NVMe KV command-set traces do); try --join auto"};
        if (std::none_of(t.ops.begin(), t.ops.end(), [](const ObjectOp& o) { return !o.key.empty(); }))
            return {none + "--join key, but no op in " + t.path + " carries a key"};
    }
    if (j.mode == JoinMode::UserData) {
        if (!f.with_user_data)
            return {
                none +
                "--join user_data, but no command carries user_data with a trace id (only the io_uring and uring_cmd "
                "engines tag their commands); try --join auto"};
        if (std::none_of(t.ops.begin(), t.ops.end(), [](const ObjectOp& o) { return o.trace_id != 0; }))
            return {none + "--join user_data, but no op in " + t.path + " carries a trace_id"};
    }
    const std::vector<uint32_t> op_devs = op_devices(t);
    uint64_t op_min = UINT64_MAX, op_max = 0;
    for (const ObjectOp& o : t.ops) {
        op_min = std::min(op_min, o.ts_start);
        op_max = std::max(op_max, o.ts);
    }
    if (j.mode == JoinMode::Offset && std::none_of(f.devs.begin(), f.devs.end(), [&](uint32_t d) {
            return std::count(op_devs.begin(), op_devs.end(), d);
        }))
        return {none + "the commands are on device " + dev_list(f.devs) + ", the ops on " + dev_list(op_devs) +
                ": were they traced on the device the ops ran on?"};
    if (f.ts_max < op_min || f.ts_min > op_max)
        return {none + "no command falls inside any op's time window (commands issued from " +
                std::to_string(f.ts_min) + " to " + std::to_string(f.ts_max) + " ns, ops from " +
                std::to_string(op_min) + " to " + std::to_string(op_max) +
                " ns, CLOCK_MONOTONIC): are the two files from the same run (and the same boot)?"};
    return {none + "no command lies in an op's " + (j.mode == JoinMode::Offset ? "byte range" : "tag") +
            " while the op ran (" + std::to_string(f.data) + " data commands)"};
}

}  // namespace kvio::validate
