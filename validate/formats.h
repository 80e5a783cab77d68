// Which file format `kvio validate` reads: detected from the first record (docs/validate.md, "Input formats"),
// or forced with --semantic-format / --commands-format.
#pragma once
#include <memory>
#include <string>

#include "validate/commands.h"
#include "validate/semantic.h"

namespace kvio::validate {

/// Object ops: kvio.semantic/1 (kvio gen) or the LMCache kvio trace (schema 2).
enum class SemanticFormat { Auto, Kvio, Lmcache };
/// Device commands: kvio.events/1 (or its binary capture) or the NVMe io_uring_cmd monitor JSONL.
enum class CommandsFormat { Auto, Kvio, Monitor };

/// "auto" | "kvio" | "lmcache"; throws kvio::Error otherwise.
SemanticFormat parse_semantic_format(const std::string& s);
/// "auto" | "kvio" | "monitor"; throws kvio::Error otherwise.
CommandsFormat parse_commands_format(const std::string& s);

/// The format of `path` from its first non-blank line (peeked: a pipe still reads whole, common/input_file.h):
/// `"event_type":"kvio_meta"` is LMCache, anything else kvio (whose reader then says what is wrong).
SemanticFormat detect_semantic_format(const std::string& path);
/// The binary capture's magic is kvio; a first record whose `event_type` is nvme_cmd, nvme_cmp, cq_overflow,
/// clock_anchor or drops is the monitor; anything else kvio.
CommandsFormat detect_commands_format(const std::string& path);

/// Reads the object ops in format `f` (Auto: detected).
SemanticTrace read_semantic_as(const std::string& path, SemanticFormat f);
/// Opens the commands in format `f` (Auto: detected).
std::unique_ptr<CommandReader> open_commands(const std::string& path, CommandsFormat f);

}  // namespace kvio::validate
