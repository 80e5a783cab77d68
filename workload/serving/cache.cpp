// MultiTierCache: the waterfall policy (waterfall.h) over one backend per tier (tiers.h), the benchmark's
// counters and latency lists (docs/mlperf-benchmark.md, "Tiers and the waterfall", "Metrics and the results JSON") with
// its accounting bugs fixed (docs/simulate.md).
#include "workload/serving/cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

#include "common/error.h"
#include "workload/serving/autoscaler.h"
#include "workload/serving/tiers/gpu_tier.h"
#include "workload/serving/tiers/io_trace_log.h"
#include "workload/serving/tiers/kv_data.h"
#include "workload/serving/tiers/remote_tier.h"
#include "workload/serving/tiers/storage_common.h"
#include "workload/serving/results/stats_util.h"
#include "workload/serving/tiers/storage_throttle.h"
#include "workload/serving/tiers/tiers.h"
#include "workload/serving/tiers/waterfall.h"
#include "common/devinfo.h"

namespace kvio::serving {

const char* tier_name(Tier t) {
    switch (t) {
        case Tier::Gpu:
            return "gpu";
        case Tier::Cpu:
            return "cpu";
        case Tier::Storage:
            return "storage";
        case Tier::Remote:
            return "remote";
    }
    return "?";
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kMaxPlacementRounds = 10000;  // bounded retries of one placement (each round makes progress or waits)
constexpr int kWaitMs = 100;

const char* phase_text(CachePhase p) { return p == CachePhase::Decode ? "Decode" : "Prefill"; }

StorageOpSample storage_sample(bool write, bool demotion, uint64_t bytes, const OpTiming& t) {
    return {write, demotion, bytes, t.total + t.gen, t.syscall, t.gen};
}

/// --max-concurrent-allocs: a counting semaphore (0 = unlimited).
class AllocGate {
public:
    explicit AllocGate(int64_t n) : free_(n), bounded_(n > 0) {}
    /// false: the run is stopping (cut()) and no slot was taken.
    bool acquire() {
        if (!bounded_) return true;
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return free_ > 0 || cut_; });
        if (free_ <= 0) return false;
        --free_;
        return true;
    }
    void release() {
        if (!bounded_) return;
        std::lock_guard<std::mutex> g(mu_);
        ++free_;
        cv_.notify_one();
    }
    void cut() {
        std::lock_guard<std::mutex> g(mu_);
        cut_ = true;
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int64_t free_;
    bool bounded_;
    bool cut_ = false;
};

struct GateHold {
    AllocGate& g;
    bool held;
    explicit GateHold(AllocGate& gate) : g(gate), held(g.acquire()) {}
    ~GateHold() {
        if (held) g.release();
    }
};

}  // namespace

struct MultiTierCache::Impl {
    SimConfig c;
    uint64_t bpt = 0;
    uint64_t tp = 1;
    std::ostream* log = nullptr;
    bool trace_mode = false;
    uint64_t seed = 0;

    std::vector<Tier> order;                   // waterfall order of the tiers in the policy
    int index[kTierSlots] = {-1, -1, -1, -1};  // Tier -> policy index
    std::unique_ptr<TierBackend> backend[kTierSlots];
    RemoteTier* remote = nullptr;  // backend[Remote] when --remote-tier
    std::unique_ptr<WaterfallPolicy> policy;
    std::unique_ptr<NoisePool> pool;
    uint64_t pool_misses_at_reset = 0;  // pool->copy_misses() at the last reset_stats (under stats_mu)
    std::unique_ptr<IoTraceLog> trace;
    std::string storage_dir;
    bool temp_dir = false;
    bool verify_reads = false;  // --verify-reads on the storage tier: kvio_json reports the check's cost
    std::string gpu_desc, storage_desc;
    std::string capacity_warning;                         ///< MultiTierCache::capacity_warning()
    std::function<uint64_t(uint64_t)> storage_footprint;  // bytes an entry takes on the storage target
    AllocGate gate{0};
    std::atomic<bool> cutting{false};  // cut_ops(): storage ops stop between transfers

    mutable std::mutex stats_mu;
    CacheStats st;

    explicit Impl(const SimConfig& cfg) : c(cfg), gate(cfg.max_concurrent_allocs) {}

    TierBackend& be(int policy_tier) { return *backend[int(order[policy_tier])]; }
    void add_remote_tier(std::vector<uint64_t>& limits);
    void add_storage_tier(std::vector<uint64_t>& limits);
    Tier tier_at(int policy_tier) const { return order[policy_tier]; }

