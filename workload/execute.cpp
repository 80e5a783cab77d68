#include "workload/execute.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

#include "common/error.h"
#include "workload/pattern.h"

namespace kvio::workload {

uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

namespace {

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return b;
}

/// Page-aligned, pre-touched buffers, kept off transparent huge pages so the physical layout
/// (and thus segment counts) is page-granular and the same from run to run.
class BufferPool {
public:
    BufferPool(size_t n, size_t bytes) : bytes_(bytes) {
        const size_t page = size_t(::sysconf(_SC_PAGESIZE));
        for (size_t i = 0; i < n; ++i) {
            void* p = nullptr;
            if (posix_memalign(&p, page, bytes) != 0) throw Error("cannot allocate I/O buffers");
            ::madvise(p, bytes, MADV_NOHUGEPAGE);
            std::memset(p, 0, bytes);
            bufs_.push_back(p);
            free_.push_back(uint16_t(n - 1 - i));
        }
    }
    ~BufferPool() {
        for (void* p : bufs_) std::free(p);
    }
    std::vector<iovec> iovecs() const {
        std::vector<iovec> v;
        for (void* p : bufs_) v.push_back({p, bytes_});
        return v;
    }
    bool empty() const { return free_.empty(); }
    uint16_t take() {
        uint16_t i = free_.back();
        free_.pop_back();
        return i;
    }
    void give(uint16_t i) { free_.push_back(i); }
    void* at(uint16_t i) const { return bufs_[i]; }

private:
    size_t bytes_;
    std::vector<void*> bufs_;
    std::vector<uint16_t> free_;
};

struct Active {
    size_t index = 0;
    int fd = -1;
    bool own_fd = false;
    uint64_t next = 0;       ///< next position in the op's byte stream (header then payload)
    uint64_t total = 0;      ///< header_bytes + io_bytes
    uint32_t outstanding = 0;
    bool finished = false;
};

struct Inflight {
    size_t active;
    uint16_t buf;
    uint64_t stream_off;  ///< position in the op's byte stream
    uint32_t len;
};

}  // namespace

