// libFuzzer target: a BurstGPT CSV (kvio simulate --use-burst-trace) through serving::read_burst_trace_file, and
// the replay of its rows (what the producer does next: one pass of the trace source over them).
#include "common/error.h"
#include "tests/fuzz/harness.h"
#include "workload/serving/arrivals/burstgpt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        kvio::serving::BurstTrace t;
        kvio::serving::read_burst_trace_file(kvio::fuzz::input_file(data, size), t);
        volatile double sink = 0;
        for (const auto& r : t.rows) sink = sink + r.timestamp_s + r.request_tokens + r.response_tokens;
    } catch (const kvio::Error&) {}
    return 0;
}
