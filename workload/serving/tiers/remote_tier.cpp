// The remote KV tier over redis/ (remote_tier.h).
#include "workload/serving/tiers/remote_tier.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <ctime>
#include <functional>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "redis/client.h"
#include "redis/cluster.h"
#include "workload/serving/results/stats_util.h"
#include "workload/serving/tiers/waterfall.h"
#include "workload/serving/tiers/writeback_queue.h"

namespace kvio::serving {

namespace {

/// jemalloc's size class of an allocation of `n` bytes: four classes per doubling above 64 bytes (docs/simulate.md,
/// "Remote tier").
uint64_t alloc_class(uint64_t n) {
    if (n <= 64) return (n + 15) / 16 * 16;
    const int k = 63 - std::countl_zero(n - 1);  // 2^k < n <= 2^(k+1)
    const uint64_t step = uint64_t(1) << (k - 2);
    return (n + step - 1) / step * step;
}

/// Bytes Redis adds to a big argument's query buffer: the sds header (9 bytes for a 32-bit length), the CRLF it reads
/// with the bytes and a NUL. After a SET of a chunk, the server allocates a fresh query buffer of the argument's size
/// for the next one and keeps it until the connection's next smaller command (measured on Redis 7.0: `qbuf-free`
/// 4194294 after a 4 MiB − 4 KiB SET, back to 20474 after a DEL; docs/simulate.md, "Remote tier").
constexpr uint64_t kQueryBufferOverhead = 12;

long long info_field(redis::Connection& c, const std::string& field) {
    const std::string text = c.command({"INFO", "memory"}).str;
    size_t at = text.find(field + ":");
    if (at == std::string::npos) return -1;
    return std::atoll(text.c_str() + at + field.size() + 1);
}

/// Wall-clock seconds during which at least one of the tier's connections is inside a chunked SET or GET (data
/// generation left out, as in busy_s): the tier's own busy time, whatever the simulation's pacing offers it
/// (docs/performance.md, "Remote tier").
class InFlightClock {
public:
    void begin() {
        std::lock_guard<std::mutex> g(mu_);
        if (n_++ == 0) t0_ = now_s();
    }
    void end() {
        std::lock_guard<std::mutex> g(mu_);
        if (--n_ == 0) busy_ += now_s() - t0_;
    }
    double seconds() {
        std::lock_guard<std::mutex> g(mu_);
        return busy_ + (n_ > 0 ? now_s() - t0_ : 0);
    }

private:
    std::mutex mu_;
    int n_ = 0;
    double t0_ = 0, busy_ = 0;
};

/// One op's share of an InFlightClock: begun now, paused while the op generates data (stop() ... start()), ended at
/// destruction.
class InFlightScope {
public:
    explicit InFlightScope(InFlightClock& c) : c_(c) { start(); }
    void start() {
        if (!on_) c_.begin(), on_ = true;
    }
    void stop() {
        if (on_) c_.end(), on_ = false;
    }
    ~InFlightScope() { stop(); }

private:
    InFlightClock& c_;
    bool on_ = false;
};

class RedisTier final : public RemoteTier {
public:
    explicit RedisTier(const RemoteOptions& o) : o_(o) {
        try {
            url_ = redis::parse_url(o.url);
        } catch (const Error& e) {
            throw Error("--remote-tier: " + std::string(e.what()));
        }
        control_url_ = write_url_ = read_url_ = shared_url_ = url_;
        control_url_.client_name = kControlName;
        shared_url_.client_name = kSharedName;
        write_url_.client_name = kWriteName;
        read_url_.client_name = kReadName;
        try {
            control_ = std::make_unique<redis::Connection>(control_url_, o.timeout_s);
            chunk_ = std::min<uint64_t>(control_->max_bulk_len(), kRemoteChunkBytes);
            used_start_ = info_field(*control_, "used_memory");
            maxmemory_ = info_field(*control_, "maxmemory");
            conn_bytes_ = measure_connection_bytes();
            qbuf_bytes_ = alloc_class(chunk_ + kQueryBufferOverhead);
        } catch (const Error& e) {
            throw Error("--remote-tier " + url_.safe_text() + ": " + e.what());  // never the password
        }
    }
    ~RedisTier() override { stop_writers(); }

