// kvio.semantic/1 records of the storage tier's ops (docs/formats.md; workload/semantic.h), so `kvio validate`
// can join the device commands a simulation caused to the cache entries that caused them: one meta line, then
// one record per storage write ("store") or read ("load") with the whole-disk byte ranges of its bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "workload/semantic.h"
#include "workload/target.h"

namespace kvio::serving {

/// What one storage op did, for its record. Times CLOCK_MONOTONIC ns.
struct StorageOpRecord {
    bool store = true;
    std::string key;
    uint64_t payload_bytes = 0;  ///< the entry's bytes
    uint64_t bytes = 0;          ///< bytes moved (header + data, padded in direct modes)
    uint64_t header_bytes = 0;
    uint64_t ts_start = 0, ts = 0;
    uint32_t trace_id = 0;
    uint32_t transfers = 0;
    std::vector<std::pair<uint64_t, uint64_t>> extents;  ///< {dev_off, len} on the whole disk
    std::string error;
};

class StorageSemanticLog {
public:
    /// Creates `path` and writes the meta line: engine ("posix" | "io_uring"), layout ("files" | "slots"),
    /// buffered, header_bytes, max_io_bytes, qd, the target's device. Throws kvio::Error.
    StorageSemanticLog(const std::string& path, const workload::TargetInfo& t, const std::string& engine,
                       const std::string& layout, bool buffered, uint64_t header_bytes, uint64_t max_io_bytes,
                       uint32_t qd);
    /// A fresh trace_id for an op (also the high half of its transfers' user_data).
    uint32_t next_trace_id();
    /// Appends the op's record (thread-safe); object_id = the key's number (first seen = 1).
    void write(const StorageOpRecord& r);
    void close();

private:
    std::mutex mu_;
    workload::SemanticWriter out_;
    workload::TargetInfo target_;
    std::string engine_;
    uint32_t next_trace_ = 1;
    std::unordered_map<std::string, uint64_t> object_ids_;
};

}  // namespace kvio::serving
