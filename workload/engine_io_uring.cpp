// io_uring engine (liburing): fixed (registered) buffers, up to qd transfers in flight, each SQE
// tagged user_data = (trace_id << 32) | counter so traced commands can be joined to object ops.
#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "workload/engine.h"
#include "workload/uring_reap.h"

namespace kvio::workload {
namespace {

class IoUringEngine final : public Engine {
public:
    explicit IoUringEngine(const EngineConfig& c) : Engine(c) {
        int r = io_uring_queue_init(std::max<uint32_t>(c.qd, 1), &ring_, 0);
        if (r < 0) throw Error(std::string("io_uring_queue_init failed: ") + std::strerror(-r));
    }
    ~IoUringEngine() override { io_uring_queue_exit(&ring_); }
    std::string name() const override { return "io_uring"; }

    void register_buffers(const std::vector<iovec>& bufs) override {
        int r = io_uring_register_buffers(&ring_, bufs.data(), unsigned(bufs.size()));
        if (r < 0)
            throw Error(std::string("io_uring_register_buffers failed: ") + std::strerror(-r) + " (RLIMIT_MEMLOCK?)");
        fixed_ = true;
    }

    void queue(const IoUnit& u) override {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (!sqe) {
            commit();
            sqe = io_uring_get_sqe(&ring_);
            if (!sqe) throw Error("io_uring: submission queue full");
        }
        if (fixed_) {
            if (u.write)
                io_uring_prep_write_fixed(sqe, u.fd, u.buf, u.len, u.offset, u.buf_index);
            else
                io_uring_prep_read_fixed(sqe, u.fd, u.buf, u.len, u.offset, u.buf_index);
        } else {
            if (u.write)
                io_uring_prep_write(sqe, u.fd, u.buf, u.len, u.offset);
            else
                io_uring_prep_read(sqe, u.fd, u.buf, u.len, u.offset);
        }
        io_uring_sqe_set_data64(sqe, u.user_data);
    }

    void commit() override {
        int r = io_uring_submit(&ring_);
        if (r < 0) throw Error(std::string("io_uring_submit failed: ") + std::strerror(-r));
    }

    size_t reap(size_t min, std::vector<IoCompletion>& out) override {
        return reap_cqes(ring_, min, out, [](const io_uring_cqe& cqe) {
            return IoCompletion{io_uring_cqe_get_data64(&cqe), cqe.res, 0};
        });
    }

    void store_done(int fd) override {
        if (cfg_.buffered && ::fsync(fd) != 0) throw Error(std::string("fsync failed: ") + std::strerror(errno));
    }
    void before_load(int fd, uint64_t off, uint64_t len) override {
        if (cfg_.buffered) ::posix_fadvise(fd, off_t(off), off_t(len), POSIX_FADV_DONTNEED);
    }

private:
    io_uring ring_{};
    bool fixed_ = false;
};

}  // namespace

std::unique_ptr<Engine> make_io_uring_engine(const EngineConfig& c) { return std::make_unique<IoUringEngine>(c); }

}  // namespace kvio::workload
