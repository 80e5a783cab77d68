#include "validate/validate.h"

#include <algorithm>

#include "common/devinfo.h"
#include "validate/diagnose.h"
#include "validate/events.h"

namespace kvio::validate {

// The ops of a semantic file that names no device (dev 0) take the one device the data commands are on.
static std::vector<std::string> adopt_command_device(SemanticTrace& t, const std::vector<Command>& head) {
    std::vector<uint32_t> devs;
    for (const Command& c : head)
        if ((c.op == CmdOp::Read || c.op == CmdOp::Write) && c.bytes && c.dev &&
            std::find(devs.begin(), devs.end(), c.dev) == devs.end())
            devs.push_back(c.dev);
    if (devs.size() != 1)
        return {t.path + " names no device that exists here and the commands are on " + std::to_string(devs.size()) +
                " devices: the offset join cannot place the ops"};
    for (ObjectOp& op : t.ops) op.dev = devs[0];
    t.meta.dev = devs[0];
    t.meta.dev_str = dev_string(decode_kernel_dev(devs[0]));
    return {t.path + " names no device that exists here: its ops are taken to be on " + t.meta.dev_str +
            ", the commands' only device"};
}

Report run(const Options& o) {
    constexpr size_t kPeek = 4096;  // command records auto-detection looks at
    SemanticTrace t = read_semantic_as(o.semantic, o.semantic_format);
    if (!o.record.empty()) merge_record_manifest(t.meta, o.record);
    std::unique_ptr<CommandReader> reader = open_commands(o.commands, o.commands_format);
    CommandReader& r = *reader;
    CommandFacts facts;
    std::vector<Command> head;  // read once: what detection looked at is joined from here (a pipe cannot rewind)
    Command c;
    if (o.join == JoinMode::Auto || t.dev_unknown)
        while (head.size() < kPeek && r.next(c)) head.push_back(std::move(c));
    std::vector<std::string> notes;
    if (t.dev_unknown) notes = adopt_command_device(t, head);
    ProjectionRules rules = resolve_rules(t.meta, o.geometry);
    std::string why = "--join";
    JoinMode mode = o.join;
    if (mode == JoinMode::Auto) mode = choose_join_mode(t, head, why);
    Joiner j(t, mode);
    // A monitor record whose device is not known here (dev 0: a disk name of another machine) is taken to be on
    // the ops' device when they are all on one.
    uint32_t sole_dev = t.ops.empty() ? 0 : t.ops.front().dev;
    for (const ObjectOp& op : t.ops)
        if (op.dev != sole_dev) sole_dev = 0;
    auto take = [&](Command& x) {
        if (!x.dev) x.dev = sole_dev;
        facts.add(x);
        const int64_t op = j.add(x);
        if (o.on_command) o.on_command(x, op);
    };
    for (Command& h : head) take(h);
    head = {};
    while (r.next(c)) take(c);
    Report rep = score(t, rules, j.finish());
    rep.join_reason = why;
    rep.warnings = join_warnings(t, rep.join, facts);
    rep.nothing_measured = nothing_measured(t, rep.join, facts);
    for (auto& w : r.warnings()) rep.warnings.push_back(std::move(w));
    for (auto& n : notes) rep.warnings.push_back(std::move(n));
    if (t.skipped_deletes)
        rep.warnings.push_back(t.path + ": " + std::to_string(t.skipped_deletes) +
                               " delete records: no I/O is projected for them, not scored");
    rep.semantic_format = t.format;
    rep.commands_format = r.format();
    rep.tracer_dropped = r.summary_dropped();
    rep.tracer_unmatched = r.summary_unmatched_completes();
    rep.events_summary = r.saw_summary();
    return rep;
}

}  // namespace kvio::validate