    std::string name() const override { return "remote-redis"; }
    std::string description() const override {
        return "remote (" + url_.safe_text() + ", keys " + o_.run_id + ":<entry>:<chunk>, " + std::to_string(chunk_) +
               "-byte chunks, pipelined, " + (o_.split_connections ? "a write and a read connection" : "a connection") +
               " per worker thread, " +
               (o_.write_back ? "write-back: " + std::to_string(o_.writeback_queue) +
                                    " writes queued per worker thread, a writer thread with the write connection each)"
                              : std::string("write-through)"));
    }
    uint64_t footprint(uint64_t bytes) const override { return remote_footprint(bytes, chunk_); }
    uint64_t connection_bytes() const override { return conn_bytes_; }
    uint64_t connection_reserve() const override {
        return conn_bytes_ * o_.planned_connections + qbuf_bytes_ * planned_setters();
    }
    /// Planned connections that send SETs: all of them with one connection per thread; the write halves when reads
    /// and writes have their own (--remote-connections split, write-back).
    size_t planned_setters() const {
        return o_.split_connections || o_.write_back ? o_.planned_connections / 2 : o_.planned_connections;
    }
    uint64_t server_free() const override {
        if (maxmemory_ <= 0) return kUnlimited;
        return maxmemory_ > used_start_ ? uint64_t(maxmemory_ - used_start_) : 0;
    }
    uint64_t auto_capacity() const override {
        const uint64_t free = server_free();
        return free == kUnlimited ? free : free / uint64_t(std::max(o_.clients, 1));
    }

    OpTiming write(const std::string& key, uint64_t bytes, const EntryData& data) override {
        if (!o_.write_back) return write_through(key, bytes, data);
        // Write-back: the op is the time to queue the write (waiting while this connection's queue is full).
        const double t0 = now_s();
        WriteBackQueue& q = writer();
        {
            std::lock_guard<std::mutex> g(mu_);
            sizes_[key] = bytes;
            pending_[key] += 1;
            lost_keys_.erase(key);
            wb_queued_ += 1;
        }
        q.push(WriteJob{key, bytes, data});
        const double total = now_s() - t0;
        return {total, total, total};
    }

    OpTiming write_through(const std::string& key, uint64_t bytes, const EntryData& data) {
        redis::Connection& c = conn(Role::Write);
        double gen = 0;
        const double t0 = now_s();
        InFlightScope busy(in_flight_);
        try {
            c.set_chunks(full_key(key), bytes, chunk_, [&](uint64_t off, char* dst, size_t len) {
                busy.stop();
                const double g0 = now_s();
                data.fill(off, dst, len);  // generation: not the tier's time
                gen += now_s() - g0;
                busy.start();
            });
        } catch (const Error& e) {
            errors_ += 1;
            if (std::string(e.what()).find("OOM") != std::string::npos)
                set_down("the server refuses writes: " + std::string(e.what()), false);
            note_timeout(c, e);
            // The chunks SET before the fault would stay on the server, held by no one: deleted (DEL of a chunk
            // never written is a no-op) on this connection while it still answers (an error reply such as OOM), else
            // on the control connection, made again if the fault broke it (CLIENT KILL). Not once the tier is down
            // for good (a silent server, note_timeout): a DEL there would make every failing writer wait out the
            // silence in turn; the results then say keys_left_unknown.
            try {
                if (!c.broken()) {
                    c.del_chunks(full_key(key), bytes, chunk_);
                } else if (!down().gone) {
                    std::lock_guard<std::mutex> g(control_mu_);
                    on_control([&](redis::Connection& cc) { return cc.del_chunks(full_key(key), bytes, chunk_); });
                }
            } catch (const std::exception&) {}
            throw;
        }
        const double total = now_s() - t0 - gen;
        set_s_ += total;
        sets_ += redis::chunk_count(bytes, chunk_);
        sent_ += bytes;
        {
            std::lock_guard<std::mutex> g(mu_);
            sizes_[key] = bytes;
        }
        OpTiming t{total, total, total};
        t.gen = gen;
        return t;
    }

