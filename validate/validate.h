// `kvio validate` as a library call: read, project, join, score.
#pragma once
#include <functional>
#include <string>

#include "validate/formats.h"
#include "validate/join.h"
#include "validate/projection.h"
#include "validate/score.h"

namespace kvio::validate {

struct Options {
    std::string commands;  ///< kvio.events/1 JSONL or capture (kvio trace --events), or the NVMe monitor JSONL
    std::string semantic;  ///< kvio.semantic/1 JSONL (kvio gen --semantic), or the LMCache kvio trace
    SemanticFormat semantic_format = SemanticFormat::Auto;
    CommandsFormat commands_format = CommandsFormat::Auto;
    std::string record;  ///< optional record manifest (kvio gen --record)
    GeometryOverrides geometry;
    JoinMode join = JoinMode::Auto;
    /// Called for every command record in file order with the index (into the semantic trace's ops, read_semantic
    /// order) of the op the join attributed it to, or -1 (Joiner::add). Empty = not called. The timeline's flows.
    std::function<void(const Command&, int64_t op)> on_command;
};

/// Runs the whole validation; streams the commands file once (a pipe or /dev/stdin works: with Auto the
/// first 4096 command records are held for the mode choice, then joined). Both files may be zstd-compressed.
/// Ops whose device the semantic file does not name (an LMCache trace whose device_path is not on this machine)
/// take the device of the data commands among those first 4096 when they are all on one. Throws kvio::Error for
/// unreadable or malformed input (FILE:LINE: field ...).
Report run(const Options& o);

}  // namespace kvio::validate
