// Reader of the LMCache kvio semantic trace (`LMCACHE_KVIO_TRACE=path`, schema 2; docs/formats.md): a
// `kvio_meta` first line, then one record per store/load/delete of a KV object part, read into the same
// SemanticTrace kvio.semantic/1 gives, so the projection, the join and the scores are the ones of kvio's own files.
#pragma once
#include <string>

#include "validate/semantic.h"

namespace kvio::validate {

/// Reads an LMCache kvio trace. The meta gives engine (`io_engine`), block_align, header_bytes and
/// max_data_transfer_size (the engine's transfer cap and, for uring_cmd, MDTS); kvio also reads `lba_bytes`,
/// `max_sectors_kb`, `mdts_bytes` and `dev` ("MAJ:MIN") there when present. The ops' device is `dev`, else
/// `device_path` when it exists here (a partition: its whole disk, with the partition start added to
/// `slot_offset`), else unknown (SemanticTrace::dev_unknown). Each store covers [slot, slot + header padded to
/// block_align + bytes padded to block_align), a load the same range after the header; slot = `slot_dev_off`, else
/// `slot_offset`. `ts_start`/`ts`: seconds (fraction) or ns (integer), CLOCK_MONOTONIC; trace_id = `trace_id`, else
/// `user_data` >> 32 (integer, decimal or hex string). `delete` records are counted, not scored; records with a
/// non-empty `error` are joined, not scored. Throws kvio::Error "FILE:LINE: field 'F': ..." on malformed input.
SemanticTrace read_semantic_lmcache(const std::string& path);

}  // namespace kvio::validate