    OpTiming read(const std::string& key, uint64_t bytes) override {
        const double t0 = now_s();
        if (!settled(key)) {
            lost_reads_wb_ += 1;  // its write-back write never reached the server: a miss for the cache
            throw EntryLost("remote entry '" + key + "' was lost with its write-back write");
        }
        if (!get(key, bytes, "GET", !remote_shared_key(key))) {
            errors_ += 1;  // an entry this client wrote, gone: a shared one another client deleted
            lost_ += 1;
            throw Error("redis: GET " + full_key(key) + ": a chunk is missing");
        }
        const double total = now_s() - t0;
        return {total, total, total};
    }

    std::optional<OpTiming> read_foreign(const std::string& key, uint64_t bytes) override {
        const double t0 = now_s();
        const bool turn = key.rfind("hconv_", 0) == 0;  // a turn of a conversation handed over by another client
        if (!get(key, bytes, "GETEX", false)) {
            foreign_misses_ += 1;
            if (turn) foreign_turn_misses_ += 1;
            return std::nullopt;
        }
        const double total = now_s() - t0;
        foreign_hits_ += 1;
        foreign_bytes_ += bytes;
        if (turn) foreign_turn_hits_ += 1, foreign_turn_bytes_ += bytes;
        return OpTiming{total, total, total};
    }

    void remove(const std::string& key) override {
        uint64_t bytes;
        const bool written = settled(key);
        {
            std::lock_guard<std::mutex> g(mu_);
            if (!written) {  // lost: nothing of it is on the server (a failed write deletes its chunks)
                lost_keys_.erase(key);
                sizes_.erase(key);
                return;
            }
            auto it = sizes_.find(key);
            if (it == sizes_.end()) return;
            bytes = it->second;
            sizes_.erase(it);
        }
        try {
            redis::Connection& c = conn(Role::Read);
            try {
                c.del_chunks(full_key(key), bytes, chunk_);
            } catch (const Error& e) {
                note_timeout(c, e);
                throw;
            }
            dels_ += redis::chunk_count(bytes, chunk_);
        } catch (const Error&) {
            errors_ +=
                1;  // its chunks may stay on the server (the end-of-run cleanup knows only live entries): counted
        }
    }

