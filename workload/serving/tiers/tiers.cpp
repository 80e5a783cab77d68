// CPU, GPU-model and null tier backends, and the helpers every backend shares.
#include "workload/serving/tiers/tiers.h"

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "common/error.h"

namespace kvio::serving {

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double thread_cpu_s() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

uint8_t* thread_chunk() {
    struct Buf {
        uint8_t* p = nullptr;
        ~Buf() { std::free(p); }
    };
    thread_local Buf b;
    if (!b.p) {
        b.p = static_cast<uint8_t*>(std::aligned_alloc(4096, kChunkBytes));
        if (!b.p) throw Error("cannot allocate a " + std::to_string(kChunkBytes) + "-byte I/O buffer");
    }
    return b.p;
}

std::string npy_header(uint64_t bytes, size_t total) {
    char dict[160];
    if (bytes % 2 == 0)
        std::snprintf(dict, sizeof dict, "{'descr': '<f2', 'fortran_order': False, 'shape': (%llu,), }",
                      (unsigned long long)(bytes / 2));
    else
        std::snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': False, 'shape': (%llu,), }",
                      (unsigned long long)bytes);
    std::string h("\x93NUMPY\x01\x00", 8);
    uint16_t hlen = uint16_t(total - 10);
    h.push_back(char(hlen & 0xff));
    h.push_back(char(hlen >> 8));
    h += dict;
    h.resize(total - 1, ' ');
    h.push_back('\n');
    return h;
}

namespace {

class CpuTier final : public TierBackend {
public:
    std::string name() const override { return "cpu"; }
    std::string description() const override { return "cpu (real bytes in RAM, memcpy timed)"; }

    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        auto mem = std::make_unique_for_overwrite<uint8_t[]>(bytes);
        uint8_t* chunk = thread_chunk();
        double copy = 0;
        for (uint64_t off = 0; off < bytes; off += kChunkBytes) {
            size_t n = size_t(std::min<uint64_t>(kChunkBytes, bytes - off));
            data.fill(off, chunk, n);  // generation: not timed
            double t0 = now_s();
            std::memcpy(mem.get() + off, chunk, n);
            copy += now_s() - t0;
        }
        std::lock_guard<std::mutex> g(mu_);
        map_[key] = std::move(mem);
        return {copy, copy, copy};
    }

    OpTiming read(const std::string& key, uint64_t bytes) override {
        const uint8_t* src;
        {
            std::lock_guard<std::mutex> g(mu_);
            auto it = map_.find(key);
            if (it == map_.end()) throw Error("cpu tier: no entry '" + key + "'");
            src = it->second.get();  // the policy never removes an entry under a reader
        }
        uint8_t* chunk = thread_chunk();
        double t0 = now_s();
        for (uint64_t off = 0; off < bytes; off += kChunkBytes)
            std::memcpy(chunk, src + off, size_t(std::min<uint64_t>(kChunkBytes, bytes - off)));
        double t = now_s() - t0;
        return {t, t, t};
    }

    void remove(const std::string& key) override {
        std::unique_ptr<uint8_t[]> gone;
        std::lock_guard<std::mutex> g(mu_);
        auto it = map_.find(key);
        if (it == map_.end()) return;
        gone = std::move(it->second);
        map_.erase(it);
    }

private:
    std::mutex mu_;
    std::unordered_map<std::string, std::unique_ptr<uint8_t[]>> map_;
};

// Sleeps until shortly before `deadline` (CLOCK_MONOTONIC s), then spins to it.
void wait_until(double deadline) {
    constexpr double kSpin = 100e-6;
    double now = now_s();
    if (deadline - now > kSpin) {
        double until = deadline - kSpin;
        timespec ts{time_t(until), long((until - double(time_t(until))) * 1e9)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
    }
    while (now_s() < deadline) {}
}

class GpuModelTier final : public TierBackend {
public:
    explicit GpuModelTier(double gbps) : gbps_(gbps) {
        if (!(gbps > 0)) throw Error("--gpu-bandwidth-gbps must be > 0 (got " + std::to_string(gbps) + ")");
    }
    std::string name() const override { return "gpu-model"; }
    std::string description() const override {
        char b[96];
        std::snprintf(b, sizeof b, "model (%g GB/s host<->GPU, no device)", gbps_);
        return b;
    }
    OpTiming write(const std::string&, uint64_t bytes, const EntryData&) override { return transfer(bytes); }
    OpTiming read(const std::string&, uint64_t bytes) override { return transfer(bytes); }
    void remove(const std::string&) override {}

private:
    OpTiming transfer(uint64_t bytes) {
        double t0 = now_s();
        wait_until(t0 + double(bytes) / (gbps_ * 1e9));
        double t = now_s() - t0;
        return {t, t, t};
    }
    double gbps_;
};

class NullTier final : public TierBackend {
public:
    std::string name() const override { return "null"; }
    std::string description() const override { return "null (trace mode: no data, timings 0)"; }
    OpTiming write(const std::string& key, uint64_t bytes, const EntryData&) override {
        std::lock_guard<std::mutex> g(mu_);
        sizes_[key] = bytes;
        return {};
    }
    OpTiming read(const std::string& key, uint64_t) override {
        std::lock_guard<std::mutex> g(mu_);
        if (!sizes_.count(key)) throw Error("null tier: no entry '" + key + "'");
        return {};
    }
    void remove(const std::string& key) override {
        std::lock_guard<std::mutex> g(mu_);
        sizes_.erase(key);
    }

private:
    std::mutex mu_;
    std::unordered_map<std::string, uint64_t> sizes_;
};

}  // namespace

std::unique_ptr<TierBackend> make_cpu_tier() { return std::make_unique<CpuTier>(); }
std::unique_ptr<TierBackend> make_gpu_model_tier(double gbps) { return std::make_unique<GpuModelTier>(gbps); }
std::unique_ptr<TierBackend> make_null_tier() { return std::make_unique<NullTier>(); }

}  // namespace kvio::serving
