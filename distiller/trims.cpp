#include "distiller/trims.h"

#include <cmath>

#include "distiller/fidelity.h"
#include "distiller/profile.h"

namespace kvio::distiller {

std::vector<TrimRun> trim_runs(const std::vector<Cmd>& cmds, uint64_t min_discards) {
    std::vector<TrimRun> out;
    TrimRun cur;
    bool open = false;
    auto close = [&](size_t at) {
        if (open && cur.discards >= min_discards) {
            cur.end = at;
            out.push_back(cur);
        }
        open = false;
    };
    size_t last_discard = 0;
    for (size_t i = 0; i < cmds.size(); ++i) {
        const Cmd& c = cmds[i];
        if (c.op == Op::Read || c.op == Op::Write) {
            close(last_discard + 1);
            continue;
        }
        if (c.op != Op::Discard) continue;
        if (!open) cur = TrimRun{i, i, 0, 0}, open = true;
        ++cur.discards;
        cur.secure_erases += c.secure_erase;
        last_discard = i;
    }
    close(last_discard + 1);
    return out;
}

EventTrace discards_as_writes(const EventTrace& t, const TrimRun& run) {
    EventTrace s = empty_like(t);
    for (size_t i = run.begin; i < run.end; ++i) {
        if (t.cmds[i].op != Op::Discard) continue;
        s.cmds.push_back(t.cmds[i]);
        s.cmds.back().op = Op::Write;
    }
    s.records = s.cmds.size();
    return s;
}

FioSection trim_section(const EventTrace& t, const TrimRun& run, const JobOptions& opt, SectionSpec spec,
                        const std::string& name, std::vector<std::string>& not_inferred) {
    spec.trim = true;
    spec.flushes_per_write = 0;
    FioSection s = derive_section(profile_events(discards_as_writes(t, run)), opt, spec, not_inferred);
    s.name = name;
    s.comment = "discards " + std::to_string(run.begin) + "-" + std::to_string(run.end - 1) +
                " of the device's commands (" + std::to_string(run.discards) +
                ", no read or write among them): a trim phase; its values are the discards' "
                "own, measured as one direction (the derivation below calls them writes)";
    if (run.secure_erases)
        s.comment += "; " + std::to_string(run.secure_erases) +
                     " of them secure erases (rwbs DE), which fio issues as plain trims";
    return s;
}

nlohmann::json trim_flush_fidelity(const Profile& orig, const Profile& replay) {
    std::string why;
    const double o = double(orig.discard_cmds), r = double(replay.discard_cmds);
    return {{"discards",
             {{"orig", orig.discard_cmds},
              {"replay", replay.discard_cmds},
              {"err_pct", o > 0 ? 100.0 * std::abs(r - o) / o : 0.0},
              {"size_tv", tv_distance(orig.discard_sizes, replay.discard_sizes)}}},
            {"flushes_per_write", {{"orig", flush_rate(orig, why)}, {"replay", flush_rate(replay, why)}}}};
}

}  // namespace kvio::distiller
