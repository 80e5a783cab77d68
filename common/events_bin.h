// kvio.events.bin/1: the binary capture `kvio trace --events-format bin` writes (docs/formats.md). The tracer's
// records go to the file as the kernel filled them, with no encoding on the traced machine; readers
// (common/events_reader: validate, distill, replay) take it like kvio.events/1, and `kvio dump` turns it into
// the exact kvio.events/1 text the JSONL writer would have produced.
//
// Layout, host byte order (the header's byte_order word tells): a 64-byte FileHeader, then records, each a
// RecordHeader (kind, payload bytes) followed by the payload and zero padding to a multiple of 8 bytes.
// A Device record precedes the first Cmd or Stages record of its device. A Files record (--files: the file parts of
// a block command not all one file's) comes right before its Cmd record.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bpf/file_attr.h"
#include "bpf/kvio_trace.h"

namespace kvio::evbin {

inline constexpr char kMagic[8] = {'K', 'V', 'I', 'O', 'E', 'V', 'B', '\n'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kByteOrder =
    0x01020304;  ///< as written by the producer; read back swapped on the other order

struct FileHeader {
    char magic[8];
    uint32_t version;        ///< kVersion
    uint32_t header_bytes;   ///< sizeof(FileHeader)
    uint32_t cmd_bytes;      ///< sizeof(kvio_cmd_event) of the producer
    uint32_t syscall_bytes;  ///< sizeof(kvio_syscall_event) of the producer
    uint32_t byte_order;     ///< kByteOrder
    uint32_t reserved[9];
};
static_assert(sizeof(FileHeader) == 64);

enum class Kind : uint32_t {
    Device = 1,   ///< DeviceRecord
    Cmd = 2,      ///< kvio_cmd_event (bpf/kvio_trace.h), as the kernel filled it
    Syscall = 3,  ///< kvio_syscall_event (or its first KVIO_SYSCALL_EVENT_V1_BYTES, in older captures)
    Json = 4,     ///< one kvio.events/1 record as JSON text without the newline (the summary)
    Stages = 5,   ///< kvio_stages_event (--breakdown with --events), as the kernel filled it; after its Device record
    Files = 6,    ///< kvio_file_part[1..65535] (bpf/file_attr.h): each file's bytes of the Cmd record right after it,
                  ///< each file once (the tracer's join, trace/cmd_parts.h); a kvio before them refuses the capture
};

struct RecordHeader {
    uint32_t kind;   ///< Kind
    uint32_t bytes;  ///< payload bytes (padding not included)
};

/// What a reader needs to know of a device without its sysfs: kvio.events/1's "dev" and "disk", and the LBA
/// size that turns NVMe slba/nlb into sectors and bytes.
struct DeviceRecord {
    uint32_t dev;        ///< kernel dev_t, as in kvio_cmd_event.dev
    uint32_t lba_bytes;  ///< logical block size
    char majmin[16];     ///< "259:0", NUL-terminated
    char disk[32];       ///< "nvme0n1", NUL-terminated ("?" when unknown)
};
static_assert(sizeof(DeviceRecord) == 56);

/// A device record's facts as strings: what readers and `kvio dump` need ("7:0", "loop0", 512).
struct DeviceFacts {
    std::string majmin, disk;
    uint32_t lba_bytes = 512;
};

/// A DeviceRecord for `dev` (names cut to the record's fields, NUL-terminated).
DeviceRecord make_device_record(uint32_t dev, uint32_t lba_bytes, const std::string& majmin, const std::string& disk);
/// The facts of a Device record's payload (sizeof(DeviceRecord) bytes); an LBA size of 0 reads as 512.
/// Returns the device's kernel dev_t in `dev`.
DeviceFacts read_device_record(std::string_view payload, uint32_t& dev);

/// Appends kvio.events.bin/1 to a growing byte buffer; the caller writes data()/size() out and clear()s.
class Encoder {
public:
    /// Starts the buffer with the FileHeader.
    Encoder();
    /// Appends a Device record unless `d.dev` was appended before.
    void device(const DeviceRecord& d);
    /// Appends a Cmd record. The caller appends its device() first.
    void cmd(const kvio_cmd_event& e) { record(Kind::Cmd, &e, sizeof e); }
    void syscall(const kvio_syscall_event& e) { record(Kind::Syscall, &e, sizeof e); }
    /// Appends a Files record: the file parts of the Cmd record the caller appends next (none: nothing appended).
    void files(std::span<const kvio_file_part> p) {
        if (!p.empty()) record(Kind::Files, p.data(), p.size_bytes());
    }
    /// Appends a Stages record. The caller appends its device() first.
    void stages(const kvio_stages_event& e) { record(Kind::Stages, &e, sizeof e); }
    /// Appends a Json record holding `text` (one JSON object, no newline).
    void json(std::string_view text) { record(Kind::Json, text.data(), text.size()); }
    /// Whether device() was called for `dev` (one compare for the device of the last call).
    bool has_device(uint32_t dev) const { return dev == last_dev_ || devices_.count(dev) != 0; }

    const char* data() const { return buf_.data(); }
    size_t size() const { return buf_.size(); }
    void clear() { buf_.clear(); }
    void reserve(size_t bytes) { buf_.reserve(bytes); }

private:
    void record(Kind k, const void* p, size_t n);
    std::string buf_;
    std::unordered_set<uint32_t> devices_;
    uint32_t last_dev_ = UINT32_MAX;  ///< never a dev_t the tracer reports (major 4095, minor 2^20 - 1)
};

/// Opens `path` for reading and allocates a read buffer of `bytes` (malloc; the caller frees it and fcloses).
/// Throws kvio::Error "PATH: cannot open: REASON", or std::bad_alloc.
void open_buffered(const std::string& path, size_t bytes, std::FILE*& f, char*& buf);

/// True when the first bytes of a file are kvio.events.bin's magic.
bool has_magic(const char* p, size_t n);

/// Streams the records of a kvio.events.bin/1 file. Memory: one buffer of 4 MiB and the device table.
/// Captures written one after another into one file (`cat a.kvb b.kvb`) read as one: a file header where a
/// record would start is checked like the first and skipped.
class Reader {
public:
    /// Opens `path` and checks the header. Throws kvio::Error "PATH: cannot open: REASON", "PATH: not a
    /// kvio.events.bin file", "PATH: kvio.events.bin version V (this kvio reads 1)", or, for records of another
    /// size, "PATH: written by a kvio whose cmd/syscall records are N/M bytes (this one reads ...): dump it with that
    /// kvio". Syscall records of KVIO_SYSCALL_EVENT_V1_BYTES (a kvio before the file fields) are read: next() returns
    /// them at today's size with flags 0 (no file fields, no file position).
    explicit Reader(const std::string& path);
    /// Reads from `f` (taken over; also a pipe), whose first `n` bytes were already read into `prefix`.
    Reader(const std::string& path, std::FILE* f, const char* prefix, size_t n);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    /// The next record: its kind and payload (valid until the next call); false at the end of the file. A last
    /// record cut off by the end of the file is dropped with a warning (common/warn.h) "PATH: record N at byte
    /// B: truncated record (the trace was cut off?): dropped". Throws kvio::Error "PATH: record N at byte B: REASON"
    /// for an unknown record, a cmd record before its device's record, or a cmd whose `src` is neither
    /// KVIO_SRC_BLOCK nor KVIO_SRC_NVME. A Files record is not returned: it is checked (a whole number of parts,
    /// followed by the Cmd record of a block command, whose bytes its parts do not exceed) and its parts are that
    /// Cmd's files().
    bool next(Kind& kind, std::string_view& payload);
    /// The file parts of the Cmd record last returned (empty: it had no Files record), valid until the next call.
    std::span<const kvio_file_part> files() const { return files_; }
    /// The facts of device `dev` from its device record; nullptr before it (never for a returned Cmd record).
    const DeviceFacts* device(uint32_t dev) const {
        auto it = devs_.find(dev);
        return it == devs_.end() ? nullptr : &it->second;
    }
    /// 1-based number of the record last returned, and its byte offset.
    uint64_t record() const { return record_; }
    uint64_t offset() const { return rec_off_; }
    const std::string& path() const { return path_; }

private:
    void init();
    void check_header();
    bool fill(size_t need);
    std::string path_;
    std::FILE* f_ = nullptr;
    char* buf_ = nullptr;
    size_t cap_ = 0, pos_ = 0, len_ = 0;
    uint64_t consumed_ = 0;  ///< file offset of buf_[0]
    uint64_t record_ = 0, rec_off_ = 0;
    std::unordered_map<uint32_t, DeviceFacts> devs_;
    uint32_t syscall_bytes_ = sizeof(kvio_syscall_event);  ///< syscall record size of the capture being read
    kvio_syscall_event upgraded_{};                        ///< an older capture's record, returned at full size
    std::vector<kvio_file_part> files_;                    ///< the last Files record's parts, for the Cmd after it
    bool files_pending_ = false;                           ///< files_ read, its Cmd record not yet
};

}  // namespace kvio::evbin
