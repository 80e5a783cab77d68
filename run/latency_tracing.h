// --enable-latency-tracing: kvio's own tracer on the simulation's cache device, instead of the
// benchmark's bpftrace script. A child `kvio trace` writes kvio.events/1 and kvio.trace/1; the storage tier writes
// kvio.semantic/1 (storage_semantic.h) to semantic_path(); at the end the tracer is stopped (SIGINT) and the results
// get the benchmark's `device_latency_tracing` (histograms) and `fio_workload` (a fio job distilled from the
// commands, as `kvio distill` makes it), plus kvio's `validation` (`kvio validate`'s join and scores).
#pragma once
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"
#include "workload/serving/simulate.h"

namespace kvio::run {

struct LatencyTracingOptions {
    std::string cache_dir;  ///< the storage tier's directory (or its nearest existing parent): its disk is traced
    std::string trace_dir;  ///< keep the files here; "" = a temporary directory, removed by finish()
    std::string kvio_exe = "/proc/self/exe";  ///< the kvio binary that runs `trace`
    bool syscalls = false;                    ///< `kvio trace --syscalls`: syscall records in the events too
    std::string storage_io = "direct";        ///< simulate's --storage-io: buffered is validated with a warning
    double ready_timeout_s = 60;              ///< how long to wait for the programs to attach
};

/// What finish() adds to the results.
struct LatencyTracingResult {
    nlohmann::ordered_json device_latency_tracing;  ///< {"tool":"kvio trace","schema":"kvio.trace/1","device",
                                                    ///<  "devices":[...kvio.trace/1 per-device histograms...]}
    std::optional<std::string> fio_workload;  ///< the fio job (.ini text); none when the trace could not be distilled
    nlohmann::ordered_json validation;        ///< kvio validate's report JSON + "summary" line + "files"; when
                                              ///< validate refused the trace: {"summary":null,"not_validated":why}
                                              ///< ("fio_workload_not_distilled":why when distill did)
    std::string summary_line;                 ///< kvio validate's one-line summary ("" when not validated)
    std::vector<std::string> warnings;        ///< why validation or distillation was skipped (too little traced)
};

class LatencyTracing {
public:
    /// Starts `<kvio_exe> trace -q -d <disk of cache_dir> --events DIR/events.jsonl --json DIR/trace.json
    /// --ready-file DIR/ready` (plus --syscalls) in its own process group (stdout/stderr to DIR/trace.log) and waits
    /// until it has attached. Only the device filter is used: a process filter would miss the commands kworkers issue
    /// for the simulation (writeback, plugged requests; see run/run_pipeline.cpp). Throws kvio::Error when the cache
    /// dir is not on a block device or the tracer does not start (its log's last line in the message).
    explicit LatencyTracing(const LatencyTracingOptions& o);
    /// Stops a tracer that finish() did not (SIGINT, then waits); removes a temporary directory.
    ~LatencyTracing();
    LatencyTracing(const LatencyTracing&) = delete;
    LatencyTracing& operator=(const LatencyTracing&) = delete;

    /// Where the storage tier writes its kvio.semantic/1 records (DIR/semantic.jsonl).
    std::string semantic_path() const { return dir_ + "/semantic.jsonl"; }
    /// The traced disk ("loop3").
    const std::string& disk() const { return disk_; }
    const std::string& dir() const { return dir_; }

    /// Stops the tracer (SIGINT; it flushes), then validates semantic_path() against the events, distills the fio
    /// job (written to DIR/fio_workload.ini, target a file in the cache dir: never the raw device) and reads the
    /// histograms. Call after the storage tier closed its semantic log. Throws kvio::Error when the tracer failed.
    LatencyTracingResult finish();

private:
    void stop();
    LatencyTracingOptions o_;
    std::string dir_, disk_;
    bool temp_dir_ = false;
    pid_t child_ = 0;
};

/// The options of a simulation run: cache_dir = --cache-dir (else $TMPDIR or /tmp, where the cache makes its
/// temporary directory), trace_dir = --trace-dir, syscalls = --trace-syscalls, kvio_exe = /proc/self/exe.
LatencyTracingOptions latency_tracing_options(const serving::SimConfig& c);

/// Puts `r` into a results document: "device_latency_tracing", "fio_workload" (the benchmark's keys) and
/// "kvio"."validation".
void add_latency_tracing_results(const LatencyTracingResult& r, nlohmann::ordered_json& results);

/// serving::SimHooks::start_tracing for `kvio simulate`: a LatencyTracing with latency_tracing_options(c), whose
/// finish adds its results (add_latency_tracing_results) and returns its warnings.
std::unique_ptr<serving::StorageTracing> start_latency_tracing(const serving::SimConfig& c);

}  // namespace kvio::run
