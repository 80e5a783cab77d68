// The reference kvio tooling's kvio_record.json (schema_version 1; docs/formats.md, "kvio_record.json"), read into
// the same Record as kvio's own manifest, so `kvio replay --record` takes either.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "workload/record.h"

namespace kvio::workload {

/// True when `j` is a kvio_record.json rather than kvio's manifest: its access_pattern is a string, or its
/// device_geometry has use_uring_cmd.
bool is_kvio_record_json(const nlohmann::json& j);

/// Parses a kvio_record.json: {schema_version 1, source?, model, geometry?, device_geometry{engine, use_uring_cmd?,
/// mdts_bytes, block_align, header_bytes, slot_bytes, capacity_bytes; lba_bytes?, max_io_bytes?},
/// access_pattern "store-all-then-load-all" (or "interleaved"), objects[{index, part?, payload_bytes, ops}]}.
/// `ops` lists "store"/"load" strings or {op, seq?, trace_id?} objects; without seq the pattern orders them (round
/// by round: every object's store, then every object's load), trace_id = seq + 1. Parts k and v of one index are
/// separate objects: when indexes repeat, each object takes its position in the list as its slot. The geometry is
/// kvio's (geometry_from_json) when it parses as such, else the model name and the largest payload.
/// Errors name `where` and the field, as record_from_json.
Record record_from_kvio_record_json(const nlohmann::json& j, const std::string& where);

/// Either manifest: kvio_record.json (is_kvio_record_json) or kvio's own (record_from_json).
Record read_record_any(const nlohmann::json& j, const std::string& where);

}  // namespace kvio::workload
