// Trace-driven arrivals of `kvio simulate` (docs/mlperf-benchmark.md, "Trace replay and special modes"): the ShareGPT
// dataset (--dataset-path, which takes precedence) or the BurstGPT trace (--use-burst-trace) replayed as a request
// stream in place of the synthetic users, for --replay-cycles passes (0: until the run stops).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"
#include "workload/serving/arrivals/users.h"

namespace kvio::serving {

/// One request of the replay, before the orchestrator numbers and enqueues it.
struct TraceArrival {
    double delay_s =
        0;  ///< wait before issuing it, s (BurstGPT: Δtimestamp / --trace-speedup; ShareGPT: 1 / --request-rate)
    int64_t context_tokens = 1;  ///< ≥ 1
    int64_t generate_tokens = 0;
    QosClass qos = QosClass::Batch;  ///< drawn per request (15 / 35 / 50 %, qos_distribution)
    std::string user_id;             ///< ShareGPT "dataset_user_<seq % num_users>", BurstGPT "trace_user_<row % 1000>"
    std::string request_id;
    std::string cache_key;  ///< ShareGPT "<conv id>_turn_<n>" (with --disable-multi-turn: "<user>_req_<seq:06d>");
                            ///< BurstGPT "<user>_req_<seq:04d>"
    int turn_number = 1;
};

/// A replayed request stream. Not thread-safe: one producer thread calls next().
class TraceSource {
public:
    virtual ~TraceSource() = default;
    /// The next request, to be numbered `seq` (the run's global request counter); nullopt once --replay-cycles
    /// passes are done (never with --replay-cycles 0).
    virtual std::optional<TraceArrival> next(uint64_t seq) = 0;
    /// kvio.trace: source, files, rows / conversations loaded, passes completed, requests produced.
    virtual nlohmann::ordered_json stats_json() const = 0;
    /// The fixed offered rate in requests/s when the source is paced by one (ShareGPT --request-rate), else 0.
    virtual double paced_rate() const { return 0; }
};

/// The source `c` asks for, loaded and checked now (bad files throw kvio::Error naming FILE:LINE and the field);
/// null for synthetic users. `seed` seeds the source's own CPython-random stream (ShareGPT shuffles, QoS draws).
/// ShareGPT token caps are the benchmark's 16384 / 2048 / 4 unless --config sets `sharegpt.*`.
std::unique_ptr<TraceSource> make_trace_source(const SimConfig& c, uint64_t seed);

}  // namespace kvio::serving
