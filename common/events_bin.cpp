#include "common/events_bin.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/input_file.h"
#include "common/warn.h"

namespace kvio::evbin {

namespace {
constexpr size_t kBufBytes = 4u << 20;
constexpr size_t kPadding = 64;  // readable bytes after a payload (simdjson parses a Json payload in place)
constexpr size_t pad8(size_t n) { return (n + 7) & ~size_t(7); }
constexpr uint32_t kMaxPayload = 1u << 20;  // far above any record; a larger length means a corrupt file
}  // namespace

Encoder::Encoder() {
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof h.magic);
    h.version = kVersion;
    h.header_bytes = sizeof h;
    h.cmd_bytes = sizeof(kvio_cmd_event);
    h.syscall_bytes = sizeof(kvio_syscall_event);
    h.byte_order = kByteOrder;
    buf_.append(reinterpret_cast<const char*>(&h), sizeof h);
}

void Encoder::device(const DeviceRecord& d) {
    if (devices_.insert(d.dev).second) record(Kind::Device, &d, sizeof d);
    last_dev_ = d.dev;
}

DeviceRecord make_device_record(uint32_t dev, uint32_t lba_bytes, const std::string& majmin, const std::string& disk) {
    DeviceRecord r{};
    r.dev = dev;
    r.lba_bytes = lba_bytes;
    std::strncpy(r.majmin, majmin.c_str(), sizeof r.majmin - 1);
    std::strncpy(r.disk, disk.c_str(), sizeof r.disk - 1);
    return r;
}

DeviceFacts read_device_record(std::string_view payload, uint32_t& dev) {
    DeviceRecord d;
    std::memcpy(&d, payload.data(), sizeof d);
    dev = d.dev;
    return {std::string(d.majmin, strnlen(d.majmin, sizeof d.majmin)),
            std::string(d.disk, strnlen(d.disk, sizeof d.disk)), d.lba_bytes ? d.lba_bytes : 512};
}

void Encoder::record(Kind k, const void* p, size_t n) {
    RecordHeader rh{uint32_t(k), uint32_t(n)};
    buf_.append(reinterpret_cast<const char*>(&rh), sizeof rh);
    buf_.append(static_cast<const char*>(p), n);
    buf_.append(pad8(n) - n, '\0');
}

bool has_magic(const char* p, size_t n) { return n >= sizeof kMagic && std::memcmp(p, kMagic, sizeof kMagic) == 0; }

void open_buffered(const std::string& path, size_t bytes, std::FILE*& f, char*& buf) {
    f = open_input(path);
    buf = static_cast<char*>(std::malloc(bytes));
    if (!buf) {
        std::fclose(f);
        f = nullptr;
        throw std::bad_alloc();
    }
}

Reader::Reader(const std::string& path) : path_(path) {
    cap_ = kBufBytes;
    open_buffered(path, cap_ + kPadding, f_, buf_);
    init();
}

Reader::Reader(const std::string& path, std::FILE* f, const char* prefix, size_t n) : path_(path), f_(f) {
    cap_ = kBufBytes;
    buf_ = static_cast<char*>(std::malloc(cap_ + kPadding));
    if (!buf_) {
        std::fclose(f_);
        throw std::bad_alloc();
    }
    std::memcpy(buf_, prefix, n);
    len_ = n;
    init();
}

void Reader::init() {
    try {
        check_header();
    } catch (...) {
        std::fclose(f_);
        std::free(buf_);
        throw;
    }
}

// Checks the file header at pos_ and moves past it.
void Reader::check_header() {
    const std::string& path = path_;
    FileHeader h{};
    if (!fill(sizeof kMagic) || !has_magic(buf_ + pos_, len_ - pos_))
        throw Error(path + ": not a kvio.events.bin file");
    if (!fill(sizeof h)) throw Error(path + ": kvio.events.bin header is truncated (the trace was cut off?)");
    std::memcpy(&h, buf_ + pos_, sizeof h);
    if (h.byte_order != kByteOrder)
        throw Error(path + ": kvio.events.bin written on a machine of the other byte order");
    if (h.version != kVersion)
        throw Error(path + ": kvio.events.bin version " + std::to_string(h.version) + " (this kvio reads " +
                    std::to_string(kVersion) + ")");
    // Syscall records of the size before the file fields (KVIO_SYSCALL_EVENT_V1_BYTES) read as records without them.
    const bool old_syscalls = h.syscall_bytes == KVIO_SYSCALL_EVENT_V1_BYTES;
    if (h.cmd_bytes != sizeof(kvio_cmd_event) || (h.syscall_bytes != sizeof(kvio_syscall_event) && !old_syscalls))
        throw Error(path + ": written by a kvio whose cmd/syscall records are " + std::to_string(h.cmd_bytes) + "/" +
                    std::to_string(h.syscall_bytes) + " bytes (this one reads " +
                    std::to_string(sizeof(kvio_cmd_event)) + "/" + std::to_string(sizeof(kvio_syscall_event)) +
                    "): dump it with that kvio");
    if (h.header_bytes < sizeof h || h.header_bytes > 4096)
        throw Error(path + ": kvio.events.bin header of " + std::to_string(h.header_bytes) + " bytes");
    if (!fill(h.header_bytes)) throw Error(path + ": kvio.events.bin header is truncated");
    pos_ += h.header_bytes;
    syscall_bytes_ = h.syscall_bytes;
}

Reader::~Reader() {
    if (f_) std::fclose(f_);
    std::free(buf_);
}

