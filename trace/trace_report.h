// The kvio.trace/1 summary: histograms read from the BPF maps, per device and per process set.
#pragma once
#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

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

/// One submitter group of --per-process / --per-cgroup (map group_stats): block reads or writes of one
/// process (tgid) or cgroup on one device.
struct GroupTotals {
    uint64_t id = 0;   ///< tgid or cgroup v2 id
    std::string name;  ///< comm (process) or cgroup path below /sys/fs/cgroup ("?" when gone)
    uint32_t dev = 0;  ///< kernel dev_t
    uint32_t op = 0;   ///< KVIO_OP_READ or KVIO_OP_WRITE
    uint64_t cmds = 0, bytes = 0;
    Histogram d2c;  ///< ns
};

/// Accumulates what the maps hold and renders it.
class TraceReport {
public:
    explicit TraceReport(uint64_t lba_bucket_bytes) : lba_bucket_(lba_bucket_bytes) {}
    /// Adds one BPF histogram value. `kdev` is the kernel dev_t.
    void add_dev_hist(const kvio_hist_key& key, const kvio_hist& h);
    void add_proc_hist(uint32_t id, const kvio_hist& h);
    /// Adds one sample (ns, bytes, commands or byte offset, per the histogram's unit) to device
    /// histogram `id` (enum kvio_dev_hist) of kernel dev_t `kdev`.
    void add_dev_value(uint32_t kdev, uint16_t id, uint64_t value, uint64_t n = 1);
    /// Makes sure a device appears even when it saw nothing (a -d filter).
    void touch_device(uint32_t kdev);
    /// Issues per queue-depth sample (1: exact), named in the JSON ("qd_sample_every"), the text report and the
    /// Prometheus HELP of kvio_queue_depth.
    void set_qd_sample_every(uint32_t n) { qd_sample_every_ = n ? n : 1; }
    uint32_t qd_sample_every() const { return qd_sample_every_; }
    /// Requests per D2C/Q2D sample (--d2c-sample, 1: every one, exact), named in the JSON ("d2c_sample_every") and
    /// the text report; the queue depth of a sampled request counts as many times too.
    void set_d2c_sample_every(uint32_t n) { d2c_sample_every_ = n ? n : 1; }
    uint32_t d2c_sample_every() const { return d2c_sample_every_; }
    /// What the queue depth's "left the device" side counts ("qd_source" in the JSON): "programs" (completions the
    /// BPF programs saw) or "kernel_finished" (--d2c-sample: the kernel's own per-disk finished counts).
    void set_qd_source(std::string src) { qd_source_ = std::move(src); }
    /// Which fds the syscall histograms count (printed in their heading, "process_fds" in the JSON).
    void set_syscall_scope(std::string scope) { syscall_scope_ = std::move(scope); }
    /// Whether a device saw any command.
    bool device_empty(uint32_t kdev) const;
    /// --per-process / --per-cgroup: how groups are keyed, and one group's map entry (`name`: comm or cgroup path).
    void set_group_by(kvio_group_by by) { group_by_ = by; }
    void add_group(const kvio_group_key& key, const kvio_group_val& val, std::string name);

    /// --breakdown: `n` block layer events of key.kind in key.dir on key.dev (map bt_counts), and whether the
    /// report carries them ("block_events" in the JSON, a table in print, kvio_block_events_total).
    void add_block_events(const kvio_bt_key& key, uint64_t n);
    void set_breakdown(bool on) { breakdown_ = on; }
    bool breakdown() const { return breakdown_; }
    /// kdev -> [kind][dir] event counts (enum kvio_bt_kind, enum kvio_bt_dir).
    using BlockEvents = std::array<std::array<uint64_t, KVIO_BT_DIRS>, KVIO_BT_KINDS>;
    const std::map<uint32_t, BlockEvents>& block_events() const { return block_events_; }
    /// kdev -> histogram name -> histogram, as accumulated.
    const std::map<uint32_t, std::map<std::string, Histogram>>& devices() const { return devs_; }
    /// Syscall-side histograms by name (vfs_read, fsync, ...).
    const std::map<std::string, Histogram>& process() const { return proc_; }
    const std::vector<GroupTotals>& groups() const { return groups_; }
    kvio_group_by group_by() const { return group_by_; }
    /// What was added since `earlier` (a report of the same maps read before): every histogram and group minus its
    /// earlier value. The in-kernel histograms are never cleared (the end-of-run summary and the Prometheus counters
    /// are cumulative); interval output takes these deltas instead.
    TraceReport minus(const TraceReport& earlier) const;

    /// The kvio.trace/1 document (docs/formats.md). `counters` are the summed BPF counters.
    nlohmann::json to_json(double duration_s, const uint64_t (&counters)[KVIO_COUNTERS], bool nvme_present) const;
    /// biolatency-style human summary.
    void print(std::ostream& os, double duration_s, const uint64_t (&counters)[KVIO_COUNTERS], bool nvme_present) const;

private:
    uint64_t lba_bucket_;
    std::map<uint32_t, std::map<std::string, Histogram>> devs_;  // kdev -> name -> hist
    std::map<std::string, Histogram> proc_;
    kvio_group_by group_by_ = KVIO_GROUP_NONE;
    std::vector<GroupTotals> groups_;
    std::string syscall_scope_ = "all regular files and block devices";
    uint32_t qd_sample_every_ = 1;
    uint32_t d2c_sample_every_ = 1;
    std::string qd_source_ = "programs";
    bool breakdown_ = false;
    std::map<uint32_t, BlockEvents> block_events_;
};

/// The JSON and Prometheus name of a block event kind (rq_merges, bio_backmerges, bio_frontmerges, splits, requeues)
/// and of a direction (read, write, other).
const char* block_event_name(uint32_t kind);
const char* block_event_dir_name(uint32_t dir);

/// How the QD histograms were counted: "" when exact, else " [depth sampled at 1 issue in N, each sample counted
/// N times]" (appended to their headings and to kvio_queue_depth's HELP).
std::string qd_sampling_note(uint32_t qd_sample_every);

/// "850.0ns", "12.3us", "4.1ms", "1.2s": a latency for tables.
std::string human_ns(double ns);
/// The disk name of kernel dev_t `kdev` ("?" once it is gone).
std::string disk_name(uint32_t kdev);
/// One line of p50/p90/p99/p99.9 with the bucket bounds each was interpolated in (latency histograms only).
void print_percentiles(std::ostream& os, const Histogram& h);
/// The biotop-style table of --per-process / --per-cgroup groups, largest bytes first.
void print_groups(std::ostream& os, const TraceReport& r, kvio_group_by by);

}  // namespace kvio::trace