    nlohmann::ordered_json stats_json() override {
        nlohmann::ordered_json j;
        j["url"] = url_.safe_text();
        j["run_id"] = o_.run_id;
        j["chunk_bytes"] = chunk_;
        {
            std::lock_guard<std::mutex> g(mu_);
            // Data connections open (the control connection not counted): a worker thread's write connection
            // (its SETs) and read connection (its GETs, GETEXs and DELs), each made on first use; under write-back
            // the write connection is its writer thread's (docs/simulate.md, "Remote tier").
            size_t nw = 0, nr = 0;
            for (const auto& [id, tc] : conns_) nw += tc.write != nullptr, nr += tc.read != nullptr;
            j["connections"] = nw + nr;
            j["connections_mode"] = o_.split_connections ? "split" : "shared";
            if (o_.split_connections) j["connections_write"] = nw, j["connections_read"] = nr;
            // Server memory set aside out of the limit for the connections the run may open (docs/simulate.md).
            j["connections_planned"] = o_.planned_connections;
            j["connection_bytes"] = conn_bytes_;
            j["connection_query_buffer_bytes"] = qbuf_bytes_;  // set aside for each planned connection that SETs
            j["connections_planned_set"] = planned_setters();
            // Over a Redis Cluster (docs/redis-cluster.md): redirections followed and slot-map reloads, summed over
            // the connections (read when the run ends, so no worker is using them).
            redis::ClusterStats cs;
            bool cluster = false;
            for (const auto& [id, tc] : conns_)
                for (const redis::Connection* c : {tc.write.get(), tc.read.get()})
                    if (c && c->cluster()) {
                        cluster = true;
                        cs.moved += c->cluster()->stats().moved;
                        cs.ask += c->cluster()->stats().ask;
                        cs.map_reloads += c->cluster()->stats().map_reloads;
                    }
            if (cluster) j["cluster"] = {{"moved", cs.moved}, {"ask", cs.ask}, {"map_reloads", cs.map_reloads}};
        }
        j["client"] = o_.client;
        // --remote-capacity-gb 0: the server's free memory at start over the run's clients (docs/simulate.md).
        j["auto_capacity_clients"] = o_.clients;
        j["auto_capacity_bytes"] =
            auto_capacity() == kUnlimited ? nlohmann::ordered_json() : nlohmann::ordered_json(auto_capacity());
        j["commands"] = {
            {"set", sets_.load()}, {"get", gets_.load()}, {"getex", getexs_.load()}, {"del", dels_.load()}};
        j["chunk_get_hits"] = get_hits_.load();
        j["chunk_get_misses"] = get_misses_.load();
        j["bytes_sent"] = sent_.load();
        j["bytes_received"] = received_.load();
        // Seconds the connections spent in the chunked SETs and GETs (summed over connections): bytes over them are
        // the tier's bytes/s while transferring, per connection (bench/run.sh, remote stage).
        j["busy_s"] = {{"set", set_s_.load()}, {"get", get_s_.load()}};
        // Wall-clock seconds with at least one SET or GET in flight on any connection (<= set + get above, >= their
        // sum over the connections): bytes over them are the tier's bytes/s while it had work (bench/run.sh).
        j["in_flight_s"] = in_flight_.seconds();
        // Reads of shared entries this client's tiers did not hold (docs/simulate.md, "Remote tier"): found on the
        // server (another client wrote them: hits), or not.
        j["foreign_hits"] = foreign_hits_.load();
        j["foreign_hit_bytes"] = foreign_bytes_.load();
        j["foreign_misses"] = foreign_misses_.load();
        j["foreign_turn_hits"] = foreign_turn_hits_.load();  // of them, turns of conversations handed over
        j["foreign_turn_hit_bytes"] = foreign_turn_bytes_.load();
        j["foreign_turn_misses"] = foreign_turn_misses_.load();
        j["lost_reads"] = lost_.load();  // reads of this client's own entries that the server no longer had
        j["errors"] = errors_.load();
        writeback_json(j);
        if (const Down d = down(); !d.reason.empty()) j["down"] = {{"reason", d.reason}, {"entries_lost", d.gone}};
        // Down for good: the end-of-run cleanup (clear) will not ask the server, so the run's keys stay there, their
        // number unknown (docs/simulate.md, "Remote tier"); never claimed 0.
        if (down().gone) j["keys_left_unknown"] = true;
        long long now = -1;
        try {
            std::lock_guard<std::mutex> g(control_mu_);
            now = on_control([](redis::Connection& c) { return info_field(c, "used_memory"); });
        } catch (const std::exception&) {}
        j["server"] = {{"used_memory_start", used_start_}, {"used_memory_now", now}, {"maxmemory", maxmemory_}};
        return j;
    }

    Down down() const override {
        std::lock_guard<std::mutex> g(down_mu_);
        return down_;
    }

    void finish_writes(double timeout_s) override {
        if (!o_.write_back) return;
        const double t0 = now_s();
        for (WriteBackQueue* q : writers_now()) q->drain(timeout_s - (now_s() - t0));
        wb_drain_s_ = now_s() - t0;
        wb_lost_at_stop_ += stop_writers();
    }

    void handoff_send(int to, const std::string& msg) override {
        const std::string list = o_.run_id + ":handoff:" + std::to_string(to);
        std::lock_guard<std::mutex> g(control_mu_);
        handoff_used_ = true;
        on_control([&](redis::Connection& c) {
            redis::Reply r = c.key_command(list, {"RPUSH", list, msg});  // over a cluster: at the list's shard
            if (r.type == redis::Reply::Type::Error) throw Error("redis: RPUSH " + list + ": " + r.str);
            return r.integer;
        });
    }

