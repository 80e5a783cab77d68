// The I/O engine interface, fio-style (ioengines.h: queue / commit / getevents): the executor
// never knows which engine moves the bytes. Engines: posix, io_uring, uring_cmd, cufile.
#pragma once
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvio::workload {

/// What an engine is built with.
struct EngineConfig {
    std::string name = "posix";
    uint32_t qd = 1;           ///< transfers in flight at most
    bool buffered = false;     ///< posix/io_uring: page cache instead of O_DIRECT
    uint32_t lba_bytes = 512;  ///< uring_cmd: namespace LBA size for slba/nlb
};

/// One transfer. `offset`/`len` in bytes on the opened file/device; `buf` is one of the registered
/// buffers (index `buf_index`). `user_data` = (trace_id << 32) | counter, returned with the completion.
struct IoUnit {
    int fd = -1;
    bool write = false;
    uint64_t offset = 0;
    uint32_t len = 0;
    void* buf = nullptr;
    uint16_t buf_index = 0;
    uint64_t user_data = 0;
};

/// A finished transfer: `res` = bytes moved, or -errno (uring_cmd: a positive NVMe status is
/// reported as -EIO and kept in `nvme_status`).
struct IoCompletion {
    uint64_t user_data = 0;
    int64_t res = 0;
    uint32_t nvme_status = 0;
};

/// How a file is opened for the stream.
enum class OpenFor { Store, Load, Both };

class Engine {
public:
    virtual ~Engine() = default;
    virtual std::string name() const = 0;
    /// Called once with the buffer pool before any queue(); io_uring registers them (fixed buffers).
    virtual void register_buffers(const std::vector<iovec>& bufs) { (void)bufs; }
    /// Opens `path` the way this engine does I/O (O_DIRECT unless buffered). `create` makes a new
    /// empty file (files layout stores). Returns the fd; throws kvio::Error naming the path.
    virtual int open(const std::string& path, OpenFor mode, bool create);
    virtual void close(int fd);
    /// Queues one transfer (may perform it at once: posix).
    virtual void queue(const IoUnit& u) = 0;
    /// Submits everything queued since the last commit.
    virtual void commit() {}
    /// Appends at least `min` completions to `out` (blocking), more if ready. Returns how many.
    virtual size_t reap(size_t min, std::vector<IoCompletion>& out) = 0;
    /// After a store's last transfer completed: the durability point (buffered: fsync).
    virtual void store_done(int fd) { (void)fd; }
    /// Before a load's first transfer: buffered engines drop the cached pages (posix_fadvise DONTNEED).
    virtual void before_load(int fd, uint64_t off, uint64_t len) { (void)fd, (void)off, (void)len; }

protected:
    explicit Engine(const EngineConfig& c) : cfg_(c) {}
    EngineConfig cfg_;
};

/// Names accepted by make_engine(), and whether each was built in.
std::vector<std::string> engine_names();
/// Builds an engine. Throws kvio::Error for an unknown name or one not built in (cufile without CUDA).
std::unique_ptr<Engine> make_engine(const EngineConfig& c);

// Per-engine factories (engine_<name>.cpp).
std::unique_ptr<Engine> make_posix_engine(const EngineConfig& c);
std::unique_ptr<Engine> make_io_uring_engine(const EngineConfig& c);
std::unique_ptr<Engine> make_uring_cmd_engine(const EngineConfig& c);
std::unique_ptr<Engine> make_cufile_engine(const EngineConfig& c);

}  // namespace kvio::workload
