#include "workload/serving/semantic_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "workload/serving/semantic_log.h"

namespace kvio::serving {

namespace {

uint64_t mono_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

class SemanticTier final : public TierBackend {
public:
    SemanticTier(std::unique_ptr<TierBackend> inner, std::string dir, const SemanticLog::Meta& meta,
                 const std::string& path)
        : inner_(std::move(inner)), dir_(std::move(dir)), log_(path, meta) {}
    std::string name() const override { return inner_->name(); }
    std::string description() const override {
        return inner_->description() + "; kvio.semantic/1 records to " + log_.path();
    }
    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        return timed(true, key, [&] { return inner_->write(key, bytes, data); });
    }
    OpTiming read(const std::string& key, uint64_t bytes) override {
        return timed(false, key, [&] { return inner_->read(key, bytes); });
    }
    void remove(const std::string& key) override { inner_->remove(key); }

private:
    template <class F>
    OpTiming timed(bool store, const std::string& key, F op) {
        const uint64_t t0 = mono_ns();
        OpTiming t;
        try {
            t = op();
        } catch (const std::exception& e) {
            log_.record(store, key, -1, 0, t0, mono_ns(), 0, e.what());
            throw;
        }
        const uint64_t t1 = mono_ns();
        const std::string file = dir_ + "/" + key + ".npy";
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st{};
        if (fd < 0 || ::fstat(fd, &st) != 0) {
            log_.record(store, key, -1, 0, t0, t1, 0, "cannot open " + file + " to map its extents");
        } else {
            log_.record(store, key, fd, uint64_t(st.st_size), t0, t1, 0);
        }
        if (fd >= 0) ::close(fd);
        return t;
    }
    std::unique_ptr<TierBackend> inner_;
    std::string dir_;
    SemanticLog log_;
};

}  // namespace

std::unique_ptr<TierBackend> make_semantic_tier(std::unique_ptr<TierBackend> inner, const std::string& dir,
                                                const std::string& semantic_path, const std::string& model,
                                                bool buffered) {
    SemanticLog::Meta meta;
    meta.dir = dir;
    meta.engine = "posix";
    meta.model = model;
    meta.buffered = buffered;
    return std::make_unique<SemanticTier>(std::move(inner), dir, meta, semantic_path);
}

}  // namespace kvio::serving
