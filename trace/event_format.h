// Turns the tracer's binary records (bpf/kvio_trace.h) into kvio.events/1 JSON (docs/formats.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "bpf/file_attr.h"
#include "bpf/kvio_trace.h"
#include "common/event_names.h"

namespace kvio::trace {

using kvio::op_name_from_nvme_opcode;
using kvio::op_name_from_opf;
using kvio::rwbs_chars;
using kvio::rwbs_from_opf;
using kvio::syscall_name;

/// Device facts an event needs, cached per kernel dev_t: disk name and LBA size (sysfs).
class DevCache {
public:
    struct Entry {
        std::string majmin, disk;
        uint32_t lba_bytes = 512;
    };
    /// Throws nothing: an unknown device gets disk "?" and 512-byte LBAs.
    const Entry& get(uint32_t kernel_dev);
    /// Sets the facts of a device instead of reading sysfs (a capture's device table, `kvio dump`).
    void put(uint32_t kernel_dev, Entry e) { cache_[kernel_dev] = std::move(e); }

private:
    std::unordered_map<uint32_t, Entry> cache_;
};

/// One "cmd" record as a JSON object: the reference definition of the record's keys and values, used by
/// the tests to check EventEncoder. NVMe records get bytes = nlb × LBA size and sector = slba × LBA size / 512.
/// `files`: the block command's file parts (trace/cmd_parts.h), given when its bytes are not all one file's: then
/// "files" [{"bytes","fs_dev","gen","ino"}, ...] and "nofile_bytes" (its bytes no part holds: metadata, journal).
nlohmann::json cmd_event_json(const kvio_cmd_event& e, DevCache& devs, std::span<const kvio_file_part> files = {});
/// One "syscall" record as a JSON object (reference definition, see cmd_event_json).
nlohmann::json syscall_event_json(const kvio_syscall_event& e);
/// One "stages" record (--breakdown with --events, docs/formats.md "Block stages record") as a JSON object: the
/// stamps and the stage durations in ns, Q2G + G2I + I2D + D2C (G2D in place of G2I + I2D without an insert) = Q2C.
nlohmann::json stages_event_json(const kvio_stages_event& e, DevCache& devs);

/// Serialises kvio.events/1 records as JSONL text (one record + '\n' each) into one growing buffer, with
/// RapidJSON's SAX Writer: no DOM and, once the buffer has grown, no allocation per record (~10× cheaper
/// than building cmd_event_json and dumping it). The bytes are exactly
/// `cmd_event_json(e, devs).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n'`
/// (likewise for syscalls): keys in std::map order, nlohmann's escapes (\u001f lowercase, \b \t \n \f \r),
/// non-ASCII UTF-8 kept as is, and each invalid UTF-8 sequence in comm or disk replaced by one U+FFFD
/// (a plain dump() would throw). Strings outside printable ASCII take a slower path through nlohmann.
class EventEncoder {
public:
    EventEncoder();
    ~EventEncoder();
    EventEncoder(const EventEncoder&) = delete;
    EventEncoder& operator=(const EventEncoder&) = delete;

    /// Appends one "cmd" record (same values as cmd_event_json, `files` likewise).
    void cmd(const kvio_cmd_event& e, DevCache& devs, std::span<const kvio_file_part> files = {});
    /// Appends one "syscall" record (same values as syscall_event_json).
    void syscall(const kvio_syscall_event& e);
    /// Appends one "stages" record (same values as stages_event_json).
    void stages(const kvio_stages_event& e, DevCache& devs);
    /// Appends any other record (e.g. the summary): j.dump() + '\n', invalid UTF-8 replaced by U+FFFD.
    void line(const nlohmann::json& j);

    /// The text appended since the last clear(); size() in bytes.
    const char* data() const;
    size_t size() const;
    /// Empties the buffer and keeps its memory.
    void clear();
    /// Grows the buffer to hold at least `bytes` without reallocating.
    void reserve(size_t bytes);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kvio::trace
