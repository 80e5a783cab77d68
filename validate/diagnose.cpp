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
    if (devs.size() < 16 && std::find(devs.begin(), devs.end(), c.dev) == devs.end()) devs.push_back(c.dev);
}

static std::string dev_list(const std::vector<uint32_t>& devs) {
    std::string s;
    for (uint32_t d : devs) s += (s.empty() ? "" : ", ") + dev_string(decode_kernel_dev(d));
    return s;
}

std::vector<std::string> join_warnings(const SemanticTrace& t, const JoinResult& j, const CommandFacts& f) {
    if (t.ops.empty() || j.joined.cmds) return {};
    const std::string none = "no command joined any op: ";
    if (!f.data) return {none + "the commands file has no read or write commands"};
    if (j.mode == JoinMode::Key) {
        if (!f.with_key) return {none + "--join key, but no command carries a key (only NVMe KV command-set traces do); try --join auto"};
        if (std::none_of(t.ops.begin(), t.ops.end(), [](const ObjectOp& o) { return !o.key.empty(); }))
            return {none + "--join key, but no op in " + t.path + " carries a key"};
    }
    if (j.mode == JoinMode::UserData) {
        if (!f.with_user_data)
            return {none + "--join user_data, but no command carries user_data with a trace id (only the io_uring and uring_cmd "
                           "engines tag their commands); try --join auto"};
        if (std::none_of(t.ops.begin(), t.ops.end(), [](const ObjectOp& o) { return o.trace_id != 0; }))
            return {none + "--join user_data, but no op in " + t.path + " carries a trace_id"};
    }
    std::vector<uint32_t> op_devs;
    uint64_t op_min = UINT64_MAX, op_max = 0;
    for (const ObjectOp& o : t.ops) {
        if (std::find(op_devs.begin(), op_devs.end(), o.dev) == op_devs.end()) op_devs.push_back(o.dev);
        op_min = std::min(op_min, o.ts_start);
        op_max = std::max(op_max, o.ts);
    }
    if (j.mode == JoinMode::Offset &&
        std::none_of(f.devs.begin(), f.devs.end(), [&](uint32_t d) { return std::count(op_devs.begin(), op_devs.end(), d); }))
        return {none + "the commands are on device " + dev_list(f.devs) + ", the ops on " + dev_list(op_devs) +
                ": were they traced on the device the ops ran on?"};
    if (f.ts_max < op_min || f.ts_min > op_max)
        return {none + "no command falls inside any op's time window (commands issued from " + std::to_string(f.ts_min) + " to " +
                std::to_string(f.ts_max) + " ns, ops from " + std::to_string(op_min) + " to " + std::to_string(op_max) +
                " ns, CLOCK_MONOTONIC): are the two files from the same run (and the same boot)?"};
    return {none + "no command lies in an op's " + (j.mode == JoinMode::Offset ? "byte range" : "tag") +
            " while the op ran (" + std::to_string(f.data) + " data commands)"};
}

}  // namespace kvio::validate
