// posix engine: pread/pwrite, one transfer at a time (O_DIRECT unless --buffered; buffered stores
// end with fsync, as np.save + fsync does, and loads start with posix_fadvise(DONTNEED)).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "workload/engine.h"

namespace kvio::workload {
namespace {

class PosixEngine final : public Engine {
public:
    explicit PosixEngine(const EngineConfig& c) : Engine(c) {}
    std::string name() const override { return "posix"; }

    void queue(const IoUnit& u) override {
        ssize_t n = u.write ? ::pwrite(u.fd, u.buf, u.len, off_t(u.offset)) : ::pread(u.fd, u.buf, u.len, off_t(u.offset));
        done_.push_back({u.user_data, n < 0 ? -int64_t(errno) : int64_t(n), 0});
    }

    size_t reap(size_t min, std::vector<IoCompletion>& out) override {
        (void)min;  // every queued transfer has completed already
        size_t n = done_.size();
        out.insert(out.end(), done_.begin(), done_.end());
        done_.clear();
        return n;
    }

    void store_done(int fd) override {
        if (cfg_.buffered && ::fsync(fd) != 0) throw Error(std::string("fsync failed: ") + std::strerror(errno));
    }

    void before_load(int fd, uint64_t off, uint64_t len) override {
        if (cfg_.buffered) ::posix_fadvise(fd, off_t(off), off_t(len), POSIX_FADV_DONTNEED);
    }

private:
    std::vector<IoCompletion> done_;
};

}  // namespace

std::unique_ptr<Engine> make_posix_engine(const EngineConfig& c) { return std::make_unique<PosixEngine>(c); }

}  // namespace kvio::workload