    std::optional<std::string> handoff_take() override {
        const std::string list = o_.run_id + ":handoff:" + std::to_string(o_.client);
        std::optional<std::string> out;
        std::lock_guard<std::mutex> g(control_mu_);
        handoff_used_ = true;
        on_control([&](redis::Connection& c) {
            redis::Reply r = c.key_command(list, {"LPOP", list});
            if (r.type == redis::Reply::Type::Error) throw Error("redis: LPOP " + list + ": " + r.str);
            if (r.type == redis::Reply::Type::String) out = r.str;
            return 0LL;
        });
        return out;
    }

    void clear() override {
        stop_writers();
        std::map<std::string, uint64_t> left;
        {
            std::lock_guard<std::mutex> g(mu_);
            left.insert(sizes_.begin(), sizes_.end());
            sizes_.clear();
        }
        try {
            std::lock_guard<std::mutex> g(control_mu_);
            on_control([&](redis::Connection& c) {
                for (const auto& [k, b] : left) c.del_chunks(full_key(k), b, chunk_);
                if (handoff_used_) {  // messages nobody took; without handoff no list was made
                    const std::string list = o_.run_id + ":handoff:" + std::to_string(o_.client);
                    c.key_command(list, {"DEL", list});
                }
                return 0LL;
            });
        } catch (const std::exception&) {}
    }

private:
    /// A thread's write connection (SETs) and read connection (GETs, GETEXs, DELs): a connection that carries both
    /// big SET values and big GET replies costs the server more CPU and page faults per MB than two that each carry
    /// one (docs/performance.md, "Remote tier: where the time goes").
    enum class Role { Write, Read };
    struct ThreadConns {
        std::unique_ptr<redis::Connection> write, read;
    };

    /// The connections' names in the server's CLIENT LIST (redis::Url::client_name; docs/simulate.md, "Remote tier").
    static constexpr const char* kWriteName = "kvio-write";
    static constexpr const char* kReadName = "kvio-read";
    static constexpr const char* kSharedName = "kvio-data";
    static constexpr const char* kControlName = "kvio-control";

    /// Write-back: this thread's queue, made with its writer thread on first use.
    WriteBackQueue& writer() {
        const auto id = std::this_thread::get_id();
        std::lock_guard<std::mutex> g(mu_);
        auto& w = writers_[id];
        if (!w)
            w = std::make_unique<WriteBackQueue>(
                o_.writeback_queue, [this](WriteJob& j) { write_queued(j); },
                [this](WriteJob& j) { finish_job(j.key, false, 0, "still queued when the writers stopped"); });
        return *w;
    }
    std::vector<WriteBackQueue*> writers_now() {
        std::lock_guard<std::mutex> g(mu_);
        std::vector<WriteBackQueue*> v;
        for (auto& [id, w] : writers_) v.push_back(w.get());
        return v;
    }
    /// Stops every writer (the queued writes are lost); returns how many were lost so.
    uint64_t stop_writers() {
        uint64_t n = 0;
        for (WriteBackQueue* q : writers_now()) n += q->stop();
        return n;
    }

