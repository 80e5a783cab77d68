// The kvio.semantic/1 JSONL that `kvio gen --semantic` writes (docs/formats.md): one meta line, then
// one record per object op with the whole-disk byte ranges its bytes reached.
#pragma once
#include <cstdint>
#include <fstream>
#include <memory>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/output_file.h"
#include "common/zstd_stream.h"
#include "workload/execute.h"
#include "workload/record.h"
#include "workload/target.h"

namespace kvio::workload {

/// The meta line: {"type":"meta","schema":"kvio.semantic/1", model, geometry, engine, layout, target,
/// dev, lba_bytes, block_align, mdts_bytes, max_io_bytes, header_bytes, slot_bytes, data_base, ...,
/// "verify": what the op records' checksums cover (workload/pattern.h)}.
nlohmann::ordered_json semantic_meta(const Record& r, const TargetInfo& t, Verify verify = Verify::Stamps);

/// One op record: {"op","object_id","trace_id","key","bytes","payload_bytes","dev","dev_off",
/// "extents":[[dev_off,len],...],"ts_start","ts","engine","transfers","checksum","error"?}.
nlohmann::ordered_json semantic_op(const ObjectOp& op, const OpResult& res, const TargetInfo& t,
                                   const std::string& engine,
                                   const std::vector<std::pair<uint64_t, uint64_t>>& extents);

/// Streams lines to a file, each flushed as it is written; throws kvio::Error when it cannot be written.
/// A path ending in ".zst" is one zstd frame (common/zstd_stream.h): each line is flushed through the compressor
/// as it is written (a killed gen leaves every completed op decodable), close() — or the destructor — ends the frame.
class SemanticWriter {
public:
    explicit SemanticWriter(const std::string& path);
    ~SemanticWriter();
    SemanticWriter(const SemanticWriter&) = delete;
    SemanticWriter& operator=(const SemanticWriter&) = delete;
    void write(const nlohmann::ordered_json& line);
    /// Ends the frame and renames the file to its path. After a failed write nothing is left under the path.
    void close();
    /// Where the lines are until close(): PATH.tmp-PID (common/output_file.h, PendingRename), so a full disk never
    /// leaves a cut file under PATH; a SIGKILLed gen leaves its completed ops there, and the next writer of PATH
    /// removes it.
    const std::string& write_path() const { return pending_.write_path(); }

private:
    void put(std::string_view text, ZstdCompressor::Mode mode);
    std::string path_;
    PendingRename pending_;
    std::ofstream out_;
    bool failed_ = false;
    std::unique_ptr<ZstdCompressor> zstd_;  ///< null: plain text
    std::string zbuf_;
    bool closed_ = false;
};

}  // namespace kvio::workload
