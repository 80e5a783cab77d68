// kvio.stop: what became of the requests around a run's stop, as one struct with its key table (the results JSON and
// the multi-client sum both walk it).
#pragma once
#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::serving {

/// Request counts of one run (all thread-safe; every one is a number of requests).
struct StopCounters {
    std::atomic<uint64_t> requests_issued{0};            ///< put on the queue by users or the trace producer
    std::atomic<uint64_t> dropped_queued_at_stop{0};     ///< still queued when the queue closed
    std::atomic<uint64_t> dropped_popped_after_stop{0};  ///< popped by a worker after the stop (not served)
    std::atomic<uint64_t> cut_in_generation{0};          ///< abandoned during the generation sleep by the stop
    std::atomic<uint64_t> cut_in_storage{0};             ///< abandoned at or in a cache op by the stop
    std::atomic<uint64_t> beyond_max_requests{0};        ///< finished after the --max-requests-th: not recorded
};

/// One StopCounters member and its kvio.stop key. Every one merges as a sum.
struct StopCounterField {
    const char* key;
    std::atomic<uint64_t> StopCounters::*member;
};

/// Every StopCounters member in kvio.stop key order.
std::span<const StopCounterField> stop_counter_fields();

/// kvio.stop: {reason, signal (0 = none), stop_requested_at_s and drain_s (seconds since the clock started, and
/// from the stop to the end of the drain), then the counters by their table keys}.
nlohmann::ordered_json stop_json(const StopCounters& s, const std::string& reason, int signal, double stop_at_s,
                                 double drain_s);

/// sum += one client's kvio.stop counters (keys of the table that `client` holds as non-negative integers;
/// reason, signal and the times are not summed). Keys appear in `sum` in table order.
void add_stop_counts(nlohmann::ordered_json& sum, const nlohmann::ordered_json& client);

}  // namespace kvio::serving
