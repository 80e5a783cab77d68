#include "validate/projection.h"

#include <algorithm>

#include "common/error.h"

namespace kvio::validate {

static bool is_passthrough_engine(const std::string& e) { return e == "uring_cmd"; }

ProjectionRules resolve_rules(const SemanticMeta& meta, const GeometryOverrides& ov) {
    ProjectionRules r;
    r.engine = meta.engine;
    r.layout = meta.layout.empty() ? "slots" : meta.layout;
    if (r.layout != "slots" && r.layout != "files")
        throw Error("semantic meta: field 'layout': expected \"slots\" or \"files\", got \"" + r.layout + "\"");
    r.files = r.layout == "files";
    r.passthrough = is_passthrough_engine(meta.engine);

    uint64_t lba = ov.lba_bytes ? ov.lba_bytes : meta.lba_bytes;
    if (!lba) throw Error("the LBA size is unknown: the semantic meta has no lba_bytes; pass --lba-bytes");
    r.lba_bytes = lba;
    r.lba_source = ov.lba_bytes ? "--lba-bytes" : "meta lba_bytes";
    r.block_align = meta.block_align ? meta.block_align : lba;
    r.header_bytes = ov.header_bytes_set ? ov.header_bytes : meta.header_bytes;

    uint64_t max_io = ov.max_io_bytes ? ov.max_io_bytes : meta.max_io_bytes;
    std::string max_io_src = ov.max_io_bytes ? "--max-io-bytes" : "meta max_io_bytes";
    if (r.passthrough) {
        uint64_t mdts = ov.mdts_bytes ? ov.mdts_bytes : meta.mdts_bytes;
        if (!mdts)
            throw Error("engine " + meta.engine +
                        " splits at MDTS, but the semantic meta has no mdts_bytes; pass --mdts-bytes");
        std::string mdts_src = ov.mdts_bytes ? "--mdts-bytes" : "meta mdts_bytes";
        if (max_io && max_io < mdts) {
            r.engine_limit = max_io;
            r.engine_limit_source = max_io_src + " (< MDTS)";
        } else {
            r.engine_limit = mdts;
            r.engine_limit_source = mdts_src;
        }
    } else {
        if (max_io) {
            r.engine_limit = max_io;
            r.engine_limit_source = max_io_src;
        }
        uint64_t msk = 0;
        if (ov.max_sectors_kb) {
            msk = ov.max_sectors_kb;
            r.kernel_limit_source = "--max-sectors-kb";
        } else if (!ov.trace_json.empty() && (msk = max_sectors_kb_from_trace_json(ov.trace_json, meta.dev)))
            r.kernel_limit_source = ov.trace_json + " device " + meta.dev_str + " max_sectors_kb";
        else if (meta.max_sectors_kb) {
            msk = meta.max_sectors_kb;
            r.kernel_limit_source = "meta max_sectors_kb";
        }
        if (!msk)
            throw Error(
                "the block layer splits at the device's max_sectors_kb, which is unknown: the semantic meta has "
                "no max_sectors_kb" +
                std::string(
                    ov.trace_json.empty() ? "" : " and " + ov.trace_json + " has no entry for device " + meta.dev_str) +
                "; pass --trace-json TRACE.json (kvio trace --json) or --max-sectors-kb");
        r.kernel_limit = msk * 1024;
    }
    // The kernel cuts at logical-block multiples (blk_max_size_offset), engines at LBA multiples.
    auto fix = [&](uint64_t& lim, const char* what) {
        if (!lim) return;
        if (lim < r.lba_bytes)
            throw Error(std::string(what) + " " + std::to_string(lim) + " B is below the LBA size " +
                        std::to_string(r.lba_bytes) + " B");
        lim = lim / r.lba_bytes * r.lba_bytes;
    };
    fix(r.engine_limit, "the engine transfer limit");
    fix(r.kernel_limit, "the kernel transfer limit (max_sectors_kb)");
    return r;
}

// Cuts [0, len) into pieces of at most `lim` (0 = no limit), appending sizes.
static inline void cut(uint64_t len, uint64_t lim, std::vector<uint64_t>& out) {
    if (!lim) {
        if (len) out.push_back(len);
        return;
    }
    while (len > lim) {
        out.push_back(lim);
        len -= lim;
    }
    if (len) out.push_back(len);
}

// One userspace I/O of `len` bytes at logical (file) offset `lo`.
static void project_io(const ObjectOp& op, const ProjectionRules& r, uint64_t lo, uint64_t len,
                       std::vector<uint64_t>& out) {
    uint64_t pos = lo, end = lo + len;
    while (pos < end) {
        uint64_t chunk = r.engine_limit ? std::min(r.engine_limit, end - pos) : end - pos;
        if (op.extents.size() <= 1) {
            cut(chunk, r.kernel_limit, out);
        } else {
            // Several extents (files layout, or slots on a fragmented regular file): walk them in logical order;
            // each piece inside one extent becomes its own bio chain.
            uint64_t cpos = pos, cend = pos + chunk, ext_lo = 0;
            for (const Extent& e : op.extents) {
                uint64_t ext_hi = ext_lo + e.len;
                uint64_t a = std::max(cpos, ext_lo), b = std::min(cend, ext_hi);
                if (a < b) {
                    cut(b - a, r.kernel_limit, out);
                    cpos = b;
                }
                if (cpos >= cend) break;
                ext_lo = ext_hi;
            }
            if (cpos < cend) cut(cend - cpos, r.kernel_limit, out);  // beyond the mapped extents: unsplit
        }
        pos += chunk;
    }
}

void project(const ObjectOp& op, const ProjectionRules& r, std::vector<uint64_t>& out) {
    out.clear();
    uint64_t hdr = op.kind == OpKind::Store && r.header_bytes ? round_up(r.header_bytes, r.block_align) : 0;
    if (hdr) project_io(op, r, 0, hdr, out);
    project_io(op, r, hdr, round_up(op.bytes, r.lba_bytes), out);
}

}  // namespace kvio::validate