    /// Notes an error: the first of the run, and the first of its kind. stats_mu held by the caller.
    /// Refusal: an entry no tier can hold (first_capacity_refusal), kept apart from a write's I/O error.
    enum class ErrorKind { Write, Read, Corruption, Refusal, Other };
    void note_error(const std::string& e, ErrorKind kind = ErrorKind::Other) {
        check_remote();
        if (st.first_error.empty()) st.first_error = e;
        if (kind == ErrorKind::Write && st.first_write_error.empty()) st.first_write_error = e;
        if (kind == ErrorKind::Refusal && st.first_capacity_refusal.empty()) st.first_capacity_refusal = e;
        if ((kind == ErrorKind::Read || kind == ErrorKind::Corruption) && st.first_read_error.empty())
            st.first_read_error = e;
        if (kind == ErrorKind::Corruption) {
            st.corrupted_reads += 1;
            if (st.first_corruption.empty()) st.first_corruption = e;
        }
    }

    /// After a failed op: a remote tier that says it is down (RemoteTier::down) is marked down in the policy once,
    /// so the run goes on through the tiers below it (docs/simulate.md, "Remote tier"). stats_mu held by the caller
    /// (the policy's lock is taken inside it; the policy never takes stats_mu).
    void check_remote() {
        if (!remote || !st.remote_down.empty()) return;
        const RemoteTier::Down d = remote->down();
        if (d.reason.empty()) return;
        st.remote_down = d.reason;
        const int t = index[int(Tier::Remote)];
        if (t >= 0) policy->mark_down(t, !d.gone);
    }

    void execute(const std::vector<WaterfallAction>& actions);
    /// An op stopped by cut_ops(): counted apart (not failed, not done). stats_mu held by the caller.
    void count_cut(uint64_t moved) {
        st.cut_ops += 1;
        st.cut_bytes_moved += moved;
    }
    void demote(const WaterfallAction& a);
};

void MultiTierCache::Impl::add_storage_tier(std::vector<uint64_t>& limits) {
    index[int(Tier::Storage)] = int(order.size());
    order.push_back(Tier::Storage);
    uint64_t storage_limit = c.storage_capacity_gb > 0 ? uint64_t(c.storage_capacity_gb * kGiB) : kUnlimited;
    if (trace_mode) {
        backend[int(Tier::Storage)] = make_null_tier();
        storage_desc = "null (trace mode: --io-trace-log " + c.io_trace_log + ")";
    } else {
        storage_dir = c.cache_dir;
        if (storage_dir.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            const std::string parent = tmp && *tmp ? tmp : "/tmp";
            // A run killed by SIGKILL could not remove its directory: those of dead owners go first.
            for (const std::string& p : remove_dead_temp_cache_dirs(parent))
                if (log) *log << "simulate: removed " << p << ", left by a run that no longer runs\n";
            storage_dir = make_temp_cache_dir(parent);
            temp_dir = true;
        } else if (!is_block_device(storage_dir)) {
            std::error_code ec;
            std::filesystem::create_directories(storage_dir, ec);  // the benchmark creates it (parents too)
            if (ec) throw Error("cannot create --cache-dir " + storage_dir + ": " + ec.message());
        }
        StorageOptions so;
        so.path = storage_dir;
        so.io = c.storage_io;
        so.qd = c.storage_qd;
        so.max_io_bytes = c.max_io_bytes;
        so.force = c.force;
        so.semantic_path = c.semantic_path;
        auto st = make_storage_tier(so);                           // deletes old *.npy first
        if (c.verify_reads) st->set_read_check(pool.get(), seed);  // docs/simulate.md, --verify-reads
        verify_reads = c.verify_reads;
        if (c.storage_throttle_mibps > 0) st = make_throttled_storage_tier(std::move(st), c.storage_throttle_mibps);
        const uint64_t room = st->auto_capacity();
        if (c.storage_capacity_gb <= 0) storage_limit = room;
        if (storage_limit != kUnlimited && room != kUnlimited && storage_limit > room) {
            char gib[96];
            std::snprintf(gib, sizeof gib, "%g is more than the storage tier can hold (%.2f GiB", c.storage_capacity_gb,
                          double(room) / kGiB);
            capacity_warning = std::string("--storage-capacity-gb ") + gib + " under " + storage_dir +
                               ": 95 % of its free space, or the device's capacity): writes past it fail and are "
                               "counted in kvio.cache.failed_writes";
        }
        storage_footprint = [s = st.get()](uint64_t b) { return s->footprint(b); };
        storage_desc = st->description();
        backend[int(Tier::Storage)] = std::move(st);
    }
    limits.push_back(storage_limit);
}

