// Names the tracer's binary op words carry in kvio.events/1 records (docs/formats.md): op, rwbs, syscall.
// Shared by the JSONL encoder (trace/event_format) and the binary capture reader (common/events_reader).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "bpf/kvio_trace.h"

namespace kvio {

/// Writes the blktrace-style rwbs letters of a normalised op|flags word to `out`: 'F' (preflush), then
/// R/W/D/DE/F/N for the op, then F (FUA), A (readahead), S (sync), M (meta) — the order of the kernel's
/// blk_fill_rwbs(). At most 7 letters; returns how many.
size_t rwbs_chars(uint32_t opf, char (&out)[8]);
/// rwbs_chars() as a string.
std::string rwbs_from_opf(uint32_t opf);
/// "read", "write", "flush", "discard" or "other".
const char* op_name_from_opf(uint32_t opf);
/// Same classification from an NVMe I/O opcode (NVMe base spec: 0x00 flush, 0x01 write, 0x02 read,
/// 0x09 dataset management -> discard).
const char* op_name_from_nvme_opcode(uint8_t opcode);
/// Name of a traced syscall (enum kvio_syscall), e.g. "pwrite64"; "?" for an unknown number.
const char* syscall_name(uint32_t nr);

}  // namespace kvio
