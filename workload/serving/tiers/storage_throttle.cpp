#include "workload/serving/tiers/storage_throttle.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <sstream>
#include <thread>

namespace kvio::serving {

namespace {

class ThrottledTier : public StorageTier {
public:
    ThrottledTier(std::unique_ptr<StorageTier> inner, double mib_per_s)
        : inner_(std::move(inner)), bytes_per_s_(mib_per_s * double(1u << 20)), mib_per_s_(mib_per_s) {}

    void set_cut_flag(const std::atomic<bool>* flag) override {
        StorageTier::set_cut_flag(flag);
        inner_->set_cut_flag(flag);
    }
    void set_read_check(const NoisePool* pool, uint64_t seed) override {
        StorageTier::set_read_check(pool, seed);
        inner_->set_read_check(pool, seed);
    }
    std::string name() const override { return inner_->name(); }
    std::string description() const override {
        std::ostringstream o;
        o << inner_->description() << ", throttled to " << mib_per_s_ << " MiB/s (--storage-throttle-mibps)";
        return o.str();
    }
    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        const double slot_end = reserve(bytes);
        return finish(inner_->write(key, bytes, data), slot_end);
    }
    OpTiming read(const std::string& key, uint64_t bytes) override {
        const double slot_end = reserve(bytes);
        return finish(inner_->read(key, bytes), slot_end);
    }
    void remove(const std::string& key) override { inner_->remove(key); }
    uint64_t footprint(uint64_t bytes) const override { return inner_->footprint(bytes); }
    uint64_t auto_capacity() const override { return inner_->auto_capacity(); }

private:
    // The op's slot on the shared timeline: [max(now, end of the previous slot), + bytes / bandwidth).
    double reserve(uint64_t bytes) {
        std::lock_guard lk(mu_);
        const double start = std::max(now_s(), next_free_s_);
        next_free_s_ = start + double(bytes) / bytes_per_s_;
        return next_free_s_;
    }
    // The op's I/O is done: waits for the end of its slot, in steps of at most 10 ms so a stop (the cut flag)
    // ends the wait; the op stays done, with the time it waited.
    OpTiming finish(OpTiming t, double slot_end) const {
        const double t0 = now_s();
        for (double now = t0; now < slot_end && !cut_requested(); now = now_s())
            std::this_thread::sleep_for(std::chrono::duration<double>(std::min(slot_end - now, 0.01)));
        const double wait = now_s() - t0;
        t.device += wait;
        t.total += wait;
        return t;
    }

    std::unique_ptr<StorageTier> inner_;
    double bytes_per_s_, mib_per_s_;
    std::mutex mu_;
    double next_free_s_ = 0;
};

}  // namespace

std::unique_ptr<StorageTier> make_throttled_storage_tier(std::unique_ptr<StorageTier> inner, double mib_per_s) {
    return std::make_unique<ThrottledTier>(std::move(inner), mib_per_s);
}

}  // namespace kvio::serving
