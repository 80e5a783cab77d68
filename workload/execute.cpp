#include "workload/execute.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
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
/// (and thus segment counts) is page-granular and the same from run to run. Each buffer is filled
/// with the base block once (pattern.h) and remembers how many leading bytes no longer hold it (a
/// slot header, a load): a store then only rewrites the stamps, unless the buffer is dirty. Stores
/// take clean buffers and loads dirty ones first, so with 2 × qd buffers and at most qd transfers in
/// flight a store never has to refill (the dirty ones are at most the loads in flight).
class BufferPool {
public:
    BufferPool(size_t n, size_t bytes) : bytes_(bytes), state_(n) {
        const size_t page = size_t(::sysconf(_SC_PAGESIZE));
        for (size_t i = 0; i < n; ++i) {
            void* p = nullptr;
            if (posix_memalign(&p, page, bytes) != 0) throw Error("cannot allocate I/O buffers");
            bufs_.push_back(p);
            ::madvise(p, bytes, MADV_NOHUGEPAGE);
            fill_base(p, 0, bytes);  // also pre-touches every page
            clean_.push_back(uint16_t(n - 1 - i));
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
    bool empty() const { return clean_.empty() && dirty_.empty(); }
    /// A buffer for a store (clean first) or a load (dirty first).
    uint16_t take(bool store) {
        auto& first = store ? clean_ : dirty_;
        auto& other = store ? dirty_ : clean_;
        auto& from = first.empty() ? other : first;
        uint16_t i = from.back();
        from.pop_back();
        return i;
    }
    void give(uint16_t i) { (state_[i].dirty ? dirty_ : clean_).push_back(i); }
    void* at(uint16_t i) const { return bufs_[i]; }
    /// Bytes [0, len) of buffer i will be overwritten with something else than the base block.
    void soil(uint16_t i, uint64_t len) { state_[i].dirty = std::max(state_[i].dirty, len); }
    /// Makes buffer i hold the pattern of payload bytes [off, off + len) of (object, gen).
    void fill_store(uint16_t i, uint64_t object_id, uint64_t gen, uint64_t off, uint64_t len) {
        State& s = state_[i];
        const uint64_t phase = off % kStampBlockBytes;
        if (s.phase != phase) {
            fill_base(bufs_[i], off, bytes_);
            s.phase = phase;
            s.dirty = 0;
        } else if (s.dirty) {
            fill_base(bufs_[i], off, std::min<uint64_t>(s.dirty, bytes_));
            s.dirty = 0;
        }
        stamp_pattern(bufs_[i], object_id, gen, off, len);
    }

private:
    struct State {
        uint64_t dirty = 0;  ///< leading bytes that may not hold the base block
        uint64_t phase = 0;  ///< payload offset mod 4 KiB of the buffer's first byte
    };
    size_t bytes_;
    std::vector<void*> bufs_;
    std::vector<State> state_;
    std::vector<uint16_t> clean_, dirty_;
};

struct Active {
    size_t index = 0;
    int fd = -1;
    bool own_fd = false;
    uint64_t next = 0;   ///< next position in the op's byte stream (header then payload)
    uint64_t total = 0;  ///< header_bytes + io_bytes
    uint32_t outstanding = 0;
    bool finished = false;
    uint64_t gen =
        0;  ///< pattern generation: a store's trace_id; a load: that of the last store before it (0: unknown)
};

struct Inflight {
    size_t active;
    uint16_t buf;
    uint64_t stream_off;  ///< position in the op's byte stream
    uint32_t len;
};

}  // namespace

std::vector<OpResult> execute(const std::vector<ObjectOp>& ops, Engine& engine, const std::string& target,
                              Layout layout, const ExecOptions& opt) {
    if (opt.max_io_bytes == 0 || opt.max_io_bytes > (1u << 30)) throw Error("max I/O size must be in (0, 1 GiB]");
    if (opt.not_before && opt.not_before->size() != ops.size())
        throw Error("execute: not_before needs one time per op");
    std::vector<OpResult> res(ops.size());
    if (ops.empty()) return res;
    uint64_t anchor =
        0;  // CLOCK_MONOTONIC ns of the schedule's offset 0 (ExecOptions::not_before), set at the first op
    const uint32_t qd = std::max<uint32_t>(opt.qd, 1);
    if (uint64_t(qd) * opt.max_io_bytes > (1ull << 30))
        throw Error("--qd " + std::to_string(qd) + " × transfer cap " + std::to_string(opt.max_io_bytes) +
                    " bytes needs more than 1 GiB of pinned I/O buffers; lower --qd or --max-io");
    // 2 × qd buffers when they fit in 1 GiB (stores then never refill, see BufferPool), else qd.
    size_t nbuf = uint64_t(2) * qd * opt.max_io_bytes <= (1ull << 30) && 2 * qd <= 65536 ? 2 * qd : qd;
    if (opt.buffers) nbuf = std::max<size_t>(opt.buffers, qd);
    BufferPool pool(nbuf, opt.max_io_bytes);
    engine.register_buffers(pool.iovecs());

    int target_fd = -1;
    if (layout == Layout::Slots) target_fd = engine.open(target, OpenFor::Both, false);
    std::unordered_map<uint64_t, uint64_t> last_gen;  // object -> generation of its latest store started

    std::vector<Active> active;  // index = slot in this vector; finished ones are reused lazily
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
        if (op.op == OpKind::Load) {
            engine.before_load(a.fd, op.offset, op.io_bytes);
            auto it = last_gen.find(op.object_id);
            a.gen = it == last_gen.end() ? 0 : it->second;
        } else {
            a.gen = op.trace_id;
            last_gen[op.object_id] = op.trace_id;
        }
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
        if (header)
            len = uint32_t(op.header_bytes);  // the header is its own transfer
        else
            len = uint32_t(std::min<uint64_t>(opt.max_io_bytes, a.total - pos));
        uint16_t b = pool.take(op.op == OpKind::Store && !header);  // a header overwrites its buffer anyway
        void* buf = pool.at(b);
        if (op.op == OpKind::Store) {
            if (header) {
                pool.soil(b, len);
                std::memset(buf, 0, len);
                SlotHeader h{};
                std::memcpy(h.magic, "KVIOSLT1", 8);
                h.object_id = op.object_id;
                h.payload_bytes = op.payload_bytes;
                h.io_bytes = op.io_bytes;
                h.checksum = pattern_checksum(op.object_id, a.gen, op.io_bytes, Verify::Stamps);
                h.trace_id = op.trace_id;
                h.key_len = uint32_t(std::min(op.key.size(), sizeof h.key));
                std::memcpy(h.key, op.key.data(), h.key_len);
                std::memcpy(buf, &h, std::min<size_t>(sizeof h, len));
            } else {
                uint64_t poff = pos - op.header_bytes;
                pool.fill_store(b, op.object_id, a.gen, poff, len);
                r.checksum += checksum(buf, poff, len, opt.verify);
            }
        } else {
            pool.soil(b, len);
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
        // A slot header goes to the device on its own: submitted in one batch (one plug) with the payload transfer
        // that follows it on disk, the block layer merges the two whenever they fit one request (a payload up to
        // max_segments pages minus one), and the op's commands no longer match their projection.
        if (header) engine.commit();
    };

    auto stopping = [&] { return opt.stop && *opt.stop; };
    auto cutting = [&] { return opt.cut && *opt.cut; };
    while (finished < ops.size()) {
        if (finished == next_op && stopping()) break;  // every started op is complete
        if (cutting() && inflight.empty()) break;      // the started ops' other transfers are given up
        // Fill the queue: finish queuing the newest op, then start the next one if it does not
        // depend on an op still in flight (none once stopping).
        while (inflight.size() < qd && !pool.empty()) {
            size_t cur = SIZE_MAX;
            for (size_t i = 0; i < active.size(); ++i)
                if (!active[i].finished && active[i].next < active[i].total) cur = i;
            if (cutting()) break;
            if (cur != SIZE_MAX) {
                queue_one(cur);
                continue;
            }
            if (next_op >= ops.size() || busy_object(ops[next_op].object_id) || stopping()) break;
            if (opt.not_before) {
                const uint64_t now = monotonic_ns();
                if (!anchor) anchor = now - std::min(now, (*opt.not_before)[next_op]);  // the first op starts now
                const uint64_t due = anchor + (*opt.not_before)[next_op];
                if (due > now) {
                    if (!inflight.empty()) break;  // reap meanwhile
                    // Nothing in flight: sleep towards the due time, in slices so a stop is seen within 50 ms.
                    const uint64_t until = std::min<uint64_t>(due, now + 50000000ull);
                    timespec ts{time_t(until / 1000000000ull), long(until % 1000000000ull)};
                    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
                    continue;
                }
            }
            Active* a = start_op();
            if (a->total == 0) finish(*a);
        }
        engine.commit();
        if (inflight.empty()) continue;
        comps.clear();
        engine.reap(1, comps);
        for (const auto& c : comps) {
            auto it = inflight.find(c.user_data);
            if (it == inflight.end())
                throw Error("engine returned an unknown completion (user_data " + std::to_string(c.user_data) + ")");
            Inflight f = it->second;
            inflight.erase(it);
            Active& a = active[f.active];
            const ObjectOp& op = ops[a.index];
            OpResult& r = res[a.index];
            void* buf = pool.at(f.buf);
            if (c.res < 0) {
                if (r.error.empty())
                    r.error = "transfer at offset " + std::to_string(op.offset + f.stream_off) +
                              " failed: " + std::strerror(int(-c.res)) +
                              (c.nvme_status ? " (NVMe status " + hex(c.nvme_status) + ")" : "");
            } else if (uint64_t(c.res) != f.len) {
                if (r.error.empty())
                    r.error = "short transfer at offset " + std::to_string(op.offset + f.stream_off) + ": " +
                              std::to_string(c.res) + " of " + std::to_string(f.len) + " bytes";
            } else {
                r.bytes += f.len;
                if (op.op == OpKind::Load) {
                    uint64_t poff = f.stream_off - op.header_bytes;
                    if (a.gen == 0) a.gen = stamp_generation(buf, poff, f.len);  // no store before it: adopt
                    r.checksum += checksum(buf, poff, f.len, opt.verify);
                    uint64_t bad = verify_pattern(buf, op.object_id, a.gen, poff, f.len, opt.verify);
                    if (bad != UINT64_MAX && r.error.empty())
                        r.error = std::string("payload mismatch (verify ") + verify_name(opt.verify) + ") in object " +
                                  std::to_string(op.object_id) + ": " +
                                  describe_block(buf, op.object_id, a.gen, poff, f.len, bad);
                }
            }
            pool.give(f.buf);
            if (--a.outstanding == 0 && a.next >= a.total) finish(a);
        }
    }
    for (const auto& a : active)  // ops cut by opt.cut keep the files they opened until here
        if (!a.finished && a.own_fd) engine.close(a.fd);
    if (target_fd >= 0) engine.close(target_fd);
    return res;
}

}  // namespace kvio::workload
