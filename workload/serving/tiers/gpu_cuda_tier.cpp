// GPU tier on a real device: libcudart loaded with dlopen at run time (no CUDA toolkit needed to build),
// entries in cudaMalloc'ed device memory, writes and reads as timed cudaMemcpy of kChunkBytes pieces
// (the benchmark's torch path: host → device copy + synchronize; cudaMemcpy is synchronous).
#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "common/error.h"
#include "workload/serving/tiers/gpu_tier.h"

namespace kvio::serving {
namespace {

// The few runtime entry points used (cuda_runtime_api.h); cudaError_t is an int enum, 0 = cudaSuccess.
struct CudaRt {
    void* lib = nullptr;
    int (*get_device_count)(int*) = nullptr;
    int (*set_device)(int) = nullptr;
    int (*malloc)(void**, size_t) = nullptr;
    int (*free)(void*) = nullptr;
    int (*memcpy)(void*, const void*, size_t, int) = nullptr;  // kind 1 = HostToDevice, 2 = DeviceToHost
    int (*get_props)(void*, int) = nullptr;                    // cudaDeviceProp starts with char name[256]
    const char* (*error_string)(int) = nullptr;
    std::string error;  // why it could not be loaded

    std::string err(int e) const { return error_string ? error_string(e) : "CUDA error " + std::to_string(e); }
};

const CudaRt& cudart() {
    static CudaRt rt = [] {
        CudaRt r;
        for (const char* n : {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                              "/usr/local/cuda/lib64/libcudart.so"})
            if ((r.lib = ::dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
        if (!r.lib) {
            r.error = "libcudart.so could not be loaded (no CUDA runtime installed)";
            return r;
        }
        auto sym = [&](const char* name) { return ::dlsym(r.lib, name); };
        r.get_device_count = reinterpret_cast<int (*)(int*)>(sym("cudaGetDeviceCount"));
        r.set_device = reinterpret_cast<int (*)(int)>(sym("cudaSetDevice"));
        r.malloc = reinterpret_cast<int (*)(void**, size_t)>(sym("cudaMalloc"));
        r.free = reinterpret_cast<int (*)(void*)>(sym("cudaFree"));
        r.memcpy = reinterpret_cast<int (*)(void*, const void*, size_t, int)>(sym("cudaMemcpy"));
        void* p = sym("cudaGetDeviceProperties_v2");
        r.get_props = reinterpret_cast<int (*)(void*, int)>(p ? p : sym("cudaGetDeviceProperties"));
        r.error_string = reinterpret_cast<const char* (*)(int)>(sym("cudaGetErrorString"));
        if (!r.get_device_count || !r.set_device || !r.malloc || !r.free || !r.memcpy)
            r.error = "libcudart.so lacks cudaGetDeviceCount/cudaSetDevice/cudaMalloc/cudaFree/cudaMemcpy";
        return r;
    }();
    return rt;
}

class CudaTier final : public TierBackend {
public:
    explicit CudaTier(std::string device) : device_(std::move(device)) {}
    ~CudaTier() override {
        for (auto& [k, p] : mem_) cudart().free(p);
    }
    std::string name() const override { return "gpu-cuda"; }
    std::string description() const override { return "cuda (" + device_ + ", cudaMemcpy timed)"; }

    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        const CudaRt& rt = cudart();
        void* dev = nullptr;
        if (int e = rt.malloc(&dev, bytes ? bytes : 1))
            throw Error("cudaMalloc(" + std::to_string(bytes) + "): " + rt.err(e));
        uint8_t* chunk = thread_chunk();
        double t = 0;
        for (uint64_t off = 0; off < bytes; off += kChunkBytes) {
            size_t n = size_t(std::min<uint64_t>(kChunkBytes, bytes - off));
            data.fill(off, chunk, n);
            double t0 = now_s();
            int e = rt.memcpy(static_cast<uint8_t*>(dev) + off, chunk, n, 1);
            t += now_s() - t0;
            if (e) {
                rt.free(dev);
                throw Error("cudaMemcpy host->device: " + rt.err(e));
            }
        }
        std::lock_guard<std::mutex> g(mu_);
        mem_[key] = dev;
        return {t, t, t};
    }

    OpTiming read(const std::string& key, uint64_t bytes) override {
        const CudaRt& rt = cudart();
        void* dev;
        {
            std::lock_guard<std::mutex> g(mu_);
            auto it = mem_.find(key);
            if (it == mem_.end()) throw Error("gpu tier: no entry '" + key + "'");
            dev = it->second;
        }
        uint8_t* chunk = thread_chunk();
        double t0 = now_s();
        for (uint64_t off = 0; off < bytes; off += kChunkBytes)
            if (int e = rt.memcpy(chunk, static_cast<uint8_t*>(dev) + off,
                                  size_t(std::min<uint64_t>(kChunkBytes, bytes - off)), 2))
                throw Error("cudaMemcpy device->host: " + rt.err(e));
        double t = now_s() - t0;
        return {t, t, t};
    }

    void remove(const std::string& key) override {
        std::lock_guard<std::mutex> g(mu_);
        auto it = mem_.find(key);
        if (it == mem_.end()) return;
        cudart().free(it->second);
        mem_.erase(it);
    }

private:
    std::string device_;
    std::mutex mu_;
    std::unordered_map<std::string, void*> mem_;
};

}  // namespace

std::string cuda_device_name(std::string* why) {
    const CudaRt& rt = cudart();
    if (!rt.error.empty()) {
        if (why) *why = rt.error;
        return "";
    }
    int n = 0;
    if (int e = rt.get_device_count(&n)) {
        if (why) *why = "cudaGetDeviceCount: " + rt.err(e);
        return "";
    }
    if (n <= 0) {
        if (why) *why = "no CUDA device";
        return "";
    }
    if (int e = rt.set_device(0)) {
        if (why) *why = "cudaSetDevice(0): " + rt.err(e);
        return "";
    }
    std::string name = "device 0";
    if (rt.get_props) {
        std::vector<char> props(16384, 0);  // larger than any cudaDeviceProp; name[256] is its first member
        if (rt.get_props(props.data(), 0) == 0) name = std::string(props.data(), strnlen(props.data(), 256));
    }
    return name;
}

std::unique_ptr<TierBackend> make_gpu_tier(const std::string& mode, double gbps, std::string* description) {
    if (mode != "auto" && mode != "model" && mode != "cuda")
        throw Error("--gpu-tier '" + mode + "': expected auto, model or cuda");
    std::unique_ptr<TierBackend> t;
    if (mode != "model") {
        std::string why, dev = cuda_device_name(&why);
        if (!dev.empty())
            t = std::make_unique<CudaTier>(dev);
        else if (mode == "cuda")
            throw Error("--gpu-tier cuda: " + why + "; use --gpu-tier model (a capacity + bandwidth model) instead");
    }
    if (!t) t = make_gpu_model_tier(gbps);
    if (description) *description = t->description();
    return t;
}

}  // namespace kvio::serving