namespace {

/// Connections a run's remote tier may hold open besides its control connection (docs/simulate.md, "Remote tier"):
/// per worker thread (min(users, 500); the autoscaler's maximum when it scales) and per warm-up writer thread
/// (--precondition-threads or the online CPUs; decode-only pre-population: the online CPUs) one, or two with
/// --remote-connections split or under write-back (a write connection, the writer thread's under write-back, and
/// a read connection).
size_t planned_remote_connections(const SimConfig& c) {
    const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
    size_t n = worker_threads(run_user_ceiling(c));  // the most workers the run starts
    if (c.precondition) n += c.precondition_threads > 0 ? size_t(c.precondition_threads) : cpus;
    if (c.decode_only) n += cpus;
    return c.remote_write_mode == "back" || c.remote_connections == "split" ? 2 * n : n;
}

}  // namespace

void MultiTierCache::Impl::add_remote_tier(std::vector<uint64_t>& limits) {
    if (trace_mode) {  // logical: no server is asked; rows of the --io-trace-log say Tier-3
        index[int(Tier::Remote)] = int(order.size());
        order.push_back(Tier::Remote);
        limits.push_back(uint64_t(c.remote_capacity_gb * kGiB));
        backend[int(Tier::Remote)] = make_null_tier();
        return;
    }
    RemoteOptions ro;
    ro.url = c.remote_tier;
    ro.run_id = c.remote_run_id.empty() ? make_remote_run_id() : c.remote_run_id;
    ro.client = int(c.client_index);
    ro.clients = int(std::max<int64_t>(c.client_count, 1));
    ro.write_back = c.remote_write_mode == "back";
    ro.writeback_queue = size_t(std::max<int64_t>(c.remote_writeback_queue, 1));
    ro.split_connections = c.remote_connections == "split";
    ro.planned_connections = planned_remote_connections(c);
    auto rt = make_remote_tier(ro);  // connects: an unreachable server fails the run here, in one line
    if (c.verify_reads) rt->set_read_check(pool.get(), seed);
    index[int(Tier::Remote)] = int(order.size());
    order.push_back(Tier::Remote);
    // The limit is server memory: the connections' own (client structures, query and reply buffers) comes out of it.
    const uint64_t cap = c.remote_capacity_gb > 0 ? uint64_t(c.remote_capacity_gb * kGiB) : rt->auto_capacity();
    // An explicit limit the server cannot hold for every client of the run: a warning, not a refusal (the server's
    // used_memory moves; docs/simulate.md, "Remote tier"). A server without maxmemory is not checked.
    if (const uint64_t free = rt->server_free(); c.remote_capacity_gb > 0 && free != kUnlimited && log &&
                                                 cap > free / uint64_t(std::max<int64_t>(c.client_count, 1)))
        *log << "kvio: warning: --remote-capacity-gb " << c.remote_capacity_gb << " x "
             << std::max<int64_t>(c.client_count, 1)
             << " client(s) = " << double(cap) * double(std::max<int64_t>(c.client_count, 1)) / kGiB
             << " GiB exceeds the server's free memory at start (maxmemory less used_memory): " << double(free) / kGiB
             << " GiB; writes past it are refused with OOM\n";
    limits.push_back(cap == kUnlimited ? cap : cap - std::min(cap, rt->connection_reserve()));
    remote = rt.get();
    backend[int(Tier::Remote)] = std::move(rt);
}