    /// On a writer thread: the queued write, through this thread's own connection; none once the tier is down (the
    /// server is gone or full: the write is lost without a try).
    void write_queued(WriteJob& j) {
        std::string err = down().reason;
        const double t0 = now_s();
        if (err.empty()) {
            try {
                write_through(j.key, j.bytes, j.data);
            } catch (const std::exception& e) {
                err = e.what();  // counted in errors_ by write_through
            }
        }
        finish_job(j.key, err.empty(), now_s() - t0, err);
    }
    void finish_job(const std::string& key, bool ok, double set_s, const std::string& err) {
        std::lock_guard<std::mutex> g(mu_);
        if (ok) {
            wb_written_ += 1;
            wb_set_lat_.push_back(set_s);
        } else {
            wb_lost_ += 1;
            lost_keys_.insert(key);
            if (wb_first_lost_.empty()) wb_first_lost_ = key + ": " + err;
        }
        if (auto it = pending_.find(key); it != pending_.end() && --it->second <= 0) pending_.erase(it);
        pending_cv_.notify_all();
    }
    /// Waits while a write of `key` is queued or being written; false when the entry was lost.
    bool settled(const std::string& key) {
        std::unique_lock<std::mutex> l(mu_);
        pending_cv_.wait(l, [&] { return !pending_.count(key); });
        return !lost_keys_.count(key);
    }
    void writeback_json(nlohmann::ordered_json& j) {
        j["write_mode"] = o_.write_back ? "back" : "through";
        if (!o_.write_back) return;
        std::lock_guard<std::mutex> g(mu_);
        size_t qmax = 0;
        uint64_t waits = 0;
        double wait_s = 0;
        for (const auto& [id, w] : writers_) {
            qmax = std::max(qmax, w->queued_max());
            waits += w->full_waits();
            wait_s += w->full_wait_s();
        }
        j["writeback_queue_bound"] = o_.writeback_queue;
        j["writeback_writers"] = writers_.size();
        j["writeback_queued_max"] = qmax;
        j["writeback_full_waits"] = waits;
        j["writeback_full_wait_s"] = wait_s;
        j["writeback_queued"] = wb_queued_;  // every write handed to a queue: written + lost once the run ended
        j["writeback_written"] = wb_written_;
        j["writeback_lost"] = wb_lost_;
        j["writeback_lost_at_stop"] = wb_lost_at_stop_.load();
        j["writeback_lost_reads"] = lost_reads_wb_.load();
        if (!wb_first_lost_.empty()) j["writeback_first_lost"] = wb_first_lost_;
        j["writeback_drain_s"] = wb_drain_s_.load();
        j["writeback_set_latency_ms"] = latency_summary_ms(wb_set_lat_);
    }

    /// Shared entries under "<run id>:shared:", the client's own under "<run id>:c<client>:".
    std::string full_key(const std::string& key) const {
        return o_.run_id + (remote_shared_key(key) ? ":shared:" : ":c" + std::to_string(o_.client) + ":") + key;
    }

    /// The chunks of `key` read with `verb`: false when one is missing. With --verify-reads and `check`, every byte
    /// is compared with what this client's write sent (a shared entry may hold another client's bytes: unchecked).
    bool get(const std::string& key, uint64_t bytes, const std::string& verb, bool check) {
        redis::Connection& c = conn(Role::Read);
        const double t0 = now_s();
        const bool verify = check && check_pool_;
        const EntryData want(verify ? *check_pool_ : dummy_pool(), key_hash(key, check_seed_));
        uint64_t bad = EntryData::kNoMismatch;
        uint64_t found = 0;
        InFlightScope busy(in_flight_);
        try {
            found = c.get_chunks(
                full_key(key), bytes, chunk_,
                [&](uint64_t off, const char* src, size_t len) {
                    if (verify && bad == EntryData::kNoMismatch) {
                        uint64_t m = want.first_mismatch(off, reinterpret_cast<const uint8_t*>(src), len);
                        if (m != EntryData::kNoMismatch) bad = m;
                    }
                },
                verb);
        } catch (const Error& e) {
            errors_ += 1;
            note_timeout(c, e);
            // An error reply or a chunk of another size comes after every chunk's command was answered: the server
            // counted them, so they are counted here too (an I/O error leaves the number unknown).
            if (!c.broken()) (verb == "GET" ? gets_ : getexs_) += redis::chunk_count(bytes, chunk_);
            throw;
        }
        get_s_ += now_s() - t0;
        const uint64_t n = redis::chunk_count(bytes, chunk_);
        (verb == "GET" ? gets_ : getexs_) += n;
        get_hits_ += found;
        get_misses_ += n - found;
        if (found < n) return false;
        received_ += bytes;
        if (bad != EntryData::kNoMismatch)
            throw PayloadMismatch("--verify-reads: remote entry '" + key + "' differs at byte " + std::to_string(bad));
        return true;
    }
    static const NoisePool& dummy_pool() {
        static const NoisePool p(0, 4096, 1);
        return p;
    }