std::vector<OpResult> execute(const std::vector<ObjectOp>& ops, Engine& engine, const std::string& target, Layout layout,
                              const ExecOptions& opt) {
    if (opt.max_io_bytes == 0 || opt.max_io_bytes > (1u << 30)) throw Error("max I/O size must be in (0, 1 GiB]");
    std::vector<OpResult> res(ops.size());
    if (ops.empty()) return res;
    const uint32_t qd = std::max<uint32_t>(opt.qd, 1);
    if (uint64_t(qd) * opt.max_io_bytes > (1ull << 30))
        throw Error("--qd " + std::to_string(qd) + " × transfer cap " + std::to_string(opt.max_io_bytes) +
                    " bytes needs more than 1 GiB of pinned I/O buffers; lower --qd or --max-io");
    BufferPool pool(qd, opt.max_io_bytes);
    engine.register_buffers(pool.iovecs());

    int target_fd = -1;
    if (layout == Layout::Slots) target_fd = engine.open(target, OpenFor::Both, false);
    std::map<uint64_t, uint64_t> header_sums;  // object -> pattern checksum (cached)

    std::vector<Active> active;                   // index = slot in this vector; finished ones are reused lazily
    std::unordered_map<uint64_t, Inflight> inflight;
    std::vector<IoCompletion> comps;
    size_t next_op = 0, finished = 0;
    uint32_t counter = 0;

    auto finish = [&](Active& a) {
        const ObjectOp& op = ops[a.index];
        OpResult& r = res[a.index];
        if (op.op == OpKind::Store && r.error.empty()) {
            try {
                engine.store_done(a.fd);
            } catch (const Error& e) {
                r.error = e.what();
            }
        }
        r.ts = monotonic_ns();
        if (opt.on_done) opt.on_done(a.index, op, r, a.fd);
        if (a.own_fd) engine.close(a.fd);
        a.finished = true;
        ++finished;
    };

    auto busy_object = [&](uint64_t obj) {
        for (const auto& a : active)
            if (!a.finished && ops[a.index].object_id == obj) return true;
        return false;
    };

    auto start_op = [&]() -> Active* {
        const ObjectOp& op = ops[next_op];
        Active a;
        a.index = next_op;
        a.total = op.header_bytes + op.io_bytes;
        if (layout == Layout::Files) {
            std::string path = target + "/" + op.file;
            a.fd = engine.open(path, op.op == OpKind::Store ? OpenFor::Store : OpenFor::Load, op.op == OpKind::Store);
            a.own_fd = true;
        } else {
            a.fd = target_fd;
        }
        if (op.op == OpKind::Load) engine.before_load(a.fd, op.offset, op.io_bytes);
        res[next_op].ts_start = monotonic_ns();
        ++next_op;
        // reuse a finished slot so the vector stays small
        for (auto& s : active)
            if (s.finished) {
                s = a;
                return &s;
            }
        active.push_back(a);
        return &active.back();
    };

    auto queue_one = [&](size_t ai) {
        Active& a = active[ai];
        const ObjectOp& op = ops[a.index];
        OpResult& r = res[a.index];
        uint64_t pos = a.next;
        uint32_t len;
        bool header = pos < op.header_bytes;
        if (header) len = uint32_t(op.header_bytes);  // the header is its own transfer
        else len = uint32_t(std::min<uint64_t>(opt.max_io_bytes, a.total - pos));
        uint16_t b = pool.take();
        void* buf = pool.at(b);
        if (op.op == OpKind::Store) {
            if (header) {
                std::memset(buf, 0, len);
                SlotHeader h{};
                std::memcpy(h.magic, "KVIOSLT1", 8);
                h.object_id = op.object_id;
                h.payload_bytes = op.payload_bytes;
                h.io_bytes = op.io_bytes;
                auto it = header_sums.find(op.object_id);
                if (it == header_sums.end())
                    it = header_sums.emplace(op.object_id, pattern_checksum(op.object_id, op.io_bytes)).first;
                h.checksum = it->second;
                h.trace_id = op.trace_id;
                h.key_len = uint32_t(std::min(op.key.size(), sizeof h.key));
                std::memcpy(h.key, op.key.data(), h.key_len);
                std::memcpy(buf, &h, std::min<size_t>(sizeof h, len));
            } else {
                uint64_t poff = pos - op.header_bytes;
                fill_pattern(buf, op.object_id, poff, len);
                r.checksum += checksum(buf, poff, len);
            }
        }
        IoUnit u;
        u.fd = a.fd;
        u.write = op.op == OpKind::Store;
        u.offset = op.offset + pos;
        u.len = len;
        u.buf = buf;
        u.buf_index = b;
        u.user_data = (uint64_t(op.trace_id) << 32) | counter++;
        inflight[u.user_data] = {ai, b, pos, len};
        a.next += len;
        ++a.outstanding;
        ++r.transfers;
        engine.queue(u);
    };

    while (finished < ops.size()) {
        // Fill the queue: finish queuing the newest op, then start the next one if it does not
        // depend on an op still in flight.
        while (!pool.empty()) {
            size_t cur = SIZE_MAX;
            for (size_t i = 0; i < active.size(); ++i)
                if (!active[i].finished && active[i].next < active[i].total) cur = i;
            if (cur != SIZE_MAX) {
                queue_one(cur);
                continue;
            }
            if (next_op >= ops.size() || busy_object(ops[next_op].object_id)) break;
            Active* a = start_op();
            if (a->total == 0) finish(*a);
        }
        engine.commit();
        if (inflight.empty()) continue;
        comps.clear();
        engine.reap(1, comps);
        for (const auto& c : comps) {
            auto it = inflight.find(c.user_data);
            if (it == inflight.end()) throw Error("engine returned an unknown completion (user_data " + std::to_string(c.user_data) + ")");
            Inflight f = it->second;
            inflight.erase(it);
            Active& a = active[f.active];
            const ObjectOp& op = ops[a.index];
            OpResult& r = res[a.index];
            void* buf = pool.at(f.buf);
            if (c.res < 0) {
                if (r.error.empty())
                    r.error = "transfer at offset " + std::to_string(op.offset + f.stream_off) + " failed: " +
                              std::strerror(int(-c.res)) + (c.nvme_status ? " (NVMe status " + hex(c.nvme_status) + ")" : "");
            } else if (uint64_t(c.res) != f.len) {
                if (r.error.empty())
                    r.error = "short transfer at offset " + std::to_string(op.offset + f.stream_off) + ": " +
                              std::to_string(c.res) + " of " + std::to_string(f.len) + " bytes";
            } else {
                r.bytes += f.len;
                if (op.op == OpKind::Load) {
                    uint64_t poff = f.stream_off - op.header_bytes;
                    r.checksum += checksum(buf, poff, f.len);
                    uint64_t bad = verify_pattern(buf, op.object_id, poff, f.len);
                    if (bad != UINT64_MAX && r.error.empty())
                        r.error = "payload mismatch at byte " + std::to_string(bad) + " of object " + std::to_string(op.object_id);
                }
            }
            pool.give(f.buf);
            if (--a.outstanding == 0 && a.next >= a.total) finish(a);
        }
    }
    if (target_fd >= 0) engine.close(target_fd);
    return res;
}

}  // namespace kvio::workload
