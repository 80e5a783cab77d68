// Reading the syscall records of `kvio trace --syscalls --events` (kvio.events/1 `"type":"syscall"`, or the binary
// capture's syscall records; docs/formats.md) into memory: what the file-level distiller derives an application's
// own I/O pattern from (which files, in which chunks, buffered or direct, fsync and fadvise cadence, per thread).
#pragma once
#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

namespace kvio {

/// The calls a syscall record names (`name`).
enum class SysKind : uint8_t { Read, Write, Fsync, Fdatasync, Fadvise, IoUringEnter, Other };

/// One traced system call. Times are CLOCK_MONOTONIC ns. File identity fields are 0 when the record does not carry
/// them (a trace from a kvio that did not record them, or an fd that names no inode-backed file).
struct SyscallRec {
    uint64_t ts_enter = 0, ts_exit = 0;
    int64_t ret = 0;         ///< the call's return value (bytes moved for reads/writes; -errno on failure)
    uint64_t offset = 0;     ///< file byte offset where the I/O started: the positioned call's argument, or the
                             ///< file position at entry for read/write/readv/writev; fadvise: its offset
    uint64_t count = 0;      ///< bytes requested (read/write; iovcnt for readv/writev-family); fadvise: its len
    uint64_t ino = 0;        ///< inode number of the file `fd` named at entry
    uint32_t fs_dev = 0;     ///< that inode's filesystem device, kernel dev_t (MAJOR << 20 | MINOR); 0 = unknown
    uint32_t gen = 0;        ///< inode generation (i_generation): tells a reused inode number's new file apart
    uint64_t file_size = 0;  ///< the file's size (i_size) at exit, bytes
    uint32_t pid = 0, tid = 0;
    int32_t fd = -1;
    SysKind kind = SysKind::Other;
    bool vectored = false;  ///< readv/writev/preadv/pwritev(2): `count` is the iovec count, not bytes
    bool direct = false;    ///< the file was open with O_DIRECT
    bool has_file = false;  ///< ino/fs_dev/gen/direct/file_size were recorded
    std::string comm;
};

/// Which syscall records to keep. Empty / zero fields do not filter.
struct SyscallFilter {
    uint32_t pid = 0;     ///< keep this process's calls
    std::string comm;     ///< keep calls whose comm equals this
    uint32_t fs_dev = 0;  ///< keep calls on files of this filesystem device (kernel dev_t)
};

/// The syscall records of a trace file (kvio.events/1 JSONL, .zst, or kvio.events.bin/1) that pass `filter`, in
/// ts_enter order. Device commands and the summary are skipped. Throws kvio::Error "FILE:LINE: field 'F': ..." for a
/// syscall record that breaks the format (docs/formats.md), and kvio::Stopped when `stop` becomes non-zero.
std::vector<SyscallRec> load_syscalls(const std::string& path, const SyscallFilter& filter,
                                      const volatile sig_atomic_t* stop = nullptr);

}  // namespace kvio
