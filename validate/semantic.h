// Reader of kvio.semantic/1 (kvio gen --semantic) and the record manifest (kvio gen --record).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/jsonl.h"
#include "validate/types.h"

namespace kvio::validate {

/// The meta line of a semantic trace, plus what a record manifest adds. 0 / "" = not given.
struct SemanticMeta {
    std::string engine;  ///< "posix", "io_uring", "uring_cmd", "cufile"
    std::string layout;  ///< "slots" or "files"
    std::string model;
    uint32_t dev = 0;             ///< kernel dev_t of the whole disk the ops reach
    std::string dev_str;          ///< "MAJ:MIN" as written
    uint64_t lba_bytes = 0;       ///< namespace / logical block size, bytes
    uint64_t block_align = 0;     ///< the engine pads and aligns every I/O to this, bytes
    uint64_t mdts_bytes = 0;      ///< NVMe maximum data transfer size, bytes (passthrough limit)
    uint64_t max_io_bytes = 0;    ///< the engine's userspace transfer cap (--max-io), bytes; 0 = none
    uint64_t header_bytes = 0;    ///< slot header a store writes before the payload, bytes
    uint64_t max_sectors_kb = 0;  ///< the device's queue/max_sectors_kb when gen ran, KiB; 0 = not recorded
    bool buffered = false;        ///< posix --buffered: commands come from page-cache writeback
};

struct SemanticTrace {
    std::string path;
    SemanticMeta meta;
    std::vector<ObjectOp> ops;               ///< in file order
    std::string format = "kvio.semantic/1";  ///< or "lmcache-kvio/2" (validate/semantic_lmcache.h)
    uint64_t skipped_deletes = 0;            ///< LMCache `delete` records: no I/O to project, not scored
    bool dev_unknown = false;  ///< the ops' device was not named (dev 0): validate takes the commands' only device
};

/// Reads a kvio.semantic/1 JSONL file: meta line first, then one record per object op.
/// Throws kvio::Error "FILE:LINE: field 'F': ..." on malformed input.
SemanticTrace read_semantic(const std::string& path);

/// The geometry checks of the meta (engine known, lba_bytes a power of two from 512 to 65536, block_align a
/// multiple of 512 and of lba_bytes, limits whole sectors up to 4 GiB, header up to 4 GiB), for every semantic
/// format. Throws "FILE:LINE: field 'F': ...".
void check_semantic_geometry(const SemanticMeta& m, const JsonSource& src);

/// Fills fields the meta left at 0/"" from a record manifest's `device_geometry` (schema_version 1).
/// Throws kvio::Error naming the file and field on malformed input.
void merge_record_manifest(SemanticMeta& meta, const std::string& record_path);

/// queue/max_sectors_kb of device `dev` from a kvio.trace/1 document's `devices` list; 0 when absent.
uint64_t max_sectors_kb_from_trace_json(const std::string& trace_json_path, uint32_t dev);

}  // namespace kvio::validate
