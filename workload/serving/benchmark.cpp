// run_simulation (simulate.h): the benchmark's IntegratedBenchmark natively — user threads that generate the
// open-loop request stream into one priority queue, min(users, 500) workers that run the per-request steps, the stop
// rules, then the results document and the console report (docs/mlperf-benchmark.md, "Users and the request stream",
// "The life of a request", "Stop rules", "Metrics and the results JSON").
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/jsonl.h"
#include "common/stop_signal.h"
#include "workload/serving/autoscaler.h"
#include "workload/serving/cache.h"
#include "workload/serving/conversation.h"
#include "workload/serving/results/drain_report.h"
#include "workload/serving/results/merge_results.h"
#include "workload/serving/results/metrics.h"
#include "workload/serving/results/output_path.h"
#include "workload/serving/prefix.h"
#include "workload/serving/qos.h"
#include "workload/serving/rag.h"
#include "workload/serving/results/report.h"
#include "workload/serving/request_queue.h"
#include "workload/serving/simulate.h"
#include "workload/serving/results/stats_util.h"
#include "workload/serving/results/stop_counters.h"
#include "workload/serving/results/validation_trace.h"
#include "workload/serving/warmup.h"
#include "workload/serving/arrivals/trace_source.h"
#include "workload/serving/results/xlsx_export.h"

namespace kvio::serving {

namespace {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC

uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// run_simulation's StopSignal while it runs (SignalGuard), read by the main loop and the warm-up's threads.
std::atomic<const StopSignal*> g_stop{nullptr};
// The signal that asked the run to stop (0: none). The first signal decides (stop.reason, stop.signal and the exit
// status agree); later ones are ignored.
int stop_signo() {
    const StopSignal* s = g_stop.load();
    return s ? s->signo() : 0;
}
bool stop_signalled() { return stop_signo() != 0; }

/// Holds SIGINT/SIGTERM/SIGHUP for the whole of run_simulation (from before the tracer, the cache's temporary
/// directory and the warm-up, so a signal never kills it); the previous handlers come back at destruction.
struct SignalGuard {
    StopSignal stop;
    SignalGuard() { g_stop = &stop; }
    ~SignalGuard() { g_stop = nullptr; }
};

/// Seconds per generated token of a --generation-mode (benchmark GENERATION_TIMING, docs/mlperf-benchmark.md, "The life
/// of a request"; the YAML generation_timing values, dead in the benchmark, are honoured — their defaults are the same
/// numbers).
double generation_seconds_per_token(const SimConfig& c) {
    if (c.generation_mode == "none") return c.yaml.generation_timing_none;
    if (c.generation_mode == "fast") return c.yaml.generation_timing_fast;
    return c.yaml.generation_timing_realistic;
}

}  // namespace

std::string default_results_name() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "benchmark_results_%Y%m%d_%H%M%S.json", &tm);
    return buf;
}

