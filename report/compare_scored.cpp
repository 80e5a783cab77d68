#include "report/compare_scored.h"

#include <utility>

#include "common/event_trace.h"
#include "distiller/fidelity.h"
#include "distiller/phases.h"
#include "distiller/profile.h"
#include "distiller/timeline.h"
#include "replay/stream.h"

namespace kvio::report {

namespace {

/// The stream as the distiller's trace of one device, for its profile and windows; its commands are moved, not
/// copied (a capture can hold millions).
kvio::EventTrace as_trace(replay::DeviceStream&& s) {
    kvio::EventTrace t;
    t.path = s.path;
    t.dev = s.dev;
    t.disk = s.disk;
    t.cmds = std::move(s.cmds);
    return t;
}

}  // namespace

replay::Comparison compare_scored(const std::string& a, const std::string& dev_a, const std::string& b,
                                  const std::string& dev_b) {
    replay::DeviceStream sa = replay::load_stream(a, dev_a, "--dev-a MAJ:MIN");
    replay::DeviceStream sb = replay::load_stream(b, dev_b, "--dev-b MAJ:MIN");
    replay::Comparison c = replay::compare_loaded(sa, sb);
    const kvio::EventTrace ta = as_trace(std::move(sa)), tb = as_trace(std::move(sb));
    const auto da = distiller::data_cmds(ta.cmds), db = distiller::data_cmds(tb.cmds);
    if (da.empty() || db.empty()) return c;  // profile_events refuses a trace without reads or writes
    const distiller::Fidelity f = distiller::score(distiller::profile_events(ta), distiller::profile_events(tb));
    const distiller::TimeFidelity tf = distiller::score_over_time(da, db);
    c.fidelity = distiller::to_json(f);
    c.fidelity["time_resolved"] = distiller::to_json(tf);
    c.fidelity_summary = distiller::summary_line(f, tf);
    c.fidelity["summary"] = c.fidelity_summary;
    return c;
}

}  // namespace kvio::report
