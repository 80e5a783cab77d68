// posix engine: pread/pwrite (O_DIRECT unless --buffered; buffered stores end with fsync, as np.save +
// fsync does, and loads start with posix_fadvise(DONTNEED)). QD 1: each transfer runs in queue() on the
// calling thread, like fio's psync engine. QD N > 1: N worker threads, each running one pread/pwrite at
// a time, so up to N transfers are in flight (like fio psync with numjobs=N sharing one stream).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "workload/engine.h"

namespace kvio::workload {
namespace {

IoCompletion run_one(const IoUnit& u) {
    ssize_t n = u.write ? ::pwrite(u.fd, u.buf, u.len, off_t(u.offset)) : ::pread(u.fd, u.buf, u.len, off_t(u.offset));
    return {u.user_data, n < 0 ? -int64_t(errno) : int64_t(n), 0};
}

class PosixEngine final : public Engine {
public:
    explicit PosixEngine(const EngineConfig& c) : Engine(c) {
        for (uint32_t i = 1; c.qd > 1 && i <= c.qd; ++i) workers_.emplace_back([this] { work(); });
    }
    ~PosixEngine() override {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        work_cv_.notify_all();
        for (auto& t : workers_) t.join();
    }
    std::string name() const override { return "posix"; }

    void queue(const IoUnit& u) override {
        if (workers_.empty()) {
            done_.push_back(run_one(u));
            return;
        }
        {
            std::lock_guard<std::mutex> g(mu_);
            todo_.push_back(u);
        }
        work_cv_.notify_one();
    }

    size_t reap(size_t min, std::vector<IoCompletion>& out) override {
        std::unique_lock<std::mutex> g(mu_, std::defer_lock);
        if (!workers_.empty()) {
            g.lock();
            done_cv_.wait(g, [&] { return done_.size() >= min; });
        }
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
    void work() {
        std::unique_lock<std::mutex> g(mu_);
        while (true) {
            work_cv_.wait(g, [&] { return stop_ || !todo_.empty(); });
            if (todo_.empty()) return;  // stop_
            IoUnit u = todo_.front();
            todo_.pop_front();
            g.unlock();
            IoCompletion c = run_one(u);
            g.lock();
            done_.push_back(c);
            done_cv_.notify_one();
        }
    }

    std::vector<IoCompletion> done_;  // QD 1: touched by the caller only; QD > 1: under mu_
    std::deque<IoUnit> todo_;
    std::mutex mu_;
    std::condition_variable work_cv_, done_cv_;
    bool stop_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Engine> make_posix_engine(const EngineConfig& c) { return std::make_unique<PosixEngine>(c); }

}  // namespace kvio::workload
