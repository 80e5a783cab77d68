// Turns the tracer's binary records (bpf/kvio_trace.h) into kvio.events/1 JSON (docs/formats.md).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "bpf/kvio_trace.h"

namespace kvio::trace {

/// blktrace-style rwbs for a normalised op|flags word: 'F' (preflush), then R/W/D/DE/F/N for the op,
/// then F (FUA), A (readahead), S (sync), M (meta) — the order of the kernel's blk_fill_rwbs().
std::string rwbs_from_opf(uint32_t opf);
/// "read", "write", "flush", "discard" or "other".
const char* op_name_from_opf(uint32_t opf);
/// Same classification from an NVMe I/O opcode (NVMe base spec: 0x00 flush, 0x01 write, 0x02 read,
/// 0x09 dataset management -> discard).
const char* op_name_from_nvme_opcode(uint8_t opcode);
/// Name of a traced syscall (enum kvio_syscall), e.g. "pwrite64".
const char* syscall_name(uint32_t nr);

/// Device facts an event needs, cached per kernel dev_t: disk name and LBA size (sysfs).
class DevCache {
public:
    struct Entry {
        std::string majmin, disk;
        uint32_t lba_bytes = 512;
    };
    /// Throws nothing: an unknown device gets disk "?" and 512-byte LBAs.
    const Entry& get(uint32_t kernel_dev);

private:
    std::unordered_map<uint32_t, Entry> cache_;
};

/// One "cmd" record. NVMe records get bytes = nlb × LBA size and sector = slba × LBA size / 512.
nlohmann::json cmd_event_json(const kvio_cmd_event& e, DevCache& devs);
/// One "syscall" record.
nlohmann::json syscall_event_json(const kvio_syscall_event& e);

}  // namespace kvio::trace
