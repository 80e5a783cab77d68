#include "workload/semantic.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace kvio::workload {

nlohmann::ordered_json semantic_meta(const Record& r, const TargetInfo& t, Verify verify) {
    const auto& d = r.device;
    return {
        {"type", "meta"},
        {"schema", "kvio.semantic/1"},
        {"model", r.geometry.model.name},
        {"geometry", geometry_to_json(r.geometry)},
        {"engine", d.engine},
        {"layout", layout_name(d.layout)},
        {"target", t.path},
        {"target_kind", target_kind_name(t.kind)},
        {"dev", dev_string(t.dev.whole_disk)},
        {"disk", t.dev.whole_disk_name},
        {"part_start_bytes", t.part_start_bytes},
        {"lba_bytes", d.lba_bytes},
        {"block_align", d.block_align},
        {"mdts_bytes", d.mdts_bytes},
        {"max_sectors_kb", t.dev.max_sectors_kb},  // the block layer's split when the run started (kvio validate)
        {"max_io_bytes", d.max_io_bytes},
        {"header_bytes", d.header_bytes},
        {"io_bytes", d.io_bytes},
        {"slot_bytes", d.slot_bytes},
        {"data_base", d.data_base},
        {"pattern", r.access.pattern},
        {"iters", r.access.iters},
        {"qd", r.access.qd},
        {"buffered", r.access.buffered},
        {"clock", "CLOCK_MONOTONIC"},
        {"verify", verify_name(verify)},
    };
}

nlohmann::ordered_json semantic_op(const ObjectOp& op, const OpResult& res, const TargetInfo& t,
                                   const std::string& engine,
                                   const std::vector<std::pair<uint64_t, uint64_t>>& extents) {
    nlohmann::ordered_json ext = nlohmann::ordered_json::array();
    for (const auto& [off, len] : extents) ext.push_back({off, len});
    char sum[24];
    std::snprintf(sum, sizeof sum, "0x%016llx", (unsigned long long)res.checksum);
    nlohmann::ordered_json j = {
        {"op", op_name(op.op)},
        {"object_id", op.object_id},
        {"trace_id", op.trace_id},
        {"key", op.key},
        {"bytes", res.bytes},
        {"payload_bytes", op.payload_bytes},
        {"dev", dev_string(t.dev.whole_disk)},
        {"dev_off", extents.empty() ? 0 : extents.front().first},
        {"extents", ext},
        {"ts_start", res.ts_start},
        {"ts", res.ts},
        {"engine", engine},
        {"transfers", res.transfers},
        {"checksum", sum},
    };
    if (!res.error.empty()) j["error"] = res.error;
    return j;
}

SemanticWriter::SemanticWriter(const std::string& path)
    : path_(path), pending_(path), out_(pending_.write_path(), std::ios::trunc | std::ios::binary) {
    if (!out_) throw Error(path + ": cannot write: " + std::strerror(errno));
    if (has_zst_suffix(path)) zstd_ = std::make_unique<ZstdCompressor>();
}

SemanticWriter::~SemanticWriter() {
    try {
        close();
    } catch (...) {}
}

void SemanticWriter::put(std::string_view text, ZstdCompressor::Mode mode) {
    if (zstd_) {
        zbuf_.clear();
        zstd_->compress(text, zbuf_, mode);
        text = zbuf_;
    }
    out_.write(text.data(), std::streamsize(text.size()));
    out_.flush();
    if (!out_) {
        const int e = errno;
        failed_ = true;
        out_.close();
        pending_.discard();  // a cut file is never left, under the path or beside it
        throw Error(path_ + ": write failed: " + std::strerror(e));
    }
}

void SemanticWriter::write(const nlohmann::ordered_json& line) {
    // One write per op (an op moves KiB to GiB): a killed gen still leaves every op it completed.
    put(line.dump() + '\n', ZstdCompressor::Mode::Flush);
}

void SemanticWriter::close() {
    if (closed_) return;
    closed_ = true;
    if (failed_) return;
    if (zstd_) put({}, ZstdCompressor::Mode::End);
    out_.flush();
    if (!out_) {
        const int e = errno;
        out_.close();
        pending_.discard();
        throw Error(path_ + ": write failed: " + std::strerror(e));
    }
    out_.close();
    pending_.commit();
}

}  // namespace kvio::workload