MultiTierCache::MultiTierCache(const SimConfig& c, uint64_t bytes_per_token, std::ostream* log)
    : impl_(std::make_unique<Impl>(c)) {
    Impl& m = *impl_;
    m.bpt = bytes_per_token;
    m.tp = uint64_t(std::max<int64_t>(c.tensor_parallel, 1));
    m.log = log;
    m.trace_mode = !c.io_trace_log.empty();
    m.seed = uint64_t(c.seed.value_or(0));

    const uint64_t gpu_limit = uint64_t(std::max(0.0, c.gpu_mem_gb) * double(std::max<int64_t>(c.num_gpus, 1)) * kGiB);
    const uint64_t cpu_limit = uint64_t(std::max(0.0, c.cpu_mem_gb) * kGiB);
    std::vector<uint64_t> limits;
    m.pool = m.trace_mode ? std::make_unique<NoisePool>(m.seed, 4096) : std::make_unique<NoisePool>(m.seed);

    if (gpu_limit > 0) {
        m.index[int(Tier::Gpu)] = int(m.order.size());
        m.order.push_back(Tier::Gpu);
        limits.push_back(gpu_limit);
        if (m.trace_mode) {
            m.backend[int(Tier::Gpu)] = make_null_tier();
            m.gpu_desc = "null (trace mode)";
        } else {
            m.backend[int(Tier::Gpu)] = make_gpu_tier(c.gpu_tier, c.gpu_bandwidth_gbps, &m.gpu_desc);
        }
    } else {
        m.gpu_desc = "absent (--gpu-mem-gb 0)";
    }

    m.index[int(Tier::Cpu)] = int(m.order.size());
    m.order.push_back(Tier::Cpu);
    limits.push_back(cpu_limit);
    m.backend[int(Tier::Cpu)] = m.trace_mode ? make_null_tier() : make_cpu_tier();

    // The remote tier sits between CPU and storage; without --cache-dir it is the last tier (docs/simulate.md,
    // "Remote tier").
    if (m.trace_mode) m.trace = std::make_unique<IoTraceLog>(c.io_trace_log);  // the CSV of every tier's ops
    if (!c.remote_tier.empty()) m.add_remote_tier(limits);
    if (c.remote_tier.empty() || !c.cache_dir.empty()) m.add_storage_tier(limits);

    WaterfallOptions o;
    o.target_ratio = c.yaml.target_usage_ratio;
    o.large_entry_ratio = c.yaml.large_entry_limit_ratio;
    o.max_depth = c.yaml.max_recursion_depth;
    if (m.storage_footprint || m.remote) {
        // The storage limit holds on the target: an entry occupies its layout's header + data in whole blocks; the
        // remote limit holds in the server's memory: chunks in allocator size classes plus their keys.
        const int si = m.index[int(Tier::Storage)], ri = m.index[int(Tier::Remote)];
        o.footprint = [si, ri, f = m.storage_footprint, r = m.remote](int tier, uint64_t b) {
            if (tier == si && f) return f(b);
            if (tier == ri && r) return r->footprint(b);
            return b;
        };
    }
    m.policy = std::make_unique<WaterfallPolicy>(limits, o);
    for (auto& b : m.backend)
        if (b) b->set_cut_flag(&m.cutting);
}

MultiTierCache::~MultiTierCache() {
    Impl& m = *impl_;
    if (m.trace) {
        try {
            m.trace->close();
        } catch (const std::exception& e) {
            if (m.log) *m.log << "kvio: " << e.what() << "\n";
        }
    }
    if (m.remote) m.remote->clear();  // a shared server: the run's entries do not outlive it
    for (auto& b : m.backend) b.reset();
    if (m.temp_dir) {
        std::error_code ec;
        std::filesystem::remove_all(m.storage_dir, ec);
    }
}

const std::string& MultiTierCache::capacity_warning() const { return impl_->capacity_warning; }

uint64_t MultiTierCache::entry_bytes(int64_t tokens) const {
    return uint64_t(std::max<int64_t>(tokens, 0)) * impl_->bpt / impl_->tp;
}

