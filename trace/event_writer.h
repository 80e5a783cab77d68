// Writes a kvio.events/1 file (docs/formats.md) at ring-buffer speed: records are encoded by EventEncoder
// into a 1 MiB buffer that goes to the file with write(2) when full and at close(), with O_DIRECT where the
// filesystem supports it (whole 4 KiB-aligned chunks; the last partial block is written buffered at close()).
// A path ending in ".zst" is written as one zstd frame (common/zstd_stream.h) with buffered writes: the encoded
// text goes through the compressor at each flush, flush_idle() makes it decodable up to there, close() ends it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bpf/kvio_trace.h"
#include "common/events_bin.h"
#include "common/output_file.h"
#include "common/zstd_stream.h"
#include "trace/cmd_parts.h"
#include "trace/event_format.h"

namespace kvio::trace {

/// True when `path` is standard output: "-", /dev/stdout, or the file fd 1 points at.
bool events_on_stdout(const std::string& path);

/// What `kvio trace --events` writes: kvio.events/1 JSONL, or the binary capture kvio.events.bin/1.
enum class EventsFormat { Jsonl, Bin };

class EventWriter {
public:
    /// Creates PATH.tmp-PID (mode 0666 minus umask, like std::ofstream), renamed to `path` by close() when every
    /// write succeeded (common/output_file.h PendingRename; standard output, a device or a pipe is written in
    /// place). A failed write leaves nothing under `path`; a SIGKILL leaves PATH.tmp-PID. `chunk_bytes`: buffered
    /// text written per write(2). Throws kvio::Error "PATH: cannot write: REASON".
    /// `format`: kvio.events/1 JSONL, or the binary capture kvio.events.bin/1 (common/events_bin.h).
    explicit EventWriter(const std::string& path, size_t chunk_bytes = size_t(1) << 20,
                         EventsFormat format = EventsFormat::Jsonl);
    /// Flushes, closes and renames if close() was not called; errors are dropped here (call close() to see them).
    ~EventWriter();
    EventWriter(const EventWriter&) = delete;
    EventWriter& operator=(const EventWriter&) = delete;

    /// Appends one "cmd" record (device facts from an internal DevCache) and counts it; a block command the kernel
    /// wrote file parts for carries them ("files", or a Files record before it in the binary capture) when all of
    /// them came (parts()).
    /// Never throws for I/O: the first write error is kept, later output dropped, and close() reports it —
    /// safe to call from a libbpf ring_buffer callback.
    void cmd(const kvio_cmd_event& e);
    /// Holds the file parts of a command whose record comes later (--files, trace/cmd_parts.h); writes nothing.
    void parts(const kvio_parts_event& p) { join_.add(p); }
    /// The parts joined so far: commands that carry "files", commands whose parts did not all come, parts without
    /// their command (after close()).
    const PartsJoin& parts_join() const { return join_; }
    /// Lets the parts still held go (PartsJoin::finish): at the end of the trace, before the summary.
    void end_parts() { join_.finish(); }
    /// Appends one "syscall" record and counts it; I/O errors as for cmd().
    void syscall(const kvio_syscall_event& e);
    /// Appends one "stages" record (--breakdown), counted in stages_written(), not in written(); I/O errors as for
    /// cmd().
    void stages(const kvio_stages_event& e);
    /// Appends another record (the summary): j.dump() + '\n'. Not counted in written().
    void line(const nlohmann::json& j);

    /// cmd + syscall records appended so far (what the summary calls "events").
    uint64_t written() const { return written_; }
    /// "stages" records appended so far (the summary's "stages").
    uint64_t stages_written() const { return stages_written_; }
    /// A write has failed (close() will throw).
    bool failed() const { return err_ != 0; }
    /// The first failed write's errno (0: none).
    int error() const { return err_; }
    const std::string& path() const { return path_; }
    /// The file takes O_DIRECT writes (false: the filesystem refused them, buffered writes instead).
    bool direct() const { return stage_ != nullptr; }

    /// Called from the collector's loop: at most once a second (kIdleFlushNs) it writes what is buffered, so a
    /// quiet device's records reach the file within a second (with O_DIRECT: all but the last partial 4 KiB
    /// block). `now_ns`: CLOCK_MONOTONIC.
    void flush_idle(uint64_t now_ns);
    static constexpr uint64_t kIdleFlushNs = 1'000'000'000;

    /// Writes what is buffered, closes the file and renames it to path(); idempotent.
    /// Throws kvio::Error "PATH: write failed: REASON" if any write or the close failed (the temporary removed).
    void close();

private:
    /// The binary capture: writes device `dev`'s record before its first command or stages record.
    void bin_device(uint32_t dev);
    const char* encoded_data() const { return bin_ ? benc_.data() : enc_.data(); }
    size_t encoded_size() const { return bin_ ? benc_.size() : enc_.size(); }
    void clear_encoded() { bin_ ? benc_.clear() : enc_.clear(); }
    void maybe_flush() {
        if (encoded_size() >= chunk_) flush(false);
    }
    /// Direct I/O: writes the whole 4 KiB blocks of the staging buffer and moves the rest to its front.
    void write_aligned_blocks();
    /// Moves the encoded text to the file; `last`: also the partial tail (close()).
    void flush(bool last);
    /// zstd: compresses the encoded text (Continue, Flush or End) and writes what the compressor gives.
    void flush_compressed(ZstdCompressor::Mode mode);
    void write_all(const char* p, size_t n);
    /// Clears O_DIRECT on the file; false if it was not set or cannot be cleared.
    bool buffered();

    static constexpr size_t kDirectAlign = 4096;  ///< covers 512 B and 4 KiB logical blocks
    struct FreeDeleter {
        void operator()(char* p) const { std::free(p); }
    };
    std::unique_ptr<char, FreeDeleter> stage_;  ///< aligned staging buffer of chunk_ bytes; null: buffered I/O
    size_t staged_ = 0;
    uint64_t last_flush_ns_ = 0;
    std::string path_;
    std::optional<PendingRename> pending_;  ///< unset for standard output
    int fd_ = -1;
    int err_ = 0;  ///< errno of the first failed write/close, 0 if none
    size_t chunk_;
    uint64_t written_ = 0;
    uint64_t stages_written_ = 0;
    DevCache devs_;
    PartsJoin join_;
    std::vector<kvio_file_part> files_;  ///< the parts of the command being written
    bool bin_ = false;
    EventEncoder enc_;
    std::unique_ptr<ZstdCompressor> zstd_;  ///< null: written as encoded
    std::string zbuf_;
    evbin::Encoder benc_;  ///< starts with the file header: written out with the first chunk
};

}  // namespace kvio::trace
