#include "validate/validate.h"

#include "validate/diagnose.h"
#include "validate/events.h"

namespace kvio::validate {

Report run(const Options& o) {
    constexpr size_t kPeek = 4096;  // command records auto-detection looks at
    SemanticTrace t = read_semantic(o.semantic);
    if (!o.record.empty()) merge_record_manifest(t.meta, o.record);
    ProjectionRules rules = resolve_rules(t.meta, o.geometry);
    EventsReader r(o.commands);
    CommandFacts facts;
    std::vector<Command> head;  // read once: what detection looked at is joined from here (a pipe cannot rewind)
    Command c;
    std::string why = "--join";
    JoinMode mode = o.join;
    if (mode == JoinMode::Auto) {
        while (head.size() < kPeek && r.next(c)) head.push_back(std::move(c));
        mode = choose_join_mode(t, head, why);
    }
    Joiner j(t, mode);
    auto take = [&](const Command& x) {
        facts.add(x);
        const int64_t op = j.add(x);
        if (o.on_command) o.on_command(x, op);
    };
    for (const Command& h : head) take(h);
    head = {};
    while (r.next(c)) take(c);
    Report rep = score(t, rules, j.finish());
    rep.join_reason = why;
    rep.warnings = join_warnings(t, rep.join, facts);
    rep.tracer_dropped = r.summary_dropped();
    rep.tracer_unmatched = r.summary_unmatched_completes();
    rep.events_summary = r.saw_summary();
    return rep;
}

}  // namespace kvio::validate