void MultiTierCache::Impl::demote(const WaterfallAction& a) {
    const Tier from = tier_at(a.from), to = tier_at(a.to);
    OpTiming r, w;
    bool ok = true;
    std::string err;
    uint64_t cut_moved = 0;
    bool cut = false, lost = false;
    try {
        r = be(a.from).read(a.key, a.bytes);
    } catch (const OpCut& e) {
        ok = false, cut = true, cut_moved = e.bytes_moved;
    } catch (const EntryLost&) {
        ok = false, lost = true;  // a remote write-back write that never reached the server: nothing to move
    } catch (const std::exception& e) {
        ok = false, err = e.what();
    }
    bool read_ok = ok;
    if (ok) {
        try {
            w = be(a.to).write(a.key, a.bytes, EntryData(*pool, key_hash(a.key, seed)));
        } catch (const OpCut& e) {
            ok = false, cut = true, cut_moved = a.bytes + e.bytes_moved;
        } catch (const std::exception& e) {
            ok = false, err = e.what();
        }
    }
    be(a.from).remove(a.key);  // bytes gone from the source before its claim is released
    if (!ok) be(a.to).remove(a.key);
    policy->finish_demotion(a, ok);
    if (trace) {
        trace->row("Read", a.bytes, int(from), a.key, "Evict");
        if (ok) trace->row("Write", a.bytes, int(to), a.key, "Evict");
    }
    std::lock_guard<std::mutex> g(stats_mu);
    if (cut) {
        count_cut(cut_moved);
        return;
    }
    if (lost) {
        check_remote();
        return;
    }
    if (!ok) {
        (read_ok ? st.failed_writes : st.failed_reads) += 1;
        if (read_ok) st.write_io_errors += 1;
        note_error(err, read_ok ? ErrorKind::Write : ErrorKind::Read);
        return;
    }
    if (from == Tier::Storage) st.storage_ops.push_back(storage_sample(false, true, a.bytes, r));
    if (to == Tier::Storage) st.storage_ops.push_back(storage_sample(true, true, a.bytes, w));
    st.evictions += 1;
    st.demotions[int(to)] += 1;
    st.demotion_bytes[int(to)] += a.bytes;
    st.demotion_lat[int(to)].push_back(r.total + w.total);
    st.tier_bytes_read[int(from)] += a.bytes;  // demotion traffic counted per tier (the benchmark does not)
    st.tier_bytes_written[int(to)] += a.bytes;
    if (to == Tier::Cpu) st.offloads_cpu += 1;
    if (to == Tier::Storage) {
        st.offloads_storage += 1;
        uint64_t sharded = bpt / tp;
        if (sharded > 0) st.storage_tokens_processed += double(a.bytes / sharded);
    }
}

void MultiTierCache::Impl::execute(const std::vector<WaterfallAction>& actions) {
    for (const auto& a : actions) {
        if (a.kind == WaterfallAction::Kind::Demote) {
            demote(a);
            continue;
        }
        be(a.from).remove(a.key);
        policy->finish_delete(a);
        std::lock_guard<std::mutex> g(stats_mu);
        st.evictions += 1;
        st.deletions += 1;
        st.deletion_bytes += a.bytes;
    }
}

AllocResult MultiTierCache::allocate(const std::string& key, int64_t tokens, CachePhase phase) {
    Impl& m = *impl_;
    AllocResult res;
    if (!m.policy->begin_allocate(key)) {
        int t = m.policy->tier_of(key);
        res.ok = res.existed = true;
        if (t >= 0) res.tier = m.tier_at(t);
        return res;
    }
    GateHold hold(m.gate);
    const uint64_t size = entry_bytes(tokens);
    if (!hold.held || m.cutting) {  // stopping: no placement, no write
        m.policy->end_allocate(key);
        std::lock_guard<std::mutex> g(m.stats_mu);
        m.count_cut(0);
        res.cut = true;
        return res;
    }
    if (phase == CachePhase::Prefill) {
        std::lock_guard<std::mutex> g(m.stats_mu);
        m.st.prefill_writes += 1;  // attempts, as the benchmark counts them (failed writes included)
    }
    int tier = -1, from = 0;
    for (int round = 0; round < kMaxPlacementRounds && tier < 0 && !m.policy->cut_requested(); ++round) {
        PlaceStep s = m.policy->place_step(size, from);
        if (s.kind == PlaceStep::Kind::Reserved)
            tier = s.tier;
        else if (s.kind == PlaceStep::Kind::Work)
            m.execute(s.actions), from = s.tier;
        else if (s.kind == PlaceStep::Kind::Wait)
            m.policy->wait_change(s.generation, kWaitMs), from = s.tier;
        else
            break;
    }
    if (tier < 0) {
        m.policy->end_allocate(key);
        std::lock_guard<std::mutex> g(m.stats_mu);
        if (m.policy->cut_requested()) {
            m.count_cut(0);
            res.cut = true;
            return res;
        }
        m.st.failed_writes += 1;
        m.st.capacity_refusals += 1;
        m.st.capacity_refused_bytes += size;
        m.note_error("no tier can take entry '" + key + "' of " + std::to_string(size) + " bytes",
                     Impl::ErrorKind::Refusal);
        return res;
    }
    const Tier t = m.tier_at(tier);
    OpTiming tm;
    try {
        tm = m.be(tier).write(key, size, EntryData(*m.pool, key_hash(key, m.seed)));
    } catch (const OpCut& e) {
        // A cut storage write's file stays until the tier closes: its bytes stay claimed (hold_cut_write).
        if (t == Tier::Storage)
            m.policy->hold_cut_write(key, tier, size);
        else
            m.policy->abort_write(key, tier, size);
        std::lock_guard<std::mutex> g(m.stats_mu);
        m.count_cut(e.bytes_moved);
        res.tier = t;
        res.cut = true;
        return res;
    } catch (const std::exception& e) {
        m.policy->abort_write(key, tier, size);  // the reservation is released: nothing counted as written
        std::lock_guard<std::mutex> g(m.stats_mu);
        m.st.failed_writes += 1;
        m.st.write_io_errors += 1;
        m.note_error(std::string(tier_name(t)) + " write of entry '" + key + "': " + e.what(), Impl::ErrorKind::Write);
        res.tier = t;
        return res;
    }
    m.policy->commit_write(key, tier, size);
    if (m.trace) m.trace->row("Write", size, int(t), key, phase_text(phase));
    {
        std::lock_guard<std::mutex> g(m.stats_mu);
        m.st.write_operations += 1;
        m.st.total_write_bytes += size;
        m.st.tier_bytes_written[int(t)] += size;
        m.st.write_lat[int(t)].push_back(tm.total);
        if (t == Tier::Remote) m.check_remote();  // a write-back writer may have met a fault meanwhile
        if (t == Tier::Cpu) m.st.offloads_cpu += 1;
        if (t == Tier::Storage) {
            m.st.offloads_storage += 1;
            m.st.storage_write_device.push_back(tm.device);
            m.st.storage_write_host.push_back(tm.host);
            m.st.storage_ops.push_back(storage_sample(true, false, size, tm));
            m.st.storage_tokens_processed += double(tokens);
        }
    }
    res.ok = true;
    res.tier = t;
    res.latency_s = tm.total;
    return res;
}

