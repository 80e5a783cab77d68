// A fio job that keeps a trace's shape over time: one stonewalled section per phase, concurrent sections for
// concurrent streams, idle sections for long idle gaps, loops for repeats. Rules: docs/distill.md "Phases".
#pragma once
#include <ostream>

#include <nlohmann/json.hpp>

#include "common/event_trace.h"
#include "distiller/fio_job.h"
#include "distiller/phases.h"
#include "distiller/profile.h"

namespace kvio::distiller {

/// What the phased job was built from, for --json and reports.
struct PhasePlan {
    std::vector<DataCmd> data;  ///< data_cmds(trace)
    std::vector<Phase> phases;  ///< detect_phases(data)
    size_t period = 0;          ///< phase_period(phases)
    std::string note;           ///< below_phase_minimum_note(data): also in the job's header; "" when none
};

/// Derives the job from `t` (one device, sorted) and its whole-run profile `whole`: detects phases with
/// `popt`; one phase without concurrent streams gives make_fio_job(whole)'s one-section job. Throws what
/// check_trace_health and derive_section throw. `plan`, when given, receives the phases.
FioJob make_phased_job(const EventTrace& t, const Profile& whole, const JobOptions& opt, const PhaseOptions& popt = {},
                       PhasePlan* plan = nullptr);

/// An idle section: one I/O on fio's null engine (no device command) and `gap_ns` of thinktime, stonewalled;
/// `before` names what follows it, for the comment.
FioSection idle_section(const std::string& name, uint64_t gap_ns, const std::string& before);

/// Writes the rest of a multi-section job after its first header lines: `notes` and `global_why` as ';' lines, what
/// was not inferred, "[global]" with job.options, then every section (comment, derivation lines, [name], options).
void write_job_body(std::ostream& o, const std::vector<std::string>& notes, const std::vector<std::string>& global_why,
                    const FioJob& job);

/// [{"begin","end","cmds","kind","idle_before_ms","mix"}...] of a plan's phases.
nlohmann::json phases_json(const PhasePlan& plan);

}  // namespace kvio::distiller
