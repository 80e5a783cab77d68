// Projection: the device commands each object op should cause, from device geometry alone.
// The rules and where each limit comes from are written down in docs/validate.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "validate/semantic.h"
#include "validate/types.h"

namespace kvio::validate {

/// Command-line overrides of the geometry; 0 = not given.
struct GeometryOverrides {
    uint64_t lba_bytes = 0;
    uint64_t mdts_bytes = 0;
    uint64_t max_io_bytes = 0;
    uint64_t max_sectors_kb = 0;
    uint64_t header_bytes = 0;
    bool header_bytes_set = false;  ///< --header-bytes 0 is meaningful (no header)
    std::string trace_json;         ///< kvio.trace/1 file whose device entry gives max_sectors_kb
};

/// The resolved splitting rules. Every size is bytes.
struct ProjectionRules {
    std::string engine, layout;
    bool passthrough = false;  ///< uring_cmd: the engine splits at MDTS, the kernel does not split
    bool files =
        false;  ///< layout "files" (I/Os of an op with several extents are split at their boundaries in any layout)
    uint64_t lba_bytes = 0;     ///< the payload I/O is padded to a multiple of this (kvio gen: io_bytes)
    uint64_t block_align = 0;   ///< the header I/O is padded to a multiple of this (slot alignment)
    uint64_t header_bytes = 0;  ///< a store's header, before padding
    uint64_t engine_limit = 0;  ///< stage 1, userspace: max_io_bytes (passthrough: min(max_io, MDTS)); 0 = none
    uint64_t kernel_limit = 0;  ///< stage 2, block layer: max_sectors_kb × 1024; 0 = none (passthrough)
    std::string engine_limit_source, kernel_limit_source, lba_source;
};

/// Resolves the rules from the meta (already merged with a record manifest) and overrides.
/// Throws kvio::Error naming the missing value and the flag that supplies it.
ProjectionRules resolve_rules(const SemanticMeta& meta, const GeometryOverrides& ov);

/// The command sizes `op` should cause under `rules`, in issue order, written to `out` (cleared first).
/// A store: header I/O (header_bytes padded to block_align) then payload I/O; a load: payload I/O;
/// the payload is op.bytes padded to lba_bytes. Each I/O is cut into engine_limit chunks from its start;
/// when the op has several extents (files layout, or slots on a regular file FIEMAP maps in pieces) each chunk
/// is cut at the extent boundaries (the extents list the op's bytes in order: header first); each piece is cut
/// into kernel_limit commands.
void project(const ObjectOp& op, const ProjectionRules& rules, std::vector<uint64_t>& out);

/// Rounds `v` up to a multiple of `a` (a > 0).
constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace kvio::validate
