// The record manifest (`kvio gen --record`, schema_version 1): everything needed to reissue the
// identical object stream on another device, and plan_ops() which turns it back into object ops.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jsonl.h"
#include "workload/geometry.h"

namespace kvio::workload {

enum class OpKind { Store, Load };
/// "store" | "load".
const char* op_name(OpKind k);

enum class Layout { Slots, Files };
/// "slots" | "files"; parse throws kvio::Error on anything else.
const char* layout_name(Layout l);
Layout parse_layout(const std::string& s);

/// Where objects live and how bytes move. Bytes.
struct DeviceGeometry {
    std::string engine;  ///< "posix" | "io_uring" | "uring_cmd" | "cufile"
    Layout layout = Layout::Slots;
    uint32_t lba_bytes = 512;     ///< logical block size of the device
    uint64_t mdts_bytes = 0;      ///< max_hw_sectors_kb × 1024
    uint64_t max_io_bytes = 0;    ///< userspace split: every transfer is at most this long
    uint32_t block_align = 4096;  ///< slot alignment
    uint64_t header_bytes = 0;    ///< slot header written before the payload by a store (0 for files)
    uint64_t io_bytes = 0;        ///< payload bytes moved per object op: payload rounded up to lba_bytes
    uint64_t slot_bytes = 0;      ///< header + io_bytes rounded up to block_align (slots)
    uint64_t data_base = 0;       ///< target offset of slot 0 (after the metadata region)
    uint64_t capacity_bytes = 0;  ///< bytes of the target the layout may use
};

/// How the stream was shaped.
struct AccessPattern {
    std::string pattern = "store-then-load";  ///< or "interleaved"
    uint32_t iters = 1;
    uint32_t qd = 1;
    uint64_t num_chunks = 0;
    bool buffered = false;
};

/// One op of the stream: `seq` orders ops globally; `trace_id` = seq + 1 (user_data >> 32).
struct RecordOp {
    OpKind op = OpKind::Store;
    uint64_t seq = 0;
    uint32_t trace_id = 0;
};

struct RecordObject {
    uint64_t index = 0;          ///< object id: chunk × tp + rank
    uint64_t payload_bytes = 0;  ///< KV bytes of the object (per_rank_bytes)
    std::string key;             ///< "kvio/<model>/tp<T>/rank<R>/chunk<C>"
    std::vector<RecordOp> ops;
};

struct Record {
    int schema_version = 1;
    Geometry geometry;
    DeviceGeometry device;
    AccessPattern access;
    std::vector<RecordObject> objects;
};

/// The slots arithmetic, in one place. header_bytes = block_align (a 64-byte header padded to the
/// alignment); io_bytes = round_up(payload, lba); slot_bytes = round_up(header + io_bytes, block_align);
/// data_base = 1 MiB (metadata region, left untouched so the stream holds only object I/O, and a
/// re-run on the same device passes the first-MiB check). Files: header 0, slot 0, data_base 0.
/// Throws kvio::Error when block_align is not a multiple of lba_bytes.
void compute_layout(DeviceGeometry& d, uint64_t payload_bytes);
/// Target offset of slot `index`: data_base + index × slot_bytes.
uint64_t slot_offset(const DeviceGeometry& d, uint64_t index);
/// Object file name for the files layout: "kvobj-<index>.bin".
std::string object_file_name(uint64_t index);

/// Builds the record of a run: num_chunks × tp objects, ops in the order the pattern gives
/// (store-then-load: all stores then all loads; interleaved: store i, load i), repeated iters times.
Record make_record(const Geometry& g, const DeviceGeometry& d, const AccessPattern& a);

nlohmann::json record_to_json(const Record& r);
/// Parses and checks a manifest; errors name `where` and the field.
Record record_from_json(const nlohmann::json& j, const std::string& where);
/// The layout of every object (each slot sized for the largest payload) ends within 2^64 bytes:
/// else "WHERE: field 'payload_bytes': N with K objects is beyond any device ...".
void check_record_layout(const Record& r, const JsonSource& src);

/// One object operation to execute. Offsets are target offsets (device or file), bytes.
struct ObjectOp {
    OpKind op = OpKind::Store;
    uint64_t object_id = 0;
    uint32_t trace_id = 0;
    std::string key;
    uint64_t payload_bytes = 0;
    uint64_t io_bytes = 0;      ///< payload bytes transferred (payload rounded up to the LBA size)
    uint64_t header_bytes = 0;  ///< store: bytes written at `offset` before the payload
    uint64_t offset =
        0;  ///< target offset of the op's first byte: store = slot start, load = slot start + header (slots); 0 (files)
    std::string file;  ///< files layout: object file name inside the target directory
};

/// The record's ops in `seq` order with their slot offsets / file names.
std::vector<ObjectOp> plan_ops(const Record& r);

}  // namespace kvio::workload
