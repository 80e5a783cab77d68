// A private tracefs instance for the e2e tests that compare kvio's counts with the kernel's own records of the same
// block events (tests/e2e/trace_breakdown_test.cpp, tests/e2e/trace_qd_test.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvio::test {

/// A tracefs instance of its own (no other tracer's settings matter) recording the block events `events`
/// (block_rq_complete, ...), each with the tracefs filter `filter` ("dev == 7340032 || dev == 7340033": kernel dev_t),
/// stamped with CLOCK_MONOTONIC (trace_clock mono, bpf_ktime_get_ns' clock). Disabled and removed at destruction.
struct TracefsInstance {
    TracefsInstance(std::vector<std::string> events, const std::string& filter);
    ~TracefsInstance();
    TracefsInstance(const TracefsInstance&) = delete;
    TracefsInstance& operator=(const TracefsInstance&) = delete;
    /// Stops recording (tracing_on 0): what it holds stays readable.
    void stop();
    /// The recorded lines (comments left out), in time order.
    std::vector<std::string> lines() const;
    /// Events the ring buffer overwrote or dropped (a comparison with its lines is void if any).
    uint64_t overruns() const;
    std::string dir;                  ///< the instance's directory; `dir + "/trace_marker"` takes marks
    std::vector<std::string> events;  ///< block/NAME of each event recorded
};

/// The kernel dev_t (MAJOR << 20 | MINOR) of "MAJ:MIN", as tracefs filters and BPF take it.
uint32_t kernel_dev_of(const std::string& majmin);

}  // namespace kvio::test