AccessResult MultiTierCache::access(const std::string& key, CachePhase phase, CacheType type, uint64_t bytes) {
    Impl& m = *impl_;
    AccessResult res;
    ReadGrant g = m.policy->begin_read(key);
    if (g.cut) {
        std::lock_guard<std::mutex> l(m.stats_mu);
        m.count_cut(0);
        res.cut = true;
        return res;
    }
    OpTiming tm;
    std::string err;
    bool corrupt = false;  // --verify-reads found other bytes than were written
    bool foreign = false;
    if (g.tier < 0) {
        // Not held here: a shared entry may be on the server, written by another client of the run.
        std::optional<OpTiming> f;
        if (m.remote && bytes > 0 && remote_shared_key(key) && !m.cutting) {
            try {
                f = m.remote->read_foreign(key, bytes);
            } catch (const PayloadMismatch& e) {
                std::lock_guard<std::mutex> l(m.stats_mu);
                m.note_error(e.what(), Impl::ErrorKind::Corruption);  // a miss for the run, never silent
            } catch (const std::exception& e) {
                std::lock_guard<std::mutex> l(m.stats_mu);
                m.note_error(e.what());  // counted in the tier's errors; for the run, a miss
            }
        }
        if (!f) {
            std::lock_guard<std::mutex> l(m.stats_mu);
            m.st.cache_misses += 1;
            return res;
        }
        foreign = true;
        tm = *f;
        g.tier = m.index[int(Tier::Remote)];
        g.bytes = bytes;
        res.ok = true;
    }
    res.hit = true;
    res.tier = m.tier_at(g.tier);
    try {
        if (!foreign) tm = m.be(g.tier).read(key, g.bytes);
        res.ok = true;
    } catch (const OpCut& e) {
        m.policy->end_read(key);
        std::lock_guard<std::mutex> l(m.stats_mu);
        m.count_cut(e.bytes_moved);
        res.hit = false;
        res.cut = true;
        return res;
    } catch (const EntryLost&) {
        // Its write-back write never reached the server (docs/simulate.md, "Remote tier"): a miss, not a failed read.
        m.policy->drop_read(key);
        std::lock_guard<std::mutex> l(m.stats_mu);
        m.check_remote();
        m.st.cache_misses += 1;
        return AccessResult{};
    } catch (const PayloadMismatch& e) {
        err = e.what();
        corrupt = true;
    } catch (const std::exception& e) {
        err = e.what();
    }
    if (!foreign) m.policy->end_read(key);
    if (res.ok && m.trace) m.trace->row("Read", g.bytes, int(res.tier), key, phase_text(phase));
    std::lock_guard<std::mutex> l(m.stats_mu);
    CacheStats& st = m.st;
    st.cache_hits += 1;
    switch (type) {
        case CacheType::System:
            st.system_prompt_hits += 1;
            break;
        case CacheType::CommonPhrase:
            st.common_phrase_hits += 1;
            break;
        case CacheType::MultiTurn:
            st.multi_turn_hits += 1;
            break;
        case CacheType::User:
            st.user_cache_hits += 1;
            break;
    }
    if (!res.ok) {
        st.failed_reads += 1;
        // A corruption names its entry and offset itself; an I/O error gets the tier and the entry.
        m.note_error(corrupt ? err : std::string(tier_name(res.tier)) + " read of entry '" + key + "': " + err,
                     corrupt ? Impl::ErrorKind::Corruption : Impl::ErrorKind::Read);
        return res;
    }
    const int t = int(res.tier);
    res.bytes = g.bytes;
    if (phase == CachePhase::Decode) st.decode_reads += 1;
    st.read_operations += 1;
    st.total_read_bytes += g.bytes;
    st.tier_bytes_read[t] += g.bytes;
    st.read_lat[t].push_back(tm.total);
    if (res.tier == Tier::Storage) {
        st.storage_read_device.push_back(tm.device);
        st.storage_read_host.push_back(tm.host);
        st.storage_ops.push_back(storage_sample(false, false, g.bytes, tm));
        st.verified_bytes += tm.checked_bytes;
        st.verify_cpu_s += tm.check_cpu;
        uint64_t sharded = m.bpt / m.tp;  // tokens of the sharded entry (the benchmark divides by the full bpt)
        if (sharded > 0) st.storage_tokens_processed += double(g.bytes) / double(sharded);
    }
    res.latency_s = tm.total;
    return res;
}

