#include "workload/serving/tiers/storage_io.h"

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "common/error.h"
#include "workload/serving/tiers/tiers.h"

namespace kvio::serving {

EnginePool::EnginePool(const std::string& engine, uint32_t qd, uint64_t max_io)
    : engine_(engine), qd_(std::max<uint32_t>(qd, 1)), max_io_(std::max<uint64_t>(max_io / 4096 * 4096, 4096)) {}

EnginePool::~EnginePool() {
    for (auto& s : free_)
        for (void* b : s->bufs) std::free(b);
}

EnginePool::Lease EnginePool::take() {
    {
        std::lock_guard<std::mutex> g(mu_);
        if (!free_.empty()) {
            auto s = std::move(free_.back());
            free_.pop_back();
            return Lease(*this, std::move(s));
        }
    }
    auto s = std::make_unique<Slot>();
    workload::EngineConfig ec;
    ec.name = engine_;
    ec.qd = qd_;
    ec.buffered = false;
    s->engine = workload::make_engine(ec);
    std::vector<iovec> iov;
    for (uint32_t i = 0; i < qd_; ++i) {
        void* b = std::aligned_alloc(4096, max_io_);
        if (!b) throw Error("cannot allocate " + std::to_string(max_io_) + "-byte I/O buffers");
        s->bufs.push_back(b);
        iov.push_back({b, max_io_});
    }
    s->engine->register_buffers(iov);
    return Lease(*this, std::move(s));
}

void EnginePool::give(std::unique_ptr<Slot> s) {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(std::move(s));
}

TransferResult EnginePool::run(Slot& s, int fd, bool write, const std::vector<std::pair<uint64_t, uint64_t>>& where,
                               uint64_t total, const std::string& header, const EntryData* data, uint64_t payload,
                               uint32_t trace_id, const std::function<bool()>& cut) {
    TransferResult r;
    const bool sync_engine = engine_ == "posix";  // its queue() performs the transfer: that time is device time
    struct Inflight {
        uint16_t buf;
        uint32_t len;
        uint64_t offset;  ///< where on the file or device: named when the transfer fails
    };
    std::unordered_map<uint64_t, Inflight> inflight;
    std::vector<uint16_t> free_bufs;
    for (uint16_t i = 0; i < s.bufs.size(); ++i) free_bufs.push_back(i);
    std::vector<workload::IoCompletion> comps;
    std::string error;
    uint64_t pos = 0, counter = 0;
    size_t piece = 0;
    uint64_t piece_start = 0;  // stream offset where `where[piece]` begins
    double gen = 0;
    const uint64_t hdr = header.empty() ? 0 : kDirectHeader;
    bool stopped = false;  // `cut` said true: nothing more is queued
    auto more = [&] { return pos < total && error.empty() && !(stopped = stopped || (cut && cut())); };
    while (more() || !inflight.empty()) {
        double q0 = now_s(), g0 = gen;
        while (!free_bufs.empty() && inflight.size() < qd_ && more()) {
            while (piece < where.size() && pos >= piece_start + where[piece].second)
                piece_start += where[piece++].second;
            if (piece == where.size())
                throw Error("storage op: " + std::to_string(total) + " bytes exceed their extents");
            uint64_t piece_left = piece_start + where[piece].second - pos;
            uint32_t len = pos < hdr ? uint32_t(hdr) : uint32_t(std::min({max_io_, total - pos, piece_left}));
            uint16_t b = free_bufs.back();
            free_bufs.pop_back();
            auto* buf = static_cast<uint8_t*>(s.bufs[b]);
            if (write) {
                double f0 = now_s();
                if (pos < hdr) {
                    std::memset(buf, 0, len);
                    std::memcpy(buf, header.data(), std::min<size_t>(header.size(), len));
                } else {
                    uint64_t eoff = pos - hdr;
                    uint64_t n = eoff < payload ? std::min<uint64_t>(len, payload - eoff) : 0;
                    if (n) data->fill(eoff, buf, n);
                    if (n < len) std::memset(buf + n, 0, len - n);
                }
                gen += now_s() - f0;
            }
            workload::IoUnit u;
            u.fd = fd;
            u.write = write;
            u.offset = where[piece].first + (pos - piece_start);
            u.len = len;
            u.buf = buf;
            u.buf_index = b;
            u.user_data = (uint64_t(trace_id) << 32) | counter++;
            inflight[u.user_data] = {b, len, u.offset};
            s.engine->queue(u);
            pos += len;
            r.transfers++;
        }
        s.engine->commit();
        double q1 = now_s();
        (sync_engine ? r.device : r.host) += (q1 - q0) - (gen - g0);
        if (inflight.empty()) continue;
        comps.clear();
        s.engine->reap(1, comps);
        r.device += now_s() - q1;
        for (const auto& c : comps) {
            auto it = inflight.find(c.user_data);
            if (it == inflight.end()) throw Error("engine returned an unknown completion");
            // Where it failed, so a bad range of the drive can be found (gen and replay name it too).
            const std::string at =
                " (" + std::to_string(it->second.len) + " bytes at byte " + std::to_string(it->second.offset) + ")";
            if (c.res < 0 && error.empty())
                error = std::strerror(int(-c.res)) + at;
            else if (c.res >= 0 && uint64_t(c.res) != it->second.len && error.empty())
                error = "short transfer: " + std::to_string(c.res) + " of" + at;
            else
                r.bytes += it->second.len;
            free_bufs.push_back(it->second.buf);
            inflight.erase(it);
        }
    }
    if (!error.empty()) throw Error(std::string(write ? "write" : "read") + " failed: " + error);
    if (stopped) throw OpCut(r.bytes);
    return r;
}

}  // namespace kvio::serving