// Makes `need` bytes from pos_ available in buf_; false if the file ends first.
bool Reader::fill(size_t need) {
    if (len_ - pos_ >= need) return true;
    if (pos_) {
        std::memmove(buf_, buf_ + pos_, len_ - pos_);
        consumed_ += pos_;
        len_ -= pos_;
        pos_ = 0;
    }
    while (len_ < need) {
        size_t n = std::fread(buf_ + len_, 1, cap_ - len_, f_);
        if (n == 0) {
            if (std::ferror(f_)) throw Error(path_ + ": read error: " + std::strerror(errno));
            return false;
        }
        len_ += n;
    }
    return true;
}

bool Reader::next(Kind& kind, std::string_view& payload) {
    rec_off_ = consumed_ + pos_;
    if (!fill(1)) {
        if (files_pending_)
            warn(path_ + ": record " + std::to_string(record_) +
                 ": a files record without its cmd record at the end (the trace was cut off?): dropped");
        files_pending_ = false;
        return false;
    }
    if (fill(sizeof kMagic) && has_magic(buf_ + pos_, len_ - pos_)) {  // the next capture of a concatenation
        check_header();
        return next(kind, payload);
    }
    ++record_;
    auto bad = [&](const std::string& why) {
        throw Error(path_ + ": record " + std::to_string(record_) + " at byte " + std::to_string(rec_off_) + ": " +
                    why);
    };
    // A record cut off by the end of the file can only be the last: the writer was killed. It is dropped with a
    // warning, like a torn last JSONL line; what came before reads as usual.
    auto torn = [&](const char* what) {
        warn(path_ + ": record " + std::to_string(record_) + " at byte " + std::to_string(rec_off_) + ": " + what +
             " (the trace was cut off?): dropped");
        return false;
    };
    RecordHeader rh{};
    if (!fill(sizeof rh)) return torn("truncated record header");
    std::memcpy(&rh, buf_ + pos_, sizeof rh);
    if (rh.kind < uint32_t(Kind::Device) || rh.kind > uint32_t(Kind::Files))
        bad("unknown record kind " + std::to_string(rh.kind));
    if (rh.bytes > kMaxPayload) bad("record length " + std::to_string(rh.bytes) + " is not plausible");
    const size_t want = rh.kind == uint32_t(Kind::Cmd)       ? sizeof(kvio_cmd_event)
                        : rh.kind == uint32_t(Kind::Syscall) ? syscall_bytes_
                        : rh.kind == uint32_t(Kind::Device)  ? sizeof(DeviceRecord)
                        : rh.kind == uint32_t(Kind::Stages)  ? sizeof(kvio_stages_event)
                                                             : rh.bytes;
    if (rh.kind == uint32_t(Kind::Files)) {
        if (!rh.bytes || rh.bytes % sizeof(kvio_file_part))
            bad("a files record of " + std::to_string(rh.bytes) + " bytes, not a whole number of " +
                std::to_string(sizeof(kvio_file_part)) + "-byte parts");
    } else if (rh.bytes != want) {
        bad("payload of " + std::to_string(rh.bytes) + " bytes, expected " + std::to_string(want));
    }
    const size_t total = sizeof rh + pad8(rh.bytes);
    if (!fill(total)) return torn("truncated record");
    kind = Kind(rh.kind);
    payload = std::string_view(buf_ + pos_ + sizeof rh, rh.bytes);
    if (files_pending_ && kind != Kind::Cmd)
        bad(kind == Kind::Files ? "two files records in a row" : "a files record not followed by its cmd record");
    if (kind == Kind::Files) {  // held for the Cmd record after it
        files_.resize(payload.size() / sizeof(kvio_file_part));
        std::memcpy(files_.data(), payload.data(), payload.size());
        files_pending_ = true;
        pos_ += total;
        return next(kind, payload);
    }
    if (!files_pending_) files_.clear();
    if (kind == Kind::Syscall && syscall_bytes_ != sizeof(kvio_syscall_event)) {
        // An older capture's record: its bytes, then zeros (no file fields); its pad byte (now flags) was never
        // written by the kernel side, so it is cleared too.
        upgraded_ = kvio_syscall_event{};
        std::memcpy(&upgraded_, payload.data(), payload.size());
        upgraded_.flags = 0;
        upgraded_.pad = 0;
        payload = std::string_view(reinterpret_cast<const char*>(&upgraded_), sizeof upgraded_);
    } else if (kind == Kind::Device) {
        uint32_t dev = 0;
        DeviceFacts d = read_device_record(payload, dev);
        devs_[dev] = std::move(d);
    } else if (kind == Kind::Cmd) {
        kvio_cmd_event e;
        std::memcpy(&e, payload.data(), sizeof e);
        if (!devs_.count(e.dev))
            bad("a cmd record of device " + dev_string(decode_kernel_dev(e.dev)) + " before its device record");
        if (e.src != KVIO_SRC_BLOCK && e.src != KVIO_SRC_NVME)
            bad("field 'src': " + std::to_string(unsigned(e.src)) + " is neither block (" +
                std::to_string(KVIO_SRC_BLOCK) + ") nor nvme (" + std::to_string(KVIO_SRC_NVME) + ")");
        if (files_pending_) {
            files_pending_ = false;
            if (e.src != KVIO_SRC_BLOCK) bad("field 'files': on an nvme cmd record (only block commands have parts)");
            uint64_t in_files = 0;
            for (const kvio_file_part& p : files_) {
                if (p.bytes > e.bytes - in_files)
                    bad("field 'files': its parts hold more bytes than the command's " + std::to_string(e.bytes));
                in_files += p.bytes;
            }
        }
    } else if (kind == Kind::Stages) {
        kvio_stages_event e;
        std::memcpy(&e, payload.data(), sizeof e);
        if (!devs_.count(e.dev))
            bad("a stages record of device " + dev_string(decode_kernel_dev(e.dev)) + " before its device record");
    }
    pos_ += total;
    return true;
}

}  // namespace kvio::evbin