bool MultiTierCache::contains(const std::string& key) const { return impl_->policy->contains(key); }

std::vector<std::string> MultiTierCache::keys_with_prefix(const std::string& prefix) const {
    return impl_->policy->keys_with_prefix(prefix);
}

CacheStats MultiTierCache::stats() const {
    const Impl& m = *impl_;
    CacheStats s;
    {
        std::lock_guard<std::mutex> g(m.stats_mu);
        s = m.st;
        if (m.pool) s.gather_fallbacks = m.pool->copy_misses() - m.pool_misses_at_reset;
    }
    for (int i = 0; i < int(m.order.size()); ++i) {
        TierUsage u = m.policy->usage(i);
        int t = int(m.order[i]);
        s.tier_present[t] = true;
        s.entries[t] = u.entries;
        s.used_bytes[t] = u.claimed;
        s.limit_bytes[t] = u.limit;
    }
    return s;
}

void MultiTierCache::cut_ops() {
    Impl& m = *impl_;
    m.cutting = true;
    m.gate.cut();
    m.policy->cut();
}

void MultiTierCache::finish_remote_writes() {
    Impl& m = *impl_;
    if (!m.remote) return;
    m.remote->finish_writes(kWriteBackDrainS);
    std::lock_guard<std::mutex> g(m.stats_mu);
    m.check_remote();
}

bool MultiTierCache::handoff_send(int to, const std::string& msg) {
    Impl& m = *impl_;
    if (!m.remote || m.policy->is_down(m.index[int(Tier::Remote)])) return false;
    try {
        m.remote->handoff_send(to, msg);
        return true;
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(m.stats_mu);
        m.note_error(std::string("conversation handoff: ") + e.what());
        return false;
    }
}

std::optional<std::string> MultiTierCache::handoff_take() {
    Impl& m = *impl_;
    if (!m.remote || m.policy->is_down(m.index[int(Tier::Remote)])) return std::nullopt;
    try {
        return m.remote->handoff_take();
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(m.stats_mu);
        m.note_error(std::string("conversation handoff: ") + e.what());
        return std::nullopt;
    }
}

void MultiTierCache::reset_stats() {
    std::lock_guard<std::mutex> g(impl_->stats_mu);
    reset_cache_stats(impl_->st);
    if (impl_->pool) impl_->pool_misses_at_reset = impl_->pool->copy_misses();
}

std::string MultiTierCache::gpu_tier_description() const { return impl_->gpu_desc; }

std::string MultiTierCache::storage_description() const {
    const Impl& m = *impl_;
    if (m.index[int(Tier::Storage)] < 0) return "absent (--remote-tier without --cache-dir: the remote tier is last)";
    uint64_t lim = m.policy->limit(m.index[int(Tier::Storage)]);
    std::string l = lim == kUnlimited ? "unlimited" : std::to_string(lim) + " bytes";
    return m.storage_desc + ", limit " + l;
}

