// `kvio simulate` as a library call: the MLPerf Storage KV Cache Benchmark v3.0 serving workload
// (docs/mlperf-benchmark.md, "Users and the request stream" to "Metrics and the results JSON") run natively: open-loop
// users, one priority queue, min(users, 500) workers, the per-request steps (prefix → multi-turn reads → prefill write
// → RAG → decode → generation), the multi-tier cache (cache.h), and the benchmark's results JSON plus a `kvio` object.
#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"

namespace kvio::serving {

/// What a run produced.
struct SimResult {
    nlohmann::ordered_json results;  ///< the document written to --output (docs/mlperf-benchmark.md, "Metrics and the
                                     ///< results JSON" keys + "kvio")
    std::string output_path;         ///< where it was written
    /// 0; 130/143/129 when stopped by SIGINT/SIGTERM/SIGHUP; 1 when --verify-reads found corrupted reads (results
    /// still written in every case)
    int exit_code = 0;
};

/// --enable-latency-tracing: a tracer of the run's own storage I/O, started before the first write and finished after
/// the storage tier closed its semantic log. The serving library only calls it; the tracer, the distiller and
/// validate live on higher floors (run/latency_tracing.h makes one).
class StorageTracing {
public:
    virtual ~StorageTracing() = default;
    /// Where the storage tier writes its kvio.semantic/1 records.
    virtual std::string semantic_path() const = 0;
    /// Stops the tracer and puts what it found into `results`; returns why parts of it were skipped (warnings).
    virtual std::vector<std::string> finish(nlohmann::ordered_json& results) = 0;
};

/// What a caller adds to run_simulation: a multi-client run (multi_client.h, mpi_client.h) its barrier and merge
/// state, `kvio simulate` its tracer.
struct SimHooks {
    /// Called once, right before the run's clock starts (after the cache and any pre-population are ready): a
    /// barrier across clients, so that they all start together. Empty: none.
    std::function<void()> before_start;
    /// Adds kvio.merge_state (the storage and cache counters with their raw per-op latency lists, merge_results.h)
    /// so per-op percentiles of many clients can be merged exactly.
    bool keep_merge_state = false;
    /// Starts the tracer of --enable-latency-tracing (called only with it set). Empty: --enable-latency-tracing is
    /// refused.
    std::function<std::unique_ptr<StorageTracing>(const SimConfig&)> start_tracing;
    /// Called by the main loop about every 10 ms while the clock runs, with this run's own stop signal (0: none):
    /// passes it on to other clients and returns a stop signal one of them got (0: none), which stops this run too
    /// (kvio.stop.reason "signal NAME to another client"; the exit status stays this run's). Empty: none.
    std::function<int(int own_signo)> poll_stop;
};

/// The benchmark's default --output: benchmark_results_<YYYYmmdd_HHMMSS>.json (local time, now).
std::string default_results_name();

/// Runs the simulation to --duration / --max-requests (or a signal: SIGINT/SIGTERM/SIGHUP stop it early, the
/// in-flight requests finish, everything measured so far is written). `console` gets the benchmark's report
/// sections (null: none); `progress` gets one line per c.progress_interval_s (elapsed/total, requests done,
/// tokens/s, queue length, storage GiB/s). Throws kvio::Error for invalid configs (validate_config's messages)
/// and unusable cache directories before any request is issued.
SimResult run_simulation(const SimConfig& c, std::ostream* console, std::ostream* progress, const SimHooks& hooks = {});

}  // namespace kvio::serving
