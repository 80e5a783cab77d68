// The simulation's one request queue (benchmark benchmark.py: queue.PriorityQueue keyed (-priority, time.time()),
// docs/mlperf-benchmark.md, "Users and the request stream"): unbounded, strict priority interactive > responsive >
// batch, FIFO within a class. kvio breaks ties by the global request sequence number instead of enqueue wall time (no
// equal keys, reproducible order).
#pragma once
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <queue>
#include <vector>

#include "workload/serving/request.h"

namespace kvio::serving {

class RequestQueue {
public:
    using Ptr = std::shared_ptr<InferenceRequest>;
    void push(Ptr r) {
        {
            std::lock_guard lk(mu_);
            q_.push(std::move(r));
        }
        cv_.notify_one();
    }
    /// The highest-priority request, waiting up to `timeout`; null on timeout or after close().
    Ptr pop(std::chrono::milliseconds timeout) {
        std::unique_lock lk(mu_);
        if (!cv_.wait_for(lk, timeout, [&] { return closed_ || !q_.empty(); }) || closed_) return nullptr;
        Ptr r = q_.top();
        q_.pop();
        return r;
    }
    /// Wakes every waiter; later pops return null. Returns how many requests were still queued (dropped).
    size_t close() {
        size_t n;
        {
            std::lock_guard lk(mu_);
            closed_ = true;
            n = q_.size();
        }
        cv_.notify_all();
        return n;
    }
    size_t size() const {
        std::lock_guard lk(mu_);
        return q_.size();
    }

private:
    struct Later {  // priority_queue keeps the "largest" on top: lower priority, then higher seq, is "smaller"
        bool operator()(const Ptr& a, const Ptr& b) const {
            int pa = qos_priority(a->qos), pb = qos_priority(b->qos);
            return pa != pb ? pa < pb : a->seq > b->seq;
        }
    };
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::priority_queue<Ptr, std::vector<Ptr>, Later> q_;
    bool closed_ = false;
};

}  // namespace kvio::serving
