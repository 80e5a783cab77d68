// The bounded write-back queue (writeback_queue.h).
#include "workload/serving/tiers/writeback_queue.h"

#include <algorithm>
#include <chrono>

#include "workload/serving/tiers/tiers.h"

namespace kvio::serving {

WriteBackQueue::WriteBackQueue(size_t bound, Fn write, Fn lost)
    : bound_(std::max<size_t>(bound, 1)), write_(std::move(write)), lost_(std::move(lost)) {
    thread_ = std::thread([this] { run(); });
}

WriteBackQueue::~WriteBackQueue() { stop(); }

double WriteBackQueue::push(WriteJob j) {
    std::unique_lock<std::mutex> l(mu_);
    double waited = 0;
    if (q_.size() >= bound_ && !stopped_) {
        const double t0 = now_s();
        not_full_.wait(l, [&] { return q_.size() < bound_ || stopped_; });
        waited = now_s() - t0;
        waits_ += 1;
        wait_s_ += waited;
    }
    if (stopped_) {
        l.unlock();
        lost_(j);
        return waited;
    }
    q_.push_back(std::move(j));
    queued_max_ = std::max(queued_max_, q_.size());
    not_empty_.notify_one();
    return waited;
}

void WriteBackQueue::run() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
        not_empty_.wait(l, [&] { return !q_.empty() || stopped_; });
        if (q_.empty()) return;  // stopped, nothing left (stop() took what was queued)
        WriteJob j = std::move(q_.front());
        q_.pop_front();
        busy_ = true;
        not_full_.notify_one();
        l.unlock();
        write_(j);
        l.lock();
        busy_ = false;
        idle_.notify_all();
    }
}

bool WriteBackQueue::drain(double timeout_s) {
    std::unique_lock<std::mutex> l(mu_);
    return idle_.wait_for(l, std::chrono::duration<double>(std::max(0.0, timeout_s)),
                          [&] { return q_.empty() && !busy_; });
}

uint64_t WriteBackQueue::stop() {
    std::deque<WriteJob> left;
    {
        std::lock_guard<std::mutex> g(mu_);
        stopped_ = true;
        left.swap(q_);
        not_empty_.notify_all();
        not_full_.notify_all();
        idle_.notify_all();
    }
    for (WriteJob& j : left) lost_(j);
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
    return left.size();
}

size_t WriteBackQueue::queued_max() const {
    std::lock_guard<std::mutex> g(mu_);
    return queued_max_;
}

uint64_t WriteBackQueue::full_waits() const {
    std::lock_guard<std::mutex> g(mu_);
    return waits_;
}

double WriteBackQueue::full_wait_s() const {
    std::lock_guard<std::mutex> g(mu_);
    return wait_s_;
}

}  // namespace kvio::serving
