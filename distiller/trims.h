// Discards as fio trim sections: runs of discard commands that form a phase of their own. Rules: docs/distill.md
// "Discards".
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_trace.h"
#include "distiller/fio_job.h"

namespace kvio::distiller {

/// A run of discards: commands [begin, end) of a trace's cmds with no read or write among them (flushes and
/// other commands do not break a run).
struct TrimRun {
    size_t begin = 0, end = 0;
    uint64_t discards = 0;
    uint64_t secure_erases = 0;  ///< of discards: rwbs "DE"
};

/// A run needs this many discards to be a phase of its own (the phase detector's minimum length).
constexpr uint64_t kMinTrimRun = 64;

/// The runs of `cmds` (sorted by ts_issue) with at least `min_discards` discards, in order.
std::vector<TrimRun> trim_runs(const std::vector<Cmd>& cmds, uint64_t min_discards = kMinTrimRun);

/// The discards of `t.cmds[run.begin, run.end)` as a trace of writes, so profile_events measures their sizes,
/// depth, sequentiality, range and timing as one direction.
EventTrace discards_as_writes(const EventTrace& t, const TrimRun& run);

/// The fio section of a run: derive_section() of its discards with rw=trim / randtrim (fio 3.33 has no mix of
/// trims with reads, only trimwrite, which trims each block before writing it), named `name`.
FioSection trim_section(const EventTrace& t, const TrimRun& run, const JobOptions& opt, SectionSpec spec,
                        const std::string& name, std::vector<std::string>& not_inferred);

/// The replay's discards and flushes against the original's: {"discards": {"orig","replay","err_pct","size_tv"},
/// "flushes_per_write": {"orig","replay"}} (flush_rate of each; the verify score of the command kinds the data
/// scores leave out).
nlohmann::json trim_flush_fidelity(const Profile& orig, const Profile& replay);

}  // namespace kvio::distiller
