// libFuzzer target: the MLPerf KV-cache io-trace-log CSV (kvio replay --io-trace) through replay::read_io_trace
// (zstd input included), then the replay plan built from it (slots layout, every tier).
#include "common/error.h"
#include "replay/io_trace_replay.h"
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        kvio::replay::IoTrace t = kvio::replay::read_io_trace(kvio::fuzz::input_file(data, size));
        kvio::workload::DeviceGeometry d;
        d.lba_bytes = 512;
        d.block_align = 4096;
        kvio::workload::compute_layout(d, 512);
        kvio::replay::IoTracePlan p = kvio::replay::plan_io_trace(t, 7, d, kvio::replay::parse_timing("asis"));
        volatile size_t n = p.ops.size() + p.slots.size();
        for (const auto& op : p.ops) n = n + op.key.size() + op.offset;
    } catch (const kvio::Error&) {}
    return 0;
}