    /// Runs `f` on the control connection (INFO, the end-of-run DELs); when a fault broke it (a killed connection
    /// is found broken at its first use), once more on a new one. control_mu_ held.
    long long on_control(const std::function<long long(redis::Connection&)>& f) {
        if (const Down d = down(); d.gone) throw Error("redis: the remote tier is down: " + d.reason);
        try {
            if (control_->broken()) control_ = std::make_unique<redis::Connection>(control_url_, o_.timeout_s);
            return f(*control_);
        } catch (const Error& e) {
            if (!control_->broken()) throw;
            note_timeout(*control_, e);  // a silent server: not asked again
            if (down().gone) throw;
            control_ = std::make_unique<redis::Connection>(control_url_, o_.timeout_s);
            return f(*control_);
        }
    }

    /// After an I/O error on `c`: a reply the server did not send within the timeout (docs/simulate.md, "Remote
    /// tier": a stopped or hung server) marks the tier down for good, with that first error, so no later op (nor
    /// the end of the run) waits out the timeout again; a closed connection (CLIENT KILL) is made again instead.
    void note_timeout(const redis::Connection& c, const Error& e) {
        if (c.broken() && redis::is_timeout(e.what())) set_down(timeout_reason(e.what()), true);
    }
    std::string timeout_reason(const std::string& error) const {
        return "the server did not answer within " + std::to_string(int(o_.timeout_s)) + " s: " + error;
    }

    /// The first reason the tier went down wins; a later "gone" makes a full server's entries lost too.
    void set_down(const std::string& reason, bool gone) {
        std::lock_guard<std::mutex> g(down_mu_);
        if (down_.reason.empty()) down_.reason = reason;
        down_.gone = down_.gone || gone;
    }

    /// Server memory of one idle connection: this (control) connection's `tot-mem` in `CLIENT INFO`; a server that
    /// refuses the command (older than Redis 6.2, or managed) is asked for used_memory before and after a probe
    /// connection opens and answers a PING.
    uint64_t measure_connection_bytes() {
        try {
            const std::string text = control_->command({"CLIENT", "INFO"}).str;
            if (const size_t at = text.find("tot-mem="); at != std::string::npos)
                return uint64_t(std::atoll(text.c_str() + at + 8));
        } catch (const Error&) {}
        const long long before = info_field(*control_, "used_memory");
        redis::Connection probe(url_, o_.timeout_s, redis::Routing::Single);
        probe.command({"PING"});
        const long long after = info_field(*control_, "used_memory");
        return after > before ? uint64_t(after - before) : 0;
    }

    /// This thread's connection for `role`, made on demand. After an I/O error broke either of the thread's two, both
    /// are made again at its next op (a fault meets the thread once, as with one connection: a killed server's
    /// refusal then marks the tier down at that op instead of failing one more on the other dead socket).
    redis::Connection& conn(Role role) {
        // Down for good (gone, or silent past the reply timeout): no op waits for the server again.
        if (const Down d = down(); d.gone) throw Error("redis: the remote tier is down: " + d.reason);
        const auto id = std::this_thread::get_id();
        std::unique_lock<std::mutex> l(mu_);
        ThreadConns& tc = conns_[id];
        if ((tc.write && tc.write->broken()) || (tc.read && tc.read->broken())) tc.write.reset(), tc.read.reset();
        if (!o_.split_connections) role = Role::Read;  // one connection per thread: under the read slot
        std::unique_ptr<redis::Connection>& slot = role == Role::Write ? tc.write : tc.read;
        if (slot) return *slot;
        l.unlock();
        std::unique_ptr<redis::Connection> c;
        try {
            c = std::make_unique<redis::Connection>(!o_.split_connections ? shared_url_
                                                    : role == Role::Write ? write_url_
                                                                          : read_url_,
                                                    o_.timeout_s);
        } catch (const Error& e) {
            errors_ += 1;
            set_down(redis::is_timeout(e.what())
                         ? timeout_reason(e.what())
                         : "the server cannot be reached again after a fault: " + std::string(e.what()),
                     true);
            throw;
        }
        l.lock();
        std::unique_ptr<redis::Connection>& s2 = role == Role::Write ? conns_[id].write : conns_[id].read;
        s2 = std::move(c);
        return *s2;
    }

