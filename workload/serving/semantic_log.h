// kvio.semantic/1 (docs/formats.md) for the serving simulation's storage-tier ops, so `kvio validate` can join
// each KV entry's file I/O to the device commands `kvio trace` saw (--enable-latency-tracing). Layout "files":
// one file per entry; the extents of each op come from FIEMAP of the bytes it moved.
//
// Contract for a storage backend that calls it (the projection validate scores against, validate/projection.h):
// a store writes the entry's header I/O (header_bytes, padded to block_align) and then the payload padded to
// block_align, each cut into transfers of at most max_io_bytes from its start; a load reads the padded payload
// from file offset round_up(header_bytes, block_align), cut the same way. (Padding below the filesystem block is
// not exact on ext4: a 512-byte tail of an unwritten 4 KiB block goes to the device as the whole block.) Direct I/O (O_DIRECT) gives per-op exact commands;
// buffered I/O is joined too but its commands come from writeback/readahead (meta "buffered": true).
#pragma once
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kvio::serving {

class SemanticLog {
public:
    struct Meta {
        std::string dir;            ///< the storage tier's directory (its filesystem's disk is the record's dev)
        std::string engine;         ///< "posix" | "io_uring"
        std::string model;          ///< --model
        bool buffered = false;      ///< page-cache I/O (the benchmark's pattern)
        uint64_t max_io_bytes = 0;  ///< transfer cap, bytes (0 = none)
        uint64_t header_bytes = 0;  ///< a store's header before the payload, bytes (0 = none)
        uint64_t block_align = 4096;///< header padding, bytes
    };
    /// Opens `path` and writes the meta line: the disk holding meta.dir (whole disk "MAJ:MIN", partition start,
    /// logical block size, max_sectors_kb, max_hw_sectors_kb). Throws kvio::Error when the directory is not on a
    /// block device (tmpfs) or the file cannot be written.
    SemanticLog(const std::string& path, const Meta& meta);
    ~SemanticLog();

    /// One op on the open entry file `fd` (thread-safe). store: file bytes [0, header_io + payload_io) were written;
    /// load: [header_io, header_io + payload_io) were read, header_io = round_up(header_bytes, block_align) when the
    /// meta has a header, payload_io = round_up(payload_bytes, max(block_align, logical block)). `payload_bytes`: KV bytes of the entry; times CLOCK_MONOTONIC ns (before the first
    /// transfer, after the last completion / fsync); `error` non-empty for a failed op (joined, not scored).
    /// FIEMAP failures are written as the record's error, never thrown.
    void record(bool store, const std::string& key, int fd, uint64_t payload_bytes, uint64_t ts_start_ns,
                uint64_t ts_ns, uint32_t transfers, const std::string& error = "");
    /// Records written so far.
    uint64_t records() const;
    /// Flushes and closes; throws kvio::Error when the file could not be written completely.
    void close();
    const std::string& path() const { return path_; }

private:
    std::string path_;
    Meta meta_;
    std::string dev_str_;
    uint32_t kdev_ = 0;
    uint64_t part_start_ = 0, lba_bytes_ = 512;
    mutable std::mutex mu_;
    std::ofstream out_;
    uint64_t seq_ = 0;
    std::unordered_map<std::string, uint64_t> ids_;
};

}  // namespace kvio::serving