std::string MultiTierCache::remote_description() const {
    const Impl& m = *impl_;
    if (m.index[int(Tier::Remote)] < 0) return "";
    uint64_t lim = m.policy->limit(m.index[int(Tier::Remote)]);
    return (m.remote ? m.remote->description() : std::string("null (trace mode: no server asked)")) + ", limit " +
           (lim == kUnlimited ? "unlimited" : std::to_string(lim) + " bytes");
}

nlohmann::ordered_json MultiTierCache::cache_stats_json(double elapsed_s,
                                                        const std::string& performance_profile) const {
    return serving::cache_stats_json(stats(), elapsed_s, performance_profile);
}

nlohmann::ordered_json MultiTierCache::kvio_json() const {
    const Impl& m = *impl_;
    const CacheStats s = stats();
    nlohmann::ordered_json j;
    nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
    // Per tier, as the waterfall has no promotion: an access reaches a tier when no tier above it holds the entry;
    // hits = reads it served, misses = accesses that reached it and went on (docs/simulate.md, "Remote tier").
    uint64_t reached = s.cache_hits + s.cache_misses;
    for (Tier t : m.order) {
        int i = int(t);
        const uint64_t hits = s.read_lat[i].size();
        nlohmann::ordered_json o;
        o["tier"] = tier_name(t);
        o["backend"] = m.backend[i]->name();
        o["description"] = t == Tier::Gpu       ? m.gpu_desc
                           : t == Tier::Storage ? storage_description()
                                                : m.backend[i]->description();
        if (s.limit_bytes[i] == kUnlimited)
            o["limit_bytes"] = nullptr;
        else
            o["limit_bytes"] = s.limit_bytes[i];
        o["used_bytes"] = s.used_bytes[i];
        o["entries"] = s.entries[i];
        o["bytes_written"] = s.tier_bytes_written[i];
        o["bytes_read"] = s.tier_bytes_read[i];
        o["demotions_in"] = s.demotions[i];
        o["demotion_bytes_in"] = s.demotion_bytes[i];
        o["demotion_latency_ms"] = latency_summary_ms(s.demotion_lat[i]);
        o["hits"] = hits;
        o["misses"] = reached >= hits ? reached - hits : 0;
        reached = reached >= hits ? reached - hits : 0;
        o["read_latency_ms"] = latency_summary_ms(s.read_lat[i]);
        o["write_latency_ms"] = latency_summary_ms(s.write_lat[i]);
        if (t == Tier::Remote && m.remote) o["remote"] = m.remote->stats_json();
        tiers.push_back(o);
    }
    j["tiers"] = tiers;
    j["gpu_tier"] = m.gpu_desc;
    j["storage"] = storage_description();
    j["evictions"] = s.evictions;
    j["deletions"] = s.deletions;
    j["deletion_bytes"] = s.deletion_bytes;
    j["failed_writes"] = s.failed_writes;
    j["failed_reads"] = s.failed_reads;
    j["capacity_refusals"] = s.capacity_refusals;
    j["capacity_refused_bytes"] = s.capacity_refused_bytes;
    j["write_io_errors"] = s.write_io_errors;
    j["cut_ops"] = s.cut_ops;
    j["cut_bytes_moved"] = s.cut_bytes_moved;
    j["gather_fallbacks"] = s.gather_fallbacks;
    if (m.verify_reads) j["verify_reads"] = verify_reads_json(s);
    j["entry_sizes"] = entry_sizes_json(m.policy->entry_sizes());
    if (m.pool) j["noise_pool_copies"] = m.pool->max_copies();
    if (!s.first_error.empty()) j["first_error"] = s.first_error;
    if (!s.first_write_error.empty()) j["first_write_error"] = s.first_write_error;
    if (!s.first_capacity_refusal.empty()) j["first_capacity_refusal"] = s.first_capacity_refusal;
    if (!s.first_read_error.empty()) j["first_read_error"] = s.first_read_error;
    if (s.corrupted_reads) j["corrupted_reads"] = s.corrupted_reads;
    if (!s.first_corruption.empty()) j["first_corruption"] = s.first_corruption;
    if (!s.remote_down.empty()) j["remote_down"] = s.remote_down;
    if (m.trace) {
        j["io_trace_log"] = m.trace->path();
        j["io_trace_rows"] = m.trace->rows();
    }
    return j;
}

}  // namespace kvio::serving
