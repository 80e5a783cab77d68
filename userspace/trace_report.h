// The kvio.trace/1 summary: histograms read from the BPF maps, per device and per process set.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "bpf/kvio_trace.h"
#include "common/histogram.h"

namespace kvio::trace {

/// Name (as in the table / docs/formats.md), unit and slot rule of a per-device histogram.
/// `qid` names per-queue NVMe histograms ("nvme_d2c_q3").
std::string dev_hist_name(uint32_t id, uint32_t qid = 0);
/// Same for process-side histograms (enum kvio_proc_hist).
std::string proc_hist_name(uint32_t id);
/// An empty histogram with the slot rule and unit of histogram `id` (dev or proc side).
Histogram make_dev_hist(uint32_t id, uint64_t lba_bucket_bytes);
Histogram make_proc_hist(uint32_t id);

/// Accumulates what the maps hold and renders it.
class TraceReport {
public:
    explicit TraceReport(uint64_t lba_bucket_bytes) : lba_bucket_(lba_bucket_bytes) {}
    /// Adds one BPF histogram value. `kdev` is the kernel dev_t.
    void add_dev_hist(const kvio_hist_key& key, const kvio_hist& h);
    void add_proc_hist(uint32_t id, const kvio_hist& h);
    /// Adds one sample (ns, bytes, commands or byte offset, per the histogram's unit) to device
    /// histogram `id` (enum kvio_dev_hist) of kernel dev_t `kdev`.
    void add_dev_value(uint32_t kdev, uint16_t id, uint64_t value);
    /// Makes sure a device appears even when it saw nothing (a -d filter).
    void touch_device(uint32_t kdev);
    /// Which fds the syscall histograms count (printed in their heading, "process_fds" in the JSON).
    void set_syscall_scope(std::string scope) { syscall_scope_ = std::move(scope); }
    /// Whether a device saw any command.
    bool device_empty(uint32_t kdev) const;

    /// The kvio.trace/1 document (docs/formats.md). `counters` are the summed BPF counters.
    nlohmann::json to_json(double duration_s, const uint64_t (&counters)[KVIO_COUNTERS], bool nvme_present) const;
    /// biolatency-style human summary.
    void print(std::ostream& os, double duration_s, const uint64_t (&counters)[KVIO_COUNTERS], bool nvme_present) const;

private:
    uint64_t lba_bucket_;
    std::map<uint32_t, std::map<std::string, Histogram>> devs_;  // kdev -> name -> hist
    std::map<std::string, Histogram> proc_;
    std::string syscall_scope_ = "all regular files and block devices";
};

}  // namespace kvio::trace
