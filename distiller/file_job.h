// The file level of `kvio distill`: an application's own file I/O pattern, derived from the syscall records of
// `kvio trace --syscalls` (which files, in which chunks, buffered or direct, the fsync and fadvise cadence, per
// thread), and a fio job that reissues it on a directory, so that on another drive the same filesystem, page cache
// and device path make the device commands. Rules: docs/distill.md, "The file level".
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/syscall_trace.h"

namespace kvio::distiller {

/// One traced file: an inode instance (fs_dev, ino, gen) of the traced filesystem.
struct TracedFile {
    uint64_t ino = 0;
    uint32_t gen = 0;
    uint64_t size = 0;           ///< bytes: the largest of its recorded i_size and the end of every call on it
    uint64_t read_bytes = 0;     ///< bytes read from it by the traced calls
    uint64_t written_bytes = 0;  ///< bytes written to it
    std::string name;            ///< its stable name in the job's directory: "i<ino>g<gen>"
    bool written_first = false;  ///< the trace's first call on it is a write (the application made it in the trace)
};

/// One file operation of a stream, in the order the thread issued it.
struct FileOp {
    enum class Kind : uint8_t { Read, Write, Sync, Datasync, Dontneed };
    Kind kind = Kind::Read;
    uint32_t file = 0;    ///< index into FilePattern::files
    uint64_t offset = 0;  ///< bytes (Read/Write)
    uint64_t len = 0;     ///< bytes moved (the call's return value; Read/Write)
    uint64_t ts_ns = 0;   ///< the call's entry, CLOCK_MONOTONIC ns
};

/// One traced thread's file operations.
struct FileStream {
    uint32_t pid = 0, tid = 0;
    std::string comm;
    bool direct = false;       ///< most of its bytes moved on files open with O_DIRECT
    uint64_t mixed_bytes = 0;  ///< bytes it moved the other way (buffered when `direct`, else direct)
    uint64_t reads_after_dontneed = 0, reads_cold = 0;  ///< read uses (runs of reads on a file) with/without fadvise
    std::vector<FileOp> ops;
};

/// The application's pattern on one filesystem.
struct FilePattern {
    uint32_t fs_dev = 0;  ///< kernel dev_t (MAJOR << 20 | MINOR)
    std::vector<TracedFile> files;
    std::vector<FileStream> streams;
    uint64_t buffered_read_bytes = 0, buffered_write_bytes = 0, direct_read_bytes = 0, direct_write_bytes = 0;
    std::map<uint64_t, uint64_t> read_sizes, write_sizes;  ///< call size (bytes) -> calls
    uint64_t fsyncs = 0, fdatasyncs = 0, dontneeds = 0;
    uint32_t max_threads_in_calls = 0;  ///< most threads inside a read/write/sync call at one instant
    uint64_t t0_ns = 0, span_ns = 0;    ///< first call's entry; last exit - first entry
    uint64_t other_fs_calls = 0;        ///< calls with file identity on other filesystems (not replayed)
    uint64_t no_identity_calls = 0;     ///< read/write/sync calls without file identity (not replayed)
    /// Threads whose only calls were fadvise (fio's parent drops a file's cache before its jobs): not streams, as an
    /// iolog without a read, write or sync is refused by fio (EINVAL); the readers' invalidate=1 drops it instead.
    uint64_t fadvise_only_threads = 0;
    uint64_t app_bytes() const {
        return buffered_read_bytes + buffered_write_bytes + direct_read_bytes + direct_write_bytes;
    }
    uint64_t buffered_bytes() const { return buffered_read_bytes + buffered_write_bytes; }
};

/// The filesystem device the most bytes moved on, among records with file identity; 0 when none has it.
uint32_t busiest_fs_dev(const std::vector<SyscallRec>& recs);

/// The pattern of the calls on `fs_dev` (records sorted by ts_enter, as load_syscalls gives them). Failed calls and
/// reads at end of file (ret <= 0) move nothing and are left out; io_uring and other calls are not replayed (counted
/// nowhere: the device level covers them).
FilePattern derive_file_pattern(const std::vector<SyscallRec>& recs, uint32_t fs_dev);

/// How the file job is written.
struct FileJobOptions {
    std::string directory;     ///< where the files live (absolute; fio's iolog needs absolute paths)
    std::string iolog_prefix;  ///< each section's iolog is `<prefix><section>.iolog` (absolute or job-relative)
    std::string job_name = "kvio-file";
    std::vector<std::string> header;  ///< extra header lines (level choice, cross-check against device commands)
};

/// The job and the iologs it reads.
struct FileJob {
    std::string text;                                         ///< the fio job
    std::vector<std::pair<std::string, std::string>> iologs;  ///< (path, content), one per section
    std::string layout_section;                               ///< "" when no file needs to exist first
    std::vector<std::string> replay_sections;                 ///< the sections that replay the streams
    uint64_t needs_bytes = 0;  ///< the files' total size, each rounded up to 4 KiB: what the directory must hold
};

/// The fio job: a `layout` section (every file the trace reads, written whole: fio opens a section's files when it
/// starts, so a file one thread reads must exist then although another writes it later), then one section per stream
/// replaying its calls from a fio iolog v2 paced by `wait` lines (fio 3.33: absolute ms since its threads started,
/// docs/distill.md "Pacing the file level"; each the traced ms since the trace's first call, so a thread that falls
/// behind catches up and the threads meet as in the trace) with ioengine=psync, its direct=, and invalidate=1 when its
/// reads came after fadvise DONTNEED. A buffered write is widened to whole 4 KiB pages (it dirties the same pages; over
/// a laid-out file a partial page would be read first). Throws kvio::Error when the pattern has no stream or the
/// directory is not absolute or holds whitespace.
FileJob make_file_job(const FilePattern& p, const FileJobOptions& o);

}  // namespace kvio::distiller
