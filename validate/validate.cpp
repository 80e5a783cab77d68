#include "validate/validate.h"

#include "validate/events.h"

namespace kvio::validate {

Report run(const Options& o) {
    SemanticTrace t = read_semantic(o.semantic);
    if (!o.record.empty()) merge_record_manifest(t.meta, o.record);
    ProjectionRules rules = resolve_rules(t.meta, o.geometry);
    std::string why = "--join";
    JoinMode mode = o.join == JoinMode::Auto ? choose_join_mode(t, o.commands, why) : o.join;
    Joiner j(t, mode);
    EventsReader r(o.commands);
    Command c;
    while (r.next(c)) j.add(c);
    Report rep = score(t, rules, j.finish());
    rep.join_reason = why;
    rep.tracer_dropped = r.summary_dropped();
    rep.tracer_unmatched = r.summary_unmatched_completes();
    rep.events_summary = r.saw_summary();
    return rep;
}

}  // namespace kvio::validate