    RemoteOptions o_;
    redis::Url url_;
    redis::Url write_url_, read_url_, shared_url_, control_url_;  ///< url_ named kWriteName ... kControlName
    uint64_t chunk_ = kRemoteChunkBytes;
    long long used_start_ = -1, maxmemory_ = -1;
    uint64_t conn_bytes_ = 0;  ///< measure_connection_bytes()
    uint64_t qbuf_bytes_ = 0;  ///< the query buffer a connection keeps after a chunk's SET (kQueryBufferOverhead)
    std::mutex control_mu_;
    bool handoff_used_ = false;  ///< handoff_send or handoff_take ran (under control_mu_)
    std::unique_ptr<redis::Connection> control_;
    std::mutex mu_;
    std::unordered_map<std::thread::id, ThreadConns> conns_;
    std::unordered_map<std::string, uint64_t> sizes_;
    mutable std::mutex down_mu_;
    Down down_;
    std::atomic<uint64_t> sets_{0}, gets_{0}, getexs_{0}, dels_{0}, get_hits_{0}, sent_{0}, received_{0}, errors_{0};
    std::atomic<uint64_t> foreign_hits_{0}, foreign_bytes_{0}, foreign_misses_{0}, get_misses_{0}, lost_{0};
    std::atomic<double> set_s_{0}, get_s_{0};
    InFlightClock in_flight_;
    std::atomic<uint64_t> foreign_turn_hits_{0}, foreign_turn_bytes_{0}, foreign_turn_misses_{0};
    // Write-back (under mu_ but the atomics): writes queued or in progress per key, entries whose write was lost.
    std::condition_variable pending_cv_;
    std::unordered_map<std::string, int> pending_;
    std::unordered_set<std::string> lost_keys_;
    std::unordered_map<std::thread::id, std::unique_ptr<WriteBackQueue>> writers_;
    uint64_t wb_queued_ = 0, wb_written_ = 0, wb_lost_ = 0;
    std::vector<double> wb_set_lat_;  ///< s, each background write's SETs (not the op's latency)
    std::string wb_first_lost_;
    std::atomic<uint64_t> wb_lost_at_stop_{0}, lost_reads_wb_{0};
    std::atomic<double> wb_drain_s_{0};
};

}  // namespace

bool remote_shared_key(const std::string& key) {
    return key.rfind("kv_system_", 0) == 0 || key.rfind("hconv_", 0) == 0;
}

uint64_t remote_footprint(uint64_t bytes, uint64_t chunk) {
    const uint64_t n = redis::chunk_count(bytes, chunk);
    const uint64_t full = bytes / chunk, last = bytes - full * chunk;
    // A string value is its header (up to 17 bytes), the bytes, a NUL, and the CRLF read with them: 20 bytes.
    uint64_t b = full * alloc_class(chunk + 20) + (n > full ? alloc_class(last + 20) : 0);
    return b + n * kRemoteKeyOverhead;
}

std::string make_remote_run_id() {
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    return "kvio-" + std::string(host) + "-" + std::to_string(getpid()) + "-" + std::to_string(time(nullptr));
}

std::unique_ptr<RemoteTier> make_remote_tier(const RemoteOptions& o) {
    // hiredis write()s to its socket: after the server closed a connection (CLIENT KILL, a killed server) the next
    // write would raise SIGPIPE and kill the run. Ignored, the write fails with EPIPE: a counted I/O error.
    std::signal(SIGPIPE, SIG_IGN);
    return std::make_unique<RedisTier>(o);
}

}  // namespace kvio::serving