namespace {

/// The console section of a warm-up step as the benchmark titles it (docs/mlperf-benchmark.md, "Console report"), with
/// what this run measured: target (precondition), writer threads, entries and GiB written, failed allocations,
/// wall time, and how it ended. Printed after the step (its progress lines go to stderr while it runs).
void print_warmup_section(std::ostream& os, const char* title, const WarmupResult& w) {
    char b[256];
    os << "\n### " << title << " ###\n";
    if (w.target_bytes) {
        std::snprintf(b, sizeof b, "  Target: %.2f GiB\n", double(w.target_bytes) / double(1ull << 30));
        os << b;
    }
    os << "  Threads: " << w.threads << "\n";
    std::snprintf(b, sizeof b, "  Written: %zu entries, %.2f GiB in %.2f s (%llu failed allocations)%s%s\n",
                  w.keys.size(), double(w.bytes_written) / double(1ull << 30), w.seconds,
                  static_cast<unsigned long long>(w.failed), w.stalled ? "; stalled: the filesystem is full" : "",
                  w.stopped ? "; stopped by a signal" : "");
    os << b << "  Statistics reset for the steady-state measurement\n" << std::flush;
}

/// A stop-aware sleep: false when the run was asked to stop before `dur` elapsed.
class StopFlag {
public:
    void set() {
        {
            std::lock_guard lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
    }
    bool is_set() const { return stop_.load(); }
    bool sleep_for(double seconds) {
        std::unique_lock lk(mu_);
        return !cv_.wait_for(lk, std::chrono::duration<double>(seconds), [&] { return stop_.load(); });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stop_{false};
};

/// One run: owns the threads and everything they share.
class Simulation {
public:
    Simulation(const SimConfig& c, const workload::ModelConfig& model, uint64_t bpt, std::vector<UserProfile> users,
               uint64_t seed_used, MultiTierCache& cache)
        : c_(c),
          model_(model),
          bpt_(bpt),
          users_(std::move(users)),
          cache_(cache),
          conversations_(c.yaml.max_conversations, c.remote_handoff_probability > 0
                                                       ? "hconv_c" + std::to_string(c.client_index) + "_"
                                                       : std::string("conv_")),
          qos_(c.yaml.qos_profiles),
          gen_s_per_token_(generation_seconds_per_token(c)) {
        PyRandom derive(int64_t(seed_used) + 1);  // per-thread streams, derived from the seed (not the user table's)
        // users_ is the pool: the first --num-users run from the start; with --enable-autoscaling the rest are the
        // users the autoscaler may add (the same table continued), whose streams are drawn after the RAG seed so a
        // run without autoscaling draws exactly what it drew before.
        const size_t initial = size_t(std::min<int64_t>(c.num_users, int64_t(users_.size())));
        for (size_t i = 0; i < initial; ++i) user_seeds_.push_back(derive.getrandbits(32));
        num_workers_ = worker_threads(c.num_users);
        for (size_t i = 0; i < num_workers_; ++i) worker_seeds_.push_back(derive.getrandbits(32));
        rag_seed_ = derive.getrandbits(32);
        for (size_t i = initial; i < users_.size(); ++i) user_seeds_.push_back(derive.getrandbits(32));
        for (size_t i = num_workers_; i < worker_threads(int64_t(users_.size())); ++i)
            worker_seeds_.push_back(derive.getrandbits(32));
        active_users_ = max_active_users_ = initial;
        active_workers_ = num_workers_;
        if (c.enable_autoscaling) monitor_ = std::make_unique<AutoscaleMonitor>(c);
        if (!c.disable_prefix_caching)
            prefix_ = std::make_unique<PrefixCacheManager>(c.yaml.system_prompt_hit_probability, bpt);
        if (c.enable_rag) rag_ = std::make_unique<RagDocumentManager>(c.yaml, bpt, rag_large_model(model));
    }

    /// Replaces the synthetic users by a trace/dataset replay (one producer thread).
    void set_trace(std::unique_ptr<TraceSource> t) { trace_ = std::move(t); }
    void set_poll_stop(std::function<int(int)> f) { poll_stop_ = std::move(f); }
    /// Where the warm-up's console sections go (print_warmup_section); null: none.
    void set_console(std::ostream* console) { console_ = console; }
    /// Runs to the stop; fills `out` (the results document) and returns the exit code.
    int run(nlohmann::ordered_json& out, std::ostream* progress, const std::function<void()>& before_start);

private:
    void user_loop(size_t index);
    void trace_loop();
    void worker_loop(size_t index);
    /// One request in flight: what its steps share.
    struct RequestState {
        InferenceRequest& req;
        PyRandom& rng;
        RequestRecord rec{};
        CacheType cache_type = CacheType::User;  ///< the decode reads' counter (System after a prefix hit)
        CachePhase phase = CachePhase::Prefill;  ///< the prefix read's phase (Decode for decode requests)
    };
    void process_request(InferenceRequest& req, PyRandom& rng);
    void read_prefix(RequestState& s);
    bool read_previous_turns(RequestState& s);
    void write_prefill(RequestState& s);
    void read_rag_chunks(RequestState& s);
    bool read_for_decode(RequestState& s);
    bool generate(RequestState& s);
    void record(RequestState& s);
    AllocResult write_counted(const std::string& key, int64_t tokens, RequestRecord& rec);
    bool cut_by_stop(const RequestRecord& rec);
    AccessResult read_counted(const std::string& key, CachePhase phase, CacheType type, uint64_t bytes,
                              RequestRecord& rec, double& latency);
    std::shared_ptr<InferenceRequest> new_request(const UserProfile& u, int64_t ctx, int64_t gen);
    void sample_bandwidth(double t_s, const CacheStats& s);
    bool wait_until_active(size_t index, const std::atomic<size_t>& active);
    void apply_users(int64_t n);
    bool autoscale_tick(double t_s, std::ostream* progress);
    void warm_up(std::ostream* progress);
    std::string wait_for_stop(const std::function<double()>& elapsed, std::ostream* progress);
    void wait_for_drain(std::ostream* progress);
    void print_progress(double t, std::ostream& out);
    nlohmann::ordered_json results_json(double elapsed_s);
    nlohmann::ordered_json kvio_json(const CacheStats& final_stats, const std::string& reason, int sig, double stop_at,
                                     double elapsed_s);
    nlohmann::ordered_json autoscaler_json() const;
    bool hand_off(const std::string& conv);
    std::string take_or_start(const std::string& user_id);

    const SimConfig& c_;
    workload::ModelConfig model_;
    uint64_t bpt_;
    std::vector<UserProfile> users_;
    MultiTierCache& cache_;
    RequestQueue queue_;
    ConversationManager conversations_;
    std::unique_ptr<PrefixCacheManager> prefix_;
    std::unique_ptr<RagDocumentManager> rag_;
    QosMonitor qos_;
    RunMetrics metrics_;
    double gen_s_per_token_;
    size_t num_workers_ = 0;
    std::vector<uint64_t> user_seeds_, worker_seeds_;
    uint64_t rag_seed_ = 0;
    std::vector<std::string> prepop_keys_;
    nlohmann::ordered_json warmup_json_ = nlohmann::ordered_json::object();  // kvio.precondition / prepopulation

    // Autoscaling: threads with index >= active_* are parked; a scale step starts or wakes or parks them.
    std::unique_ptr<AutoscaleMonitor> monitor_;
    std::vector<std::thread> user_threads_, worker_threads_;
    std::atomic<size_t> active_users_{0}, active_workers_{0};
    size_t max_active_users_ = 0;
    std::mutex park_mu_;
    std::condition_variable park_cv_;
    std::unique_ptr<TraceSource> trace_;
    std::function<int(int)> poll_stop_;    ///< SimHooks::poll_stop
    std::ostream* console_ = nullptr;      ///< the report's console (set_console)
    std::atomic<bool> trace_done_{false};  // the replay issued its last request (finite --replay-cycles)
    std::atomic<uint64_t> settled_{0};     // requests a worker is done with (completed, cut or dropped)
    uint64_t trace_waits_full_queue_ = 0;

    StopFlag stop_;  // users stop generating, workers drop what they pop
    std::atomic<bool> max_reached_{false};
    std::atomic<uint64_t> recorded_{0};  // --max-requests: completions reserved
    std::atomic<uint64_t> seq_{0};       // the benchmark's global req_id
    StopCounters stop_counts_;           // kvio.stop
    std::atomic<uint64_t> in_flight_{0};
    // --remote-handoff-probability: conversations handed to the next client, lists polled, conversations taken over
    // and the turns they carried.
    std::atomic<uint64_t> handed_off_{0}, handoff_polls_{0}, taken_over_{0}, turns_taken_over_{0};
    // Turns handed off before their prefill sized them, and reads of such turns skipped by the client that took them
    // over (their size is not known there: docs/simulate.md, "Remote tier", handoff).
    std::atomic<uint64_t> turns_handed_unsized_{0}, unsized_turn_reads_skipped_{0};
    nlohmann::ordered_json bandwidth_ = nlohmann::ordered_json::array();
    uint64_t last_read_[kTierSlots] = {}, last_written_[kTierSlots] = {};
    double last_t_ = 0;
};

std::shared_ptr<InferenceRequest> Simulation::new_request(const UserProfile& u, int64_t ctx, int64_t gen) {
    auto r = std::make_shared<InferenceRequest>();
    r->user_id = u.user_id;
    r->qos = u.qos;
    r->context_tokens = ctx;
    r->generate_tokens = gen;
    r->seq = ++seq_;
    char id[96];
    std::snprintf(id, sizeof id, "req_%s_%06llu", u.user_id.c_str(), static_cast<unsigned long long>(r->seq));
    r->request_id = id;
    return r;
}

// docs/mlperf-benchmark.md, "Users and the request stream": think, multi-turn bookkeeping, draw the request, enqueue,
// maybe a RAG side request.
void Simulation::user_loop(size_t index) {
    const UserProfile& u = users_[index];
    PyRandom rng{int64_t(user_seeds_[index])};
    const YamlSettings& y = c_.yaml;
    std::string conv;
    while (!stop_.is_set()) {
        if (!wait_until_active(index, active_users_)) break;
        if (!stop_.sleep_for(u.think_time * rng.uniform(0.8, 1.2))) break;
        if (index >= active_users_.load()) continue;  // parked during the think time: issue nothing
        if (!c_.disable_multi_turn) {
            if (!conv.empty() && rng.random() >= 1.0 - y.end_conversation_probability) {
                conversations_.end_conversation(conv);
                conv.clear();
            }
            if (!conv.empty() && conversations_.turn_count(conv) >= y.max_turns_per_conv) {
                conversations_.end_conversation(conv);
                conv.clear();
            }
            // The user returns to another client (docs/simulate.md, "Remote tier", handoff).
            if (!conv.empty() && c_.remote_handoff_probability > 0 && rng.random() < c_.remote_handoff_probability &&
                hand_off(conv))
                conv.clear();
            if (conv.empty())
                conv = c_.remote_handoff_probability > 0 ? take_or_start(u.user_id)
                                                         : conversations_.start_conversation(u.user_id);
        }
        int64_t ctx = rng.randint(std::max<int64_t>(1, u.context_length / 4), u.context_length);
        int64_t gen = rng.randint(std::max<int64_t>(1, u.generation_length / 4), u.generation_length);
        auto r = new_request(u, ctx, gen);
        if (!c_.disable_multi_turn) {
            auto turn = conversations_.add_turn(conv, ctx);
            if (!turn) {  // dropped by the 1000-conversation cap: start over (the benchmark's thread dies here)
                conv = conversations_.start_conversation(u.user_id);
                turn = conversations_.add_turn(conv, ctx);
            }
            r->conversation_id = conv;
            r->turn_number = turn->turn_number;
            r->cache_key = turn->cache_key;
        } else {
            char key[96];
            std::snprintf(key, sizeof key, "%s_req_%06llu", u.user_id.c_str(), static_cast<unsigned long long>(r->seq));
            r->cache_key = key;
        }
        r->phase = ctx >= 10000 ? RequestPhase::Prefill : RequestPhase::PrefillDecode;
        r->submit_ns = now_ns();
        queue_.push(r);
        ++stop_counts_.requests_issued;
        if (rag_ && rng.random() < y.rag_request_probability) {
            RagDocument doc;
            std::vector<size_t> chunks;
            if (rag_->pick(rng, doc, chunks)) {
                int64_t tokens = 0;
                for (size_t i : chunks) tokens += doc.chunks[i].tokens;
                auto s = new_request(u, std::max<int64_t>(1, tokens), rng.randint(50, 200));
                s->phase = RequestPhase::Decode;
                s->cache_key = "rag_" + doc.doc_id;
                s->is_rag = true;
                s->rag_doc_id = doc.doc_id;
                s->submit_ns = now_ns();
                queue_.push(s);
                ++stop_counts_.requests_issued;
            }
        }
    }
}

// Conversation handoff: `conv` and its turns so far go to the next client's list on the remote server
// (docs/simulate.md, "Remote tier"); the conversation ends here. False when the server did not take it.
bool Simulation::hand_off(const std::string& conv) {
    const std::vector<Turn> turns = conversations_.turns(conv);
    const int to = int((c_.client_index + 1) % std::max<int64_t>(c_.client_count, 1));
    if (!cache_.handoff_send(to, handoff_message(conv, turns))) return false;
    conversations_.end_conversation(conv);
    ++handed_off_;
    for (const Turn& t : turns) turns_handed_unsized_ += !t.sized;
    return true;
}

// A conversation another client handed over, when one waits in this client's list; else a new one of `user_id`.
std::string Simulation::take_or_start(const std::string& user_id) {
    ++handoff_polls_;
    if (std::optional<std::string> m = cache_.handoff_take()) {
        // Not a message of this run's clients: a new conversation instead.
        if (std::optional<HandedConversation> h = parse_handoff_message(*m);
            h && conversations_.adopt(h->conv_id, h->turns)) {
            ++taken_over_;
            turns_taken_over_ += h->turns.size();
            return h->conv_id;
        }
    }
    return conversations_.start_conversation(user_id);
}

// docs/mlperf-benchmark.md, "Trace replay and special modes": one producer replays the trace; a full queue
// (--max-queued-requests) holds it back.
void Simulation::trace_loop() {
    while (!stop_.is_set()) {
        const uint64_t seq = seq_ + 1;
        std::optional<TraceArrival> a = trace_->next(seq);
        if (!a) break;
        if (a->delay_s > 0 && !stop_.sleep_for(a->delay_s)) return;
        while (c_.max_queued_requests > 0 && queue_.size() >= uint64_t(c_.max_queued_requests)) {
            ++trace_waits_full_queue_;
            if (!stop_.sleep_for(0.001)) return;
        }
        auto r = std::make_shared<InferenceRequest>();
        r->seq = ++seq_;
        r->user_id = a->user_id;
        r->request_id = a->request_id;
        r->cache_key = a->cache_key;
        r->qos = a->qos;
        r->context_tokens = a->context_tokens;
        r->generate_tokens = a->generate_tokens;
        r->turn_number = a->turn_number;
        r->phase = r->context_tokens >= 10000 ? RequestPhase::Prefill : RequestPhase::PrefillDecode;
        r->submit_ns = now_ns();
        queue_.push(r);
        ++stop_counts_.requests_issued;
    }
    trace_done_ = true;
}

void Simulation::worker_loop(size_t index) {
    PyRandom rng{int64_t(worker_seeds_[index])};
    while (true) {
        if (index >= active_workers_.load() && !wait_until_active(index, active_workers_)) return;
        auto r = queue_.pop(std::chrono::milliseconds(100));
        if (!r) {
            if (stop_.is_set()) return;
            continue;
        }
        if (stop_.is_set()) {  // the benchmark drops a request popped after the stop; kvio counts it
            ++stop_counts_.dropped_popped_after_stop;
            ++settled_;
            continue;
        }
        ++in_flight_;
        process_request(*r, rng);
        --in_flight_;
        ++settled_;
    }
}

// Parks the calling thread while its index is not below `active`; false when the run stops.
bool Simulation::wait_until_active(size_t index, const std::atomic<size_t>& active) {
    if (index < active.load()) return !stop_.is_set();
    std::unique_lock lk(park_mu_);
    park_cv_.wait(lk, [&] { return index < active.load() || stop_.is_set(); });
    return !stop_.is_set();
}

// A scale step: n users issue requests (threads started or woken; those above n park), min(n, 500) workers serve.
void Simulation::apply_users(int64_t n) {
    const size_t users = size_t(std::clamp<int64_t>(n, 1, int64_t(users_.size())));
    const size_t workers = std::min<size_t>(users, worker_seeds_.size());
    {
        std::lock_guard lk(park_mu_);
        active_users_ = users;
        active_workers_ = workers;
    }
    park_cv_.notify_all();
    while (user_threads_.size() < users) {
        const size_t i = user_threads_.size();
        user_threads_.emplace_back([this, i] { user_loop(i); });
    }
    while (worker_threads_.size() < workers) {
        const size_t i = worker_threads_.size();
        worker_threads_.emplace_back([this, i] { worker_loop(i); });
    }
    max_active_users_ = std::max(max_active_users_, users);
}

// One monitor_stats tick (docs/mlperf-benchmark.md, "Autoscaler"): the interval's counters to the autoscaler, its
// decision applied. True on "stop".
bool Simulation::autoscale_tick(double t_s, std::ostream* progress) {
    CacheStats s = cache_.stats();
    MonitorCounters m;
    m.t_s = t_s;
    m.tokens = metrics_.tokens();
    m.completed = metrics_.completed();
    m.issued = stop_counts_.requests_issued.load();
    m.read_bytes = s.total_read_bytes;
    m.write_bytes = s.total_write_bytes;
    m.storage_read_lat = &s.read_lat[int(Tier::Storage)];
    m.storage_write_lat = &s.write_lat[int(Tier::Storage)];
    m.queue_depth = queue_.size();
    m.active_users = int64_t(active_users_.load());
    for (size_t i = 0; i < active_users_.load(); ++i)
        m.offered_req_per_s += users_[i].think_time > 0 ? 1.0 / users_[i].think_time : 0;
    const ScaleDecision d = monitor_->tick(m);
    char line[256];
    if (d.action == "stop") {
        std::snprintf(line, sizeof line, "simulate: Peak capacity found at %.2f tok/s. Stopping test.\n",
                      monitor_->scaler().peak_throughput());
        if (progress) *progress << line << std::flush;
        return true;
    }
    if ((d.action == "scale_up" || d.action == "scale_down") && size_t(d.users) != active_users_.load()) {
        apply_users(d.users);
        std::snprintf(line, sizeof line, "simulate: autoscaler %s -> %lld users (saturation: %.2f)\n", d.action.c_str(),
                      static_cast<long long>(active_users_.load()),
                      monitor_->intervals_json().back()["saturation_level"].get<double>());
        if (progress) *progress << line << std::flush;
    }
    return false;
}

// One cache read of an entry of `bytes` bytes (0: its size is not known here, MultiTierCache::access): its latency
// added to `latency`, a successful hit counted in rec.reads/bytes_read (the bytes read), a hit whose read failed in
// rec.failed_ops.
AccessResult Simulation::read_counted(const std::string& key, CachePhase phase, CacheType type, uint64_t bytes,
                                      RequestRecord& rec, double& latency) {
    AccessResult a = cache_.access(key, phase, type, bytes);
    latency += a.latency_s;
    if (a.cut) rec.cut = true;
    if (a.hit && a.ok) {
        ++rec.reads;
        rec.bytes_read += a.bytes;
    } else if (a.hit) {
        ++rec.failed_ops;
    }
    return a;
}

// One cache write of `tokens` tokens under `key`, counted in `rec` (latency to storage_s; a cut, a failure, or a
// new entry's write and bytes).
AllocResult Simulation::write_counted(const std::string& key, int64_t tokens, RequestRecord& rec) {
    AllocResult w = cache_.allocate(key, tokens, CachePhase::Prefill);
    rec.storage_s += w.latency_s;
    if (w.cut) {
        rec.cut = true;
    } else if (!w.ok) {
        ++rec.failed_ops;
    } else if (!w.existed) {
        ++rec.writes;
        rec.bytes_written += cache_.entry_bytes(tokens);
    }
    return w;
}

// After the stop a request in flight gives up before its next cache op (counted, not completed), and the op it is
// in stops at its next transfer (cache_.cut_ops()), so the drain lasts about one transfer. True: give up now.
bool Simulation::cut_by_stop(const RequestRecord& rec) {
    if (!stop_.is_set() && !rec.cut) return false;
    ++stop_counts_.cut_in_storage;
    return true;
}

// The life of a request (docs/mlperf-benchmark.md, "The life of a request"), one call per step; a stop between
// steps (or an op it cut) ends it uncounted as completed.
void Simulation::process_request(InferenceRequest& req, PyRandom& rng) {
    RequestState s{req, rng};
    s.rec.request = &req;
    s.phase = req.phase == RequestPhase::Decode ? CachePhase::Decode : CachePhase::Prefill;
    read_prefix(s);
    if (cut_by_stop(s.rec) || !read_previous_turns(s)) return;
    if (cut_by_stop(s.rec)) return;
    write_prefill(s);
    if (cut_by_stop(s.rec)) return;
    read_rag_chunks(s);
    if (cut_by_stop(s.rec) || !read_for_decode(s)) return;
    if (s.rec.cut) {  // an op cut by the stop: the request did not complete
        ++stop_counts_.cut_in_storage;
        return;
    }
    if (!generate(s)) return;
    record(s);
}

// Step 1, prefix: the system prompt's entry, read; kvio writes it on a miss so later requests hit (the benchmark
// never writes it: docs/mlperf-benchmark.md, "Upstream bugs kvio fixes or keeps").
void Simulation::read_prefix(RequestState& s) {
    if (!prefix_) return;
    auto sp = prefix_->detect(s.rng);
    if (!sp) return;
    AccessResult a =
        read_counted(sp->key, s.phase, CacheType::System, cache_.entry_bytes(sp->tokens), s.rec, s.rec.storage_s);
    if (!a.hit && !c_.decode_only) write_counted(sp->key, sp->tokens, s.rec);  // decode-only writes nothing
    s.req.context_tokens = std::max<int64_t>(1, s.req.context_tokens - sp->tokens);
    s.cache_type = CacheType::System;  // reused for the decode reads, as in the benchmark
}

// Step 2, multi-turn: every earlier turn of the conversation is read (the benchmark's full-context reload). False
// when the stop cut the request between reads.
bool Simulation::read_previous_turns(RequestState& s) {
    const InferenceRequest& req = s.req;
    if (c_.decode_only || req.conversation_id.empty() || req.turn_number <= 1) return true;
    for (const Turn& t : conversations_.previous_turns(req.conversation_id, req.cache_key)) {
        if (cut_by_stop(s.rec)) return false;
        const TurnRead how = turn_read(t);
        if (how == TurnRead::Skip) {  // handed over before its prefill: what the other client writes is unknown
            ++unsized_turn_reads_skipped_;
            continue;
        }
        // This client's own turn is read from its own tiers only: its prefill, maybe running on another worker
        // right now, may write it with fewer tokens than this copy says (docs/simulate.md, "Remote tier").
        const uint64_t bytes = how == TurnRead::Shared ? cache_.entry_bytes(t.context_tokens) : 0;
        AccessResult a =
            read_counted(t.cache_key, CachePhase::Decode, CacheType::MultiTurn, bytes, s.rec, s.rec.storage_s);
        if (a.cut) continue;  // a read the stop cut is neither a hit nor a miss (the cache counts it apart)
        ++(a.hit ? s.rec.multi_turn_hits : s.rec.multi_turn_misses);
        metrics_.count_multi_turn(a.hit);  // top-level multi_turn_cache_*: every read, as cache_stats counts them
    }
    return true;
}

// Step 3, prefill: the request's own entry is written (not for decode-only runs or decode requests).
void Simulation::write_prefill(RequestState& s) {
    if (!c_.decode_only && s.req.phase != RequestPhase::Decode && !s.req.conversation_id.empty())
        conversations_.set_turn_tokens(s.req.conversation_id, s.req.cache_key, s.req.context_tokens);
    if (!c_.decode_only && s.req.phase != RequestPhase::Decode)
        s.rec.prefill_s = write_counted(s.req.cache_key, s.req.context_tokens, s.rec).latency_s;
}

// Step 4, RAG: with probability rag.request_probability, the top-k chunks of a random document are read.
void Simulation::read_rag_chunks(RequestState& s) {
    if (!rag_ || s.rng.random() >= c_.yaml.rag_request_probability) return;
    RagDocument doc;
    std::vector<size_t> chunks;
    if (rag_->pick(s.rng, doc, chunks))
        for (size_t i : chunks)
            read_counted(doc.chunks[i].key, CachePhase::Decode, CacheType::User,
                         cache_.entry_bytes(doc.chunks[i].tokens), s.rec, s.rec.storage_s);
}

// Step 5, decode: a probe read; on a hit ceil(gen / decode.batch_size) more full-entry reads, on a miss a re-write.
// False when the stop cut the request between reads.
bool Simulation::read_for_decode(RequestState& s) {
    const InferenceRequest& req = s.req;
    RequestRecord& rec = s.rec;
    if (c_.prefill_only || req.phase == RequestPhase::Prefill) return true;
    std::string key = req.cache_key;
    int64_t tokens = req.context_tokens;
    if (c_.decode_only && !prepop_keys_.empty()) {
        key = prepop_keys_[s.rng.choice_index(prepop_keys_.size())];
        tokens = 2048;
    }
    double decode = 0;
    uint32_t reads_before = rec.reads;
    const uint64_t bytes = cache_.entry_bytes(tokens);
    if (!read_counted(key, CachePhase::Decode, s.cache_type, bytes, rec, decode).hit) {
        if (!c_.decode_only) write_counted(key, tokens, rec);  // evicted (or never written): re-write, no batched reads
    } else {
        int64_t batch = std::max(1, c_.yaml.decode_batch_size);
        int64_t n = std::max<int64_t>(1, (req.generate_tokens + batch - 1) / batch);
        for (int64_t i = 0; i < n; ++i) {
            if (cut_by_stop(rec)) return false;
            read_counted(key, CachePhase::Decode, s.cache_type, bytes, rec, decode);
        }
    }
    rec.decode_reads = rec.reads - reads_before;
    rec.decode_s = decode;
    rec.storage_s += decode;
    return true;
}

// Step 6, generation: the simulated token time holds the worker. False when a stop during it abandoned the request
// (counted).
bool Simulation::generate(RequestState& s) {
    s.rec.generation_s = double(s.req.generate_tokens) * gen_s_per_token_;
    if (s.rec.generation_s > 0 && !stop_.sleep_for(s.rec.generation_s)) {
        ++stop_counts_.cut_in_generation;
        return false;
    }
    return true;
}

// Step 7, record, at most --max-requests of them: one finishing after the N-th is counted apart, not completed.
void Simulation::record(RequestState& s) {
    if (c_.max_requests > 0 && recorded_.fetch_add(1) >= uint64_t(c_.max_requests)) {
        ++stop_counts_.beyond_max_requests;
        max_reached_ = true;
        return;
    }
    s.rec.e2e_s = double(now_ns() - s.req.submit_ns) / 1e9;
    metrics_.record(s.rec);
    qos_.record(s.req.qos, s.rec.e2e_s);
    if (c_.max_requests > 0 && metrics_.completed() >= uint64_t(c_.max_requests)) max_reached_ = true;
}

void Simulation::sample_bandwidth(double t_s, const CacheStats& s) {
    double dt = t_s - last_t_;
    if (dt <= 0) return;
    nlohmann::ordered_json row;
    row["t_s"] = t_s;
    for (int t = 0; t < kTierSlots; ++t) {
        if (t == int(Tier::Remote) && !s.tier_present[t]) continue;  // kvio's remote tier: only when present
        std::string n = tier_name(Tier(t));
        row[n + "_read_gibps"] = double(s.tier_bytes_read[t] - last_read_[t]) / dt / double(1ull << 30);
        row[n + "_write_gibps"] = double(s.tier_bytes_written[t] - last_written_[t]) / dt / double(1ull << 30);
        last_read_[t] = s.tier_bytes_read[t];
        last_written_[t] = s.tier_bytes_written[t];
    }
    bandwidth_.push_back(row);
    last_t_ = t_s;
}

// Before the clock starts: --precondition's fill (docs/mlperf-benchmark.md, "Trace replay and special modes"), then
// --decode-only's prepopulation (docs/mlperf-benchmark.md, "Trace replay and special modes").
void Simulation::warm_up(std::ostream* progress) {
    if (c_.precondition) {
        const uint64_t limit = cache_.stats().limit_bytes[int(Tier::Storage)];
        uint64_t target = c_.precondition_size_gb > 0 ? uint64_t(c_.precondition_size_gb * double(1ull << 30))
                          : limit == UINT64_MAX       ? 0
                                                      : 2 * limit;
        if (target == 0) {
            if (progress)
                *progress << "simulate: warning: --precondition skipped: the storage tier has no limit (give "
                             "--precondition-size-gb or --storage-capacity-gb)\n";
            warmup_json_["precondition"] = {{"skipped", "storage tier unlimited"}};
        } else {
            const WarmupResult w =
                precondition(cache_, target, unsigned(c_.precondition_threads), progress, stop_signalled);
            if (console_) print_warmup_section(*console_, "PRECONDITIONING PHASE", w);
            warmup_json_["precondition"] = w.to_json();
        }
    }
    if (c_.decode_only && !stop_signalled()) {
        WarmupResult w = prepopulate(cache_, uint64_t(c_.num_users) * 10, 0, progress, stop_signalled);
        if (console_) print_warmup_section(*console_, "PRE-POPULATING CACHE FOR DECODE-ONLY MODE", w);
        warmup_json_["prepopulation"] = w.to_json();
        prepop_keys_ = std::move(w.keys);
    }
}

int Simulation::run(nlohmann::ordered_json& out, std::ostream* progress, const std::function<void()>& before_start) {
    warm_up(progress);  // run_simulation's SignalGuard is already installed: a signal here stops the warm-up
    std::atomic<bool> rag_stop{false};
    if (before_start) before_start();
    const uint64_t t0 = now_ns();
    auto elapsed = [&] { return double(now_ns() - t0) / 1e9; };

    std::thread rag_thread;
    if (rag_)
        rag_thread = std::thread([&] {
            PyRandom rng{int64_t(rag_seed_)};
            rag_->ingest(cache_, rng, c_.rag_num_docs, rag_stop);
        });
    for (size_t i = 0; i < num_workers_; ++i) worker_threads_.emplace_back([this, i] { worker_loop(i); });
    if (trace_)
        user_threads_.emplace_back([this] { trace_loop(); });
    else
        for (size_t i = 0; i < active_users_.load(); ++i) user_threads_.emplace_back([this, i] { user_loop(i); });

    const std::string reason = wait_for_stop(elapsed, progress);
    const double stop_at = elapsed();
    stop_.set();
    {
        std::lock_guard lk(park_mu_);  // parked threads see the stop
    }
    park_cv_.notify_all();
    cache_.cut_ops();  // ops in flight stop at their next transfer; waits for room, the semaphore or a key end
    if (progress && in_flight_.load())
        *progress << "simulate: stopping (" << reason << "): " << in_flight_.load()
                  << " requests in flight give up at their next cache op\n"
                  << std::flush;
    rag_stop = true;
    wait_for_drain(progress);
    for (auto& th : user_threads_) th.join();
    stop_counts_.dropped_queued_at_stop = queue_.close();  // workers finish what they hold, then see the closed queue
    for (auto& th : worker_threads_) th.join();
    if (rag_thread.joinable()) rag_thread.join();
    cache_.finish_remote_writes();  // write-back: the queued writes reach the server, or are counted lost
    const int sig = stop_signo();   // also a signal that came during the drain: it decides the exit status
    // elapsed_time includes the drain: every request counted completed within it (the benchmark stops its clock
    // before the join window during which it keeps counting completions).
    const double elapsed_s = elapsed();
    CacheStats final_stats = cache_.stats();
    sample_bandwidth(elapsed_s, final_stats);

    out = results_json(elapsed_s);
    out["kvio"] = kvio_json(final_stats, reason, sig, stop_at, elapsed_s);
    if (sig == SIGINT) return 130;
    if (sig == SIGTERM) return 143;
    if (sig == SIGHUP) return 129;
    return 0;
}

// After the stop: waits for the requests in flight to give up or complete (about one transfer each; as long as a
// stalled device holds that transfer), saying every 5 s how many are left and what each tier moved since the stop
// (drain_line: a drain that is memcpy into the CPU tier says so, not a stalled device), and once, at a second stop
// signal, why it cannot end sooner: block I/O in flight cannot be cancelled, and the results need the requests'
// outcomes.
void Simulation::wait_for_drain(std::ostream* progress) {
    const uint64_t t0 = now_ns();
    const CacheStats at_stop = progress && in_flight_.load() ? cache_.stats() : CacheStats{};
    double next = 5;
    bool told = false;
    while (in_flight_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const double waited = double(now_ns() - t0) / 1e9;
        const StopSignal* st = g_stop.load();
        const bool insisted = st && st->insisted();
        if (!progress || (waited < next && (told || !insisted))) continue;
        // read once: the count said is the one tested, never "0 requests in flight" (drained meanwhile)
        const uint64_t left = in_flight_.load();
        if (!left) break;
        *progress << drain_line(left, waited, at_stop, cache_.stats());
        if (insisted && !told)
            *progress << "; the transfers in flight cannot be cancelled: the results are written when they end, "
                         "SIGKILL leaves none";
        *progress << "\n" << std::flush;
        told = told || insisted;
        if (waited >= next) next += 5;
    }
}

// Main thread: waits for the duration, --max-requests, a drained replay, a signal or the autoscaler's stop;
// samples bandwidth each second and prints progress. Returns the stop reason (kvio.stop.reason).
std::string Simulation::wait_for_stop(const std::function<double()>& elapsed, std::ostream* progress) {
    std::string reason = "duration";
    double next_sample = 1.0, next_progress = c_.progress_interval_s > 0 ? c_.progress_interval_s : 1e300;
    double next_tick = monitor_ ? c_.autoscaler_interval_s : 1e300;
    while (true) {
        // A signal first: when this thread was held up (a stats call under load) past the duration while a signal
        // came, the stop is the signal's, not the clock's.
        const int own = stop_signo();
        if (const int other = poll_stop_ ? poll_stop_(own) : 0; other && !own) {
            reason = std::string("signal ") + strsignal(other) + " to another client";
            break;
        }
        if (own) {
            reason = std::string("signal ") + strsignal(own);
            break;
        }
        double t = elapsed();
        if (t >= double(c_.duration)) break;
        if (max_reached_) {
            reason = "max_requests";
            break;
        }
        if (trace_done_ &&
            settled_.load() >=
                stop_counts_.requests_issued.load()) {  // finite replay drained (the benchmark drops its queue)
            reason = "replay_cycles";
            break;
        }
        if (t >= next_tick) {
            if (autoscale_tick(t, progress)) {
                reason = "autoscaler: peak capacity found";
                break;
            }
            next_tick += c_.autoscaler_interval_s;
        }
        if (t >= next_sample || t >= next_progress) {
            CacheStats s = cache_.stats();
            if (t >= next_sample) {
                sample_bandwidth(t, s);
                next_sample += 1.0;
            }
            if (t >= next_progress && progress) {
                print_progress(t, *progress);
                next_progress += c_.progress_interval_s;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return reason;
}

// One progress line at `t` seconds. Storage bandwidth in MB/s (10^6 B/s): a slow or throttled device's 1 MB/s would
// read 0.00 in the results' GiB/s.
void Simulation::print_progress(double t, std::ostream& out) {
    auto bandwidth_mbps = [&](const char* key) {
        return bandwidth_.empty() ? 0.0 : bandwidth_.back()[key].get<double>() * double(1ull << 30) / 1e6;
    };
    char line[256];
    std::snprintf(line, sizeof line,
                  "simulate: %.0f/%lld s, %llu requests done, %.0f tokens/s, queue %zu, storage R %.1f W "
                  "%.1f MB/s\n",
                  t, static_cast<long long>(c_.duration), static_cast<unsigned long long>(metrics_.completed()),
                  double(metrics_.tokens()) / t, queue_.size(), bandwidth_mbps("storage_read_gibps"),
                  bandwidth_mbps("storage_write_gibps"));
    out << line << std::flush;
}

// The benchmark's part of the results (top level and summary) over `elapsed_s` seconds.
nlohmann::ordered_json Simulation::results_json(double elapsed_s) {
    nlohmann::ordered_json out = metrics_.top_level_json(c_.seed);
    nlohmann::ordered_json summary = metrics_.summary_head_json(elapsed_s);
    summary["cache_stats"] = cache_.cache_stats_json(elapsed_s, c_.performance_profile);
    summary["qos_metrics"] = qos_.to_json();
    summary["prefix_cache_stats"] = prefix_ ? prefix_->stats_json() : nlohmann::ordered_json::object();
    summary["autoscaling_stats"] = monitor_ ? monitor_->stats_json() : nlohmann::ordered_json::array();
    summary["autoscaling_summary"] = monitor_ ? monitor_->summary_json(int64_t(active_users_.load())) : nullptr;
    if (monitor_) out["throughput_timeline"] = monitor_->throughput_timeline();
    summary["multi_turn_stats"] = metrics_.multi_turn_json();
    out["summary"] = summary;
    return out;
}

// kvio's part of the results: the stop, workers, bandwidth timeline, storage host/device split and per-op figures,
// conversations, RAG, trace, warm-up, autoscaler and per-request columns.
nlohmann::ordered_json Simulation::kvio_json(const CacheStats& final_stats, const std::string& reason, int sig,
                                             double stop_at, double elapsed_s) {
    nlohmann::ordered_json k;
    k["stop"] = stop_json(stop_counts_, reason, sig, stop_at, elapsed_s - stop_at);
    k["workers"] = num_workers_;
    k["bandwidth_timeline"] = bandwidth_;
    nlohmann::ordered_json lat;
    lat["storage_read_device_ms"] = latency_summary_ms(final_stats.storage_read_device);
    lat["storage_read_host_ms"] = latency_summary_ms(final_stats.storage_read_host);
    lat["storage_write_device_ms"] = latency_summary_ms(final_stats.storage_write_device);
    lat["storage_write_host_ms"] = latency_summary_ms(final_stats.storage_write_host);
    k["storage_host_device_ms"] = lat;
    k["storage_ops"] = storage_ops_json(final_stats.storage_ops, elapsed_s);
    k["conversations"] = {{"started", conversations_.started()},
                          {"dropped_by_cap", conversations_.dropped()},
                          {"in_table", conversations_.size()}};
    if (c_.remote_handoff_probability > 0)
        k["conversations"]["handoff"] = {{"handed_off", handed_off_.load()},
                                         {"polls", handoff_polls_.load()},
                                         {"taken_over", taken_over_.load()},
                                         {"turns_taken_over", turns_taken_over_.load()},
                                         {"turns_handed_unsized", turns_handed_unsized_.load()},
                                         {"unsized_turn_reads_skipped", unsized_turn_reads_skipped_.load()}};
    if (rag_) k["rag"] = rag_->stats_json();
    if (trace_) {
        k["trace"] = trace_->stats_json();
        k["trace"]["drained"] = reason == "replay_cycles";
        k["trace"]["producer_waits_on_full_queue"] = trace_waits_full_queue_;
    }
    if (c_.decode_only) k["prepopulated_entries"] = prepop_keys_.size();
    for (auto it = warmup_json_.begin(); it != warmup_json_.end(); ++it) k[it.key()] = it.value();
    if (monitor_) k["autoscaler"] = autoscaler_json();
    k["requests"] = metrics_.requests_json();
    return k;
}

// kvio.autoscaler: the mode, the users it added and its intervals.
nlohmann::ordered_json Simulation::autoscaler_json() const {
    nlohmann::ordered_json a;
    a["mode"] = c_.autoscaler_mode;
    a["interval_s"] = c_.autoscaler_interval_s;
    a["max_users"] = monitor_->scaler().max_users();
    a["max_users_run"] = max_active_users_;
    a["workers_follow"] = "min(users, 500): a scale step starts or parks user threads and workers";
    const size_t initial = size_t(std::min<int64_t>(c_.num_users, int64_t(users_.size())));
    a["added_users"] = users_to_json(std::vector<UserProfile>(
        users_.begin() + long(initial), users_.begin() + long(std::max(initial, max_active_users_))));
    a["intervals"] = monitor_->intervals_json();
    return a;
}

nlohmann::ordered_json fixes_applied() {
    return nlohmann::ordered_json::array({
        "prefix entries are written on their first miss, so later requests hit (#283)",
        "conversation ids use a per-user counter, not wall-clock ms (#822)",
        "each user and worker thread draws from its own PyRandom derived from the seed (the benchmark shares one "
        "generator between threads, #822)",
        "queue ties break by request sequence, not enqueue wall time",
        "elapsed_time includes the drain of in-flight requests, so every completed request lies inside it",
        "requests dropped at the stop are counted (kvio.stop)",
        "a conversation dropped by the 1000-conversation cap restarts instead of killing its user thread",
    });
}

}  // namespace

SimResult run_simulation(const SimConfig& config, std::ostream* console, std::ostream* progress,
                         const SimHooks& hooks) {
    std::vector<std::string> warnings;
    std::vector<std::string> errors = validate_config(config, warnings);
    if (!errors.empty()) {
        std::string msg = "simulate: " + errors.front();
        for (size_t i = 1; i < errors.size(); ++i) msg += "; " + errors[i];
        throw Error(msg);
    }
    SimConfig c = config;
    workload::ModelConfig model = resolve_model(c);
    const uint64_t bpt = bytes_per_token(model);
    std::string seed_source = c.seed ? "--seed" : "random (no --seed)";
    uint64_t seed_used = c.seed ? uint64_t(*c.seed) : uint64_t(std::random_device{}());
    PyRandom rng{int64_t(seed_used)};
    // With --enable-autoscaling the table continues to the autoscaler's ceiling (the same draws a larger
    // --num-users would give); the first --num-users are the run's users, the rest are added by scale steps.
    const int64_t pool = run_user_ceiling(c);
    std::vector<UserProfile> pool_users = generate_users(rng, pool, c.yaml);
    std::vector<UserProfile> users(pool_users.begin(), pool_users.begin() + long(c.num_users));
    check_output_writable("--output", c.output.empty() ? default_results_name() : c.output);
    if (!c.xlsx_output.empty()) check_output_writable("--xlsx-output", c.xlsx_output);
    // --validation-trace is read before the run: a bad trace is refused before any I/O.
    std::optional<ValidationTrace> validation;
    if (!c.validation_trace.empty()) validation = load_validation_trace(c.validation_trace);
    // --dataset-path / --use-burst-trace: loaded and checked before anything runs; its own random stream (seed + 2).
    std::unique_ptr<TraceSource> trace = make_trace_source(c, PyRandom(int64_t(seed_used) + 2).getrandbits(32));
    const double trace_rate = trace ? trace->paced_rate() : 0;

    // --enable-latency-tracing: kvio's tracer on the disk of the cache directory (SimHooks::start_tracing),
    // started before the first write; the storage tier writes its kvio.semantic/1 records for validation.
    SignalGuard signals;  // before anything long or anything that makes temporary state (tracer dir, cache dir)
    std::unique_ptr<StorageTracing> tracing;
    if (c.enable_latency_tracing) {
        if (!c.io_trace_log.empty())
            throw Error(
                "simulate: --enable-latency-tracing traces real I/O: it cannot be combined with --io-trace-log");
        if (!hooks.start_tracing) throw Error("simulate: --enable-latency-tracing: this caller has no tracer");
        tracing = hooks.start_tracing(c);
        c.semantic_path = tracing->semantic_path();
        if (console)
            *console
                << "\n### LATENCY TRACING ###\n  Tracer: kvio's BPF tracer on the cache directory's disk, attached "
                   "before the first entry\n  Storage-tier records: "
                << (c.trace_dir.empty()
                        ? "in a temporary directory, removed when the run ends (--trace-dir DIR keeps them)"
                        : c.semantic_path)
                << "\n";
    }
    auto cache_owner = std::make_unique<MultiTierCache>(c, bpt, progress);
    MultiTierCache& cache = *cache_owner;
    if (!cache.capacity_warning().empty()) {
        warnings.push_back(cache.capacity_warning());
        if (progress) *progress << "simulate: warning: " << cache.capacity_warning() << "\n" << std::flush;
    }
    if (console) print_banner(*console, c, model, bpt, users, cache, seed_used);

    SimResult res;
    nlohmann::ordered_json doc;
    {
        Simulation sim(c, model, bpt, std::move(pool_users), seed_used, cache);
        sim.set_trace(std::move(trace));
        sim.set_poll_stop(hooks.poll_stop);
        sim.set_console(console);
        res.exit_code = sim.run(doc, progress, hooks.before_start);
    }
    if (validation)  // results.validation (docs/mlperf-benchmark.md, "Metrics and the results JSON"), after summary
                     // like the benchmark's
        doc["validation"] =
            compare_with_trace(*validation, doc["summary"]["cache_stats"]["cache_hit_rate"].get<double>());
    nlohmann::ordered_json& k = doc["kvio"];
    nlohmann::ordered_json kv;
    kv["format"] = "kvio.simulate/1";
    kv["benchmark"] = "MLPerf Storage KV Cache Benchmark v3.0 (kv_cache_benchmark @ 64165f7), reimplemented";
    kv["seed_used"] = seed_used;
    kv["seed_source"] = seed_source;
    kv["model"] = {{"name", c.model},
                   {"bytes_per_token", bpt},
                   {"generation_ms_per_token", generation_seconds_per_token(c) * 1000}};
    kv["users"] = users_to_json(users);
    double offered = 0;
    for (const auto& u : users) offered += u.think_time > 0 ? 1.0 / u.think_time : 0;
    // A replay's offered load is its trace's (kvio.trace), not the user table's; ShareGPT with --request-rate: that
    // rate.
    kv["offered_load_req_per_s"] =
        !c.dataset_path.empty() || c.use_burst_trace
            ? (trace_rate > 0 ? nlohmann::ordered_json(trace_rate) : nlohmann::ordered_json(nullptr))
            : nlohmann::ordered_json(offered);
    kv["gpu_tier"] = cache.gpu_tier_description();
    kv["storage_tier"] = cache.storage_description();
    kv["cache"] = cache.kvio_json();
    kv["fixes_applied"] = fixes_applied();
    // Failed and corrupted ops are never silent (report.cpp too), each kind with its own first error.
    if (const CacheStats st = cache.stats(); st.failed_writes || st.failed_reads || st.corrupted_reads) {
        auto first = [](const std::string& e) { return e.empty() ? std::string("?") : e; };
        if (st.failed_writes) warnings.push_back(failed_writes_phrase(kv["cache"]) + " (not counted as done)");
        if (st.failed_reads > st.corrupted_reads)
            warnings.push_back(std::to_string(st.failed_reads - st.corrupted_reads) +
                               " reads failed (not counted as done); first error: " + first(st.first_read_error));
        if (st.corrupted_reads)
            warnings.push_back(
                std::to_string(st.corrupted_reads) +
                " reads returned other bytes than were written (--verify-reads); first: " + first(st.first_corruption));
    }
    if (const CacheStats st = cache.stats(); !st.remote_down.empty())
        warnings.push_back("the remote tier was marked down for the rest of the run (" + st.remote_down +
                           "): new entries went to the tiers below it");
    kv["warnings"] = warnings;
    for (auto it = k.begin(); it != k.end(); ++it) kv[it.key()] = it.value();
    kv["config"] = config_to_json(c);
    if (hooks.keep_merge_state) kv["merge_state"] = merge_state_json(cache.stats());
    doc["kvio"] = kv;
    cache_owner.reset();  // closes the storage tier's semantic log before the tracer's validation reads it
    if (tracing) {
        if (console) *console << "\n### COLLECTING TRACE DATA ###\n" << std::flush;
        for (const auto& w : tracing->finish(doc)) {
            doc["kvio"]["warnings"].push_back("--enable-latency-tracing: " + w);
            if (progress) *progress << "simulate: warning: --enable-latency-tracing: " << w << "\n" << std::flush;
        }
    }

    res.output_path = c.output.empty() ? default_results_name() : c.output;
    write_text_file(res.output_path, doc.dump(4) + "\n");  // whole or absent: "PATH: write failed: REASON"
    if (!c.xlsx_output.empty()) {
        const std::string written = export_results_xlsx(doc, c, c.xlsx_output);
        if (progress)
            *progress << "simulate: " << written << " written"
                      << (written == c.xlsx_output ? ""
                          : xlsx_supported()       ? " (the Summary row as CSV: the name does not end in .xlsx)"
                                             : " (the Summary row as CSV: this kvio is built without libxlsxwriter)")
                      << "\n";
    }
    if (console) print_report(*console, doc);
    // Data that came back wrong fails the run (exit 1, after the results are written): a benchmark figure of a
    // drive that corrupts is not a result. A stop's own status (130/143/129) still wins.
    if (const uint64_t bad = doc["kvio"]["cache"].value("corrupted_reads", uint64_t(0)); bad && res.exit_code == 0) {
        res.exit_code = 1;
        if (progress)
            *progress << "simulate: error: " << bad << " reads returned other bytes than were written; first: "
                      << doc["kvio"]["cache"].value("first_corruption", std::string("?")) << "\n"
                      << std::flush;
    }
    res.results = std::move(doc);
    return res;
}

}  // namespace kvio::serving
