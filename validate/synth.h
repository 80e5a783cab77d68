// Synthetic inputs for validate: a kvio.semantic/1 file and the kvio.events/1 command stream that
// the projection says it causes, plus untagged noise. For benchmarks (10 M commands against 100 k
// objects) and tests; the commands are exact by construction, so a correct validate scores 100 %.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "validate/semantic.h"
#include "validate/types.h"

namespace kvio::validate {

struct SynthSpec {
    uint64_t objects = 1000;              ///< object ops in total (half stores, then half loads of the same objects)
    uint64_t object_bytes = 32ull << 20;  ///< payload bytes per object
    uint64_t header_bytes = 4096;         ///< slot header (padded to block_align; kvio gen writes block_align)
    uint64_t slots = 0;                   ///< slots on the device; 0 = one per object (loads reuse them)
    uint64_t noise_per_op = 1;            ///< untagged 4 KiB writes in the metadata region during each op
    std::string engine = "posix";         ///< "io_uring" tags commands with user_data = trace_id << 32 | n
    uint64_t max_io_bytes = 512 << 10;
    uint64_t max_sectors_kb = 1280;
    uint64_t lba_bytes = 512, block_align = 4096;
    std::string dev = "7:0";
};

/// The meta the generator writes for `s` (slots layout).
SemanticMeta synth_meta(const SynthSpec& s);

/// Generates ops and their commands in time order: `on_op` once per op (before its commands),
/// `on_cmd` for each command (noise included). Returns the number of commands.
uint64_t synth_generate(const SynthSpec& s, const std::function<void(const ObjectOp&)>& on_op,
                        const std::function<void(const Command&)>& on_cmd);

/// Writes `semantic_path` (kvio.semantic/1) and `events_path` (kvio.events/1, with a summary line).
/// Returns the number of command records. Throws kvio::Error when a file cannot be written.
uint64_t synth_write(const SynthSpec& s, const std::string& semantic_path, const std::string& events_path);

}  // namespace kvio::validate
