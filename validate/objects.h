// `kvio validate --objects`: per object (per file) projected vs measured device bytes and commands, for a semantic
// file whose ops name their file (`kvio import vllm-fs|lmcache-disk`, docs/engine_layouts.md) joined to a
// `kvio trace --files` events stream by file identity (validate/files.h), not by offset or time.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/projection.h"

namespace kvio::validate {

/// One object op against the commands its file got in the op's direction (store: writes, load: reads).
struct ObjectRow {
    OpKind kind = OpKind::Store;
    uint64_t object_id = 0;
    std::string key, path, fs_dev;
    uint64_t ino = 0, gen = 0;
    uint64_t projected_bytes = 0, projected_cmds = 0;  ///< project() of the op under the resolved rules
    uint64_t measured_bytes = 0, measured_cmds = 0;    ///< device commands attributed to the file, that direction
    bool bytes_match() const { return projected_bytes == measured_bytes; }
    bool cmds_match() const { return projected_cmds == measured_cmds; }
};

/// Every op of the semantic file, in its order, and the stream's totals.
struct ObjectsReport {
    std::vector<ObjectRow> rows;
    ProjectionRules rules;
    uint64_t bytes_exact = 0, cmds_exact = 0;  ///< rows whose bytes / command count equal the projection
    uint64_t projected_bytes = 0, measured_bytes = 0;
    uint64_t cmds = 0, unattributed_cmds = 0;  ///< read/write commands of the stream; those with no file
    uint64_t other_file_cmds = 0;              ///< commands carrying bytes of files no op names (each once)
    /// files with a store and no load, and with a load and no store (an engine stores a block before it loads it,
    /// and a load of a block stored in this run is what the benchmark measures; docs/engine_layouts.md)
    uint64_t stored_not_loaded = 0, loaded_not_stored = 0;
    EventsTally events;  ///< the stream's closing summary, dropped records and lost completions
};

/// Reads `semantic_path` (kvio.semantic/1 whose every op has `ino`, `fs_dev`, `gen`) and the events at
/// `events_path`, joins commands to ops by file (fs_dev, ino, gen) and projects each op (docs/validate.md's rules,
/// resolved from the meta and `ov`). Throws kvio::Error "FILE:LINE: field 'ino': ... (import it with kvio import)"
/// for an op without a file, the readers' and resolve_rules' errors, and "EVENTS: no closing summary ..." when the
/// stream is cut (no closing summary) unless `accept_partial`; a cut stream, dropped records and lost completions
/// are warned of (common/warn.h) and counted in `events`.
ObjectsReport join_objects(const std::string& semantic_path, const std::string& events_path,
                           const GeometryOverrides& ov, bool accept_partial = false);

/// The share of ops whose bytes are exact, percent (0 with no op): what --fail-below gates for --objects.
double objects_bytes_exact_pct(const ObjectsReport& r);

/// One text row per op (kind, object, key, projected and measured bytes and commands, match, path), then totals.
void print_objects_report(std::ostream& os, const ObjectsReport& r);

/// {"schema":"kvio.validate.objects/1","ops":N,"bytes_exact":N,"cmds_exact":N,"projected_bytes","measured_bytes",
/// "cmds","unattributed_cmds","other_file_cmds","kernel_limit_bytes","stored_not_loaded","loaded_not_stored",
/// "events_summary" (false: cut),"dropped","lost_completions","objects":[{"op","object_id","key","path",
/// "fs_dev","ino","gen","projected_bytes","measured_bytes","projected_cmds","measured_cmds","bytes_match",
/// "cmds_match"}]}.
nlohmann::json objects_report_json(const ObjectsReport& r);

}  // namespace kvio::validate
