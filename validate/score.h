// Scores: how close the joined (measured) commands of each op are to its projection.
#pragma once
#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/join.h"
#include "validate/projection.h"
#include "validate/semantic.h"

namespace kvio::validate {

/// Min, max and count of command sizes (bytes); min is 0 when count is 0.
struct SizeStats {
    uint64_t cmds = 0, bytes = 0, min = 0, max = 0;
};

/// Scores over one set of ops (one op kind, or all). Ops whose record carries "error" are not scored.
struct Scores {
    uint64_t objects = 0;             ///< scored ops
    uint64_t exact_match = 0;         ///< measured command count and total bytes equal the projection
    uint64_t count_match = 0;         ///< measured command count equals the projection
    uint64_t per_cmd_size_match = 0;  ///< the multiset of measured sizes equals the projected multiset
    uint64_t no_cmds = 0;             ///< ops that no command joined
    uint64_t failed_ops = 0;          ///< ops with "error", not scored
    uint64_t abs_err_bytes = 0;       ///< Σ |measured − projected| bytes over ops
    SizeStats measured, projected;
    /// WAPE = Σ|measured − projected| / Σ measured bytes; NaN when nothing was measured but something projected.
    double wape = 0;
    /// Total variation distance between measured and projected command-size distributions, bins
    /// floor(log2(bytes)): TV = ½ Σ_k |p_k − q_k| (0 identical, 1 disjoint; 1 when exactly one side is empty).
    double size_tv = 0;
    std::array<uint64_t, kSizeBins> measured_bins{}, projected_bins{};
};

struct Report {
    Scores all;
    std::array<Scores, kOpKinds> per_op;  ///< indexed by OpKind
    JoinResult join;                      ///< counters (ops tallies moved out)
    std::string join_reason;              ///< why this join mode
    std::vector<std::string> warnings;    ///< why nothing joined (validate/diagnose.h), printed as "warning: ..."
    /// Non-empty: the commands hold nothing for the ops (none at all, or none on their devices) and nothing joined:
    /// the scores measure no trace of these ops (validate/diagnose.h nothing_measured). `kvio validate` exits 1.
    std::string nothing_measured;
    ProjectionRules rules;
    uint64_t tracer_dropped = 0;    ///< `dropped` of the events summary
    uint64_t tracer_unmatched = 0;  ///< `unmatched_completes` of the events summary (commands missing)
    bool events_summary = false;    ///< the events file ended with a summary record
    bool buffered = false;          ///< posix --buffered: projection is not per-op exact
    std::string semantic_format = "kvio.semantic/1";  ///< SemanticTrace::format
    std::string commands_format = "kvio.events/1";    ///< CommandReader::format
};

/// Projects every op and compares it with its tallies in `join` (whose `ops` is consumed).
Report score(const SemanticTrace& t, const ProjectionRules& rules, JoinResult join);

/// The report as JSON: objects, exact_match, count_match, per_cmd_size_match, wape, size_tv,
/// untagged_cmds, untagged_bytes, per_op {store, load}, join {...}, projection {...} (docs/validate.md).
nlohmann::json report_json(const Report& r);

/// The one-line summary (`exact-match 230/230 (100.00%)  WAPE 0.0000%  ...`), without newline.
std::string summary_line(const Report& r);

/// Summary line, per-op table, join and projection lines.
void print_report(std::ostream& os, const Report& r);

}  // namespace kvio::validate
