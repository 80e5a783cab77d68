#include "workload/serving/warmup.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <ostream>
#include <thread>

namespace kvio::serving {

namespace {

constexpr int64_t kWarmupTokens =
    2048;  // both warm-ups write 2048-token entries (docs/mlperf-benchmark.md, "Trace replay and special modes")
constexpr uint64_t kStallFailures = 50;  // precondition: "> 50 consecutive failures" → stalled

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

unsigned writer_threads(unsigned asked, unsigned fallback) {
    if (asked > 0) return asked;
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? n : fallback;
}

/// Runs `threads` writers; each asks `next(seq)` for its next key (false: done), allocates it and reports the
/// outcome to `done(ok)` (false: stop all writers). Progress about once a second, and at the end.
WarmupResult run_writers(MultiTierCache& cache, unsigned threads, const char* what,
                         const std::function<bool(uint64_t, std::string&)>& next, const std::function<bool(bool)>& done,
                         const std::function<std::string()>& status, std::ostream* progress,
                         const StopRequested& stop_requested) {
    WarmupResult r;
    r.threads = threads;
    const double t0 = now_s();
    std::mutex mu;
    std::atomic<uint64_t> seq{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            std::string key;
            while (!stop) {
                if (stop_requested && stop_requested()) {
                    std::lock_guard lk(mu);
                    r.stopped = stop = true;
                    break;
                }
                if (!next(seq++, key)) break;
                const bool ok = cache.allocate(key, kWarmupTokens, CachePhase::Prefill).ok;
                std::lock_guard lk(mu);
                if (ok) {
                    r.keys.push_back(key);
                    r.bytes_written += cache.entry_bytes(kWarmupTokens);
                } else {
                    ++r.failed;
                }
                if (!done(ok)) stop = true;
            }
        });
    std::atomic<bool> finished{false};
    std::thread reporter([&] {
        double next_line = now_s() + 1.0;
        while (!finished) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            if (progress && now_s() >= next_line) {
                std::lock_guard lk(mu);
                *progress << "simulate: " << what << ": " << status() << "\n" << std::flush;
                next_line += 1.0;
            }
        }
    });
    for (auto& th : pool) th.join();
    finished = true;
    reporter.join();
    r.seconds = now_s() - t0;
    // Completion order depends on the threads; key order (by sequence number) keeps later random picks seeded.
    auto seq_of = [](const std::string& k) { return std::stoull(k.substr(k.rfind('_') + 1)); };
    std::sort(r.keys.begin(), r.keys.end(), [&](const auto& a, const auto& b) { return seq_of(a) < seq_of(b); });
    if (progress) {
        char line[160];
        std::snprintf(line, sizeof line, " in %.1f s with %u threads%s\n", r.seconds, threads,
                      r.stopped ? " (stopped by a signal)" : "");
        *progress << "simulate: " << what << ": " << status() << line << std::flush;
    }
    cache.reset_stats();
    return r;
}

std::string gib(uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.3f GiB", double(b) / double(1ull << 30));
    return s;
}

}  // namespace

nlohmann::ordered_json WarmupResult::to_json() const {
    nlohmann::ordered_json j;
    j["entries"] = keys.size();
    j["bytes_written"] = bytes_written;
    j["failed"] = failed;
    j["threads"] = threads;
    j["seconds"] = seconds;
    j["stopped"] = stopped;
    if (target_bytes) {
        j["target_bytes"] = target_bytes;
        j["stalled"] = stalled;
    }
    return j;
}

WarmupResult prepopulate(MultiTierCache& cache, uint64_t count, unsigned threads, std::ostream* progress,
                         const StopRequested& stop_requested) {
    uint64_t written = 0, failed = 0;
    auto next = [count](uint64_t i, std::string& key) {
        if (i >= count) return false;
        key = "prepop_" + std::to_string(i);
        return true;
    };
    auto done = [&](bool ok) {
        ++(ok ? written : failed);
        return true;
    };
    auto status = [&] {
        return "prepopulated " + std::to_string(written) + "/" + std::to_string(count) + " entries (" +
               std::to_string(failed) + " failed)";
    };
    return run_writers(cache, writer_threads(threads, 16), "decode-only", next, done, status, progress, stop_requested);
}

WarmupResult precondition(MultiTierCache& cache, uint64_t target_bytes, unsigned threads, std::ostream* progress,
                          const StopRequested& stop_requested) {
    const uint64_t entry = cache.entry_bytes(kWarmupTokens);
    // Entries in flight count toward the target when claimed, so the writers stop at the first entry reaching it.
    std::atomic<uint64_t> claimed{0};
    uint64_t written = 0, consecutive_failures = 0;
    bool stalled = false;
    auto next = [&](uint64_t i, std::string& key) {
        if (entry == 0 || claimed.fetch_add(entry) >= target_bytes) return false;
        key = "precond_" + std::to_string(i);
        return true;
    };
    auto done = [&](bool ok) {
        if (ok) {
            written += entry;
            consecutive_failures = 0;
            return true;
        }
        claimed -= entry;  // a failed entry wrote nothing: its bytes are claimed again
        if (++consecutive_failures > kStallFailures) stalled = true;
        return !stalled;
    };
    auto status = [&] { return "wrote " + gib(written) + " of " + gib(target_bytes) + (stalled ? " (stalled)" : ""); };
    WarmupResult r =
        run_writers(cache, writer_threads(threads, 4), "precondition", next, done, status, progress, stop_requested);
    r.target_bytes = target_bytes;
    r.stalled = stalled;
    if (stalled && progress)
        *progress << "simulate: warning: precondition stalled after " << kStallFailures
                  << " consecutive failed writes\n";
    return r;
}

}  // namespace kvio::serving
