#include "workload/serving/tiers/storage_semantic.h"

#include "common/devinfo.h"

namespace kvio::serving {

StorageSemanticLog::StorageSemanticLog(const std::string& path, const workload::TargetInfo& t,
                                       const std::string& engine, const std::string& layout, bool buffered,
                                       uint64_t header_bytes, uint64_t max_io_bytes, uint32_t qd)
    : out_(path), target_(t), engine_(engine) {
    out_.write({
        {"type", "meta"},
        {"schema", "kvio.semantic/1"},
        {"source", "kvio simulate (storage tier)"},
        {"engine", engine},
        {"layout", layout},
        {"target", t.path},
        {"target_kind", workload::target_kind_name(t.kind)},
        {"dev", dev_string(t.dev.whole_disk)},
        {"disk", t.dev.whole_disk_name},
        {"part_start_bytes", t.part_start_bytes},
        {"lba_bytes", 4096},  // what a payload is padded to (kvio validate's rule); the device's own is below
        {"device_lba_bytes", t.lba_bytes},
        {"block_align", 4096},
        {"mdts_bytes", t.mdts_bytes},
        {"max_sectors_kb", t.dev.max_sectors_kb},
        {"max_io_bytes", max_io_bytes},
        {"header_bytes", header_bytes},
        {"qd", qd},
        {"buffered", buffered},
        {"clock", "CLOCK_MONOTONIC"},
        {"verify", "none"},
    });
}

uint32_t StorageSemanticLog::next_trace_id() {
    std::lock_guard<std::mutex> g(mu_);
    return next_trace_++;
}

void StorageSemanticLog::write(const StorageOpRecord& r) {
    std::lock_guard<std::mutex> g(mu_);
    auto [it, fresh] = object_ids_.try_emplace(r.key, object_ids_.size() + 1);
    (void)fresh;
    workload::ObjectOp op;
    op.op = r.store ? workload::OpKind::Store : workload::OpKind::Load;
    op.object_id = it->second;
    op.trace_id = r.trace_id;
    op.key = r.key;
    op.payload_bytes = r.payload_bytes;
    op.io_bytes = r.bytes - r.header_bytes;
    op.header_bytes = r.store ? r.header_bytes : 0;
    workload::OpResult res;
    res.ts_start = r.ts_start;
    res.ts = r.ts;
    res.bytes = r.bytes;
    res.transfers = r.transfers;
    res.error = r.error;
    out_.write(workload::semantic_op(op, res, target_, engine_, r.extents));
}

void StorageSemanticLog::close() {
    std::lock_guard<std::mutex> g(mu_);
    out_.close();
}

}  // namespace kvio::serving
