#include "trace/prom_exposition.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/devinfo.h"
#include "common/error.h"

namespace kvio::trace {

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string number(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

/// Label values escape backslash, double quote and newline (both formats).
std::string escape(const std::string& v) {
    std::string o;
    for (char c : v) {
        if (c == '\\')
            o += "\\\\";
        else if (c == '"')
            o += "\\\"";
        else if (c == '\n')
            o += "\\n";
        else
            o += c;
    }
    return o;
}

std::string label_text(const Labels& labels) {
    if (labels.empty()) return "";
    std::string o = "{";
    for (size_t i = 0; i < labels.size(); ++i)
        o += (i ? "," : "") + labels[i].first + "=\"" + escape(labels[i].second) + "\"";
    return o + "}";
}

/// Slot range and scale of a histogram unit (see render_metrics' contract).
struct BucketRule {
    unsigned k_lo, k_hi;  ///< log2 slots whose upper bound becomes a bucket
    double divisor;       ///< to the base unit (a division, correctly rounded: 16383 / 1e9 prints as 1.6383e-05)
};
constexpr BucketRule kSeconds{10, 36, 1e9};
constexpr BucketRule kBytes{9, 28, 1.0};

/// Writes metric families; samples of a family are contiguous (both formats require it).
class Exposition {
public:
    explicit Exposition(ExpositionFormat f) : f_(f) {}

    /// Starts a family. `name` is the full sample name of a counter (ending in _total) or the family name of a
    /// histogram or gauge.
    void family(const std::string& name, const char* type, const std::string& help) {
        std::string fam = name;
        if (f_ == ExpositionFormat::OpenMetrics && std::string(type) == "counter")
            fam.resize(fam.size() - 6);  // no _total
        out_ += "# HELP " + fam + " " + help + "\n# TYPE " + fam + " " + type + "\n";
    }
    void sample(const std::string& name, const Labels& labels, double v) {
        out_ += name + label_text(labels) + " " + number(v) + "\n";
    }
    /// A log2 histogram as cumulative buckets (slot k -> le = (2^k - 1) / divisor).
    void log2_histogram(const std::string& name, Labels labels, const Histogram& h, BucketRule rule) {
        uint64_t cum = 0;
        unsigned k = 0;
        for (unsigned hi = rule.k_lo; hi <= rule.k_hi; ++hi) {
            for (; k <= hi && k < h.nslots(); ++k) cum += h.slot(k);
            bucket(name, labels, number(double((uint64_t(1) << hi) - 1) / rule.divisor), cum);
        }
        finish_histogram(name, labels, h, rule.divisor);
    }
    /// The linear queue-depth histogram (slot k holds depth k, the last slot everything above).
    void qd_histogram(const std::string& name, Labels labels, const Histogram& h) {
        uint64_t cum = 0;
        size_t k = 0;
        for (size_t le : {1, 2, 4, 8, 16, 32, 64, 126}) {
            for (; k <= le && k < h.nslots(); ++k) cum += h.slot(k);
            bucket(name, labels, std::to_string(le), cum);
        }
        finish_histogram(name, labels, h, 1.0);
    }
    std::string finish() {
        if (f_ == ExpositionFormat::OpenMetrics) out_ += "# EOF\n";
        return std::move(out_);
    }

private:
    void bucket(const std::string& name, Labels labels, const std::string& le, uint64_t cum) {
        labels.emplace_back("le", le);
        sample(name + "_bucket", labels, double(cum));
    }
    void finish_histogram(const std::string& name, const Labels& labels, const Histogram& h, double divisor) {
        bucket(name, labels, "+Inf", h.count());
        sample(name + "_sum", labels, double(h.sum()) / divisor);
        sample(name + "_count", labels, double(h.count()));
    }
    ExpositionFormat f_;
    std::string out_;
};

std::string device_label(uint32_t kdev) {
    try {
        return block_dev_info(decode_kernel_dev(kdev)).name;
    } catch (const std::exception&) {
        return dev_string(decode_kernel_dev(kdev));  // detached meanwhile: MAJ:MIN
    }
}

/// The histogram `name` of a device, or an empty one of the right kind (so every series exists from the start).
Histogram dev_hist(const std::map<std::string, Histogram>& hists, uint32_t id, uint64_t lba_bucket) {
    auto it = hists.find(dev_hist_name(id));
    return it != hists.end() ? it->second : make_dev_hist(id, lba_bucket);
}

struct DevFamily {
    const char* name;
    const char* help;
    uint16_t read_id, write_id;
    enum { Seconds, Bytes, Depth } kind;
};
constexpr DevFamily kDevFamilies[] = {
    {"kvio_d2c_seconds", "Block device command latency, dispatch (block_rq_issue) to completion (block_rq_complete).",
     KVIO_H_D2C_READ, KVIO_H_D2C_WRITE, DevFamily::Seconds},
    {"kvio_q2d_seconds", "Block request wait in the queue, insert (block_rq_insert) to dispatch (block_rq_issue).",
     KVIO_H_Q2D_READ, KVIO_H_Q2D_WRITE, DevFamily::Seconds},
    {"kvio_command_size_bytes", "Size of each block device command (bssplit).", KVIO_H_BSSPLIT_READ,
     KVIO_H_BSSPLIT_WRITE, DevFamily::Bytes},
    {"kvio_queue_depth", "Commands in flight on the device at each dispatch, this one included.", KVIO_H_QD_READ,
     KVIO_H_QD_WRITE, DevFamily::Depth},
};

struct ProcFamily {
    uint32_t id;
    const char* name;
    const char* help;
};
constexpr ProcFamily kProcFamilies[] = {
    {KVIO_H_VFS_READ, "kvio_vfs_read_seconds", "Latency of read-family syscalls on traced files and devices."},
    {KVIO_H_VFS_WRITE, "kvio_vfs_write_seconds", "Latency of write-family syscalls on traced files and devices."},
    {KVIO_H_FSYNC, "kvio_fsync_seconds", "Latency of fsync and fdatasync."},
    {KVIO_H_WRITE_FSYNC_GAP, "kvio_write_fsync_gap_seconds", "Time from a thread's last write to its fsync."},
    {KVIO_H_FADVISE_READ_GAP, "kvio_fadvise_read_gap_seconds", "Time from a thread's fadvise to its next read."},
    {KVIO_H_AIO_SUBMIT, "kvio_aio_submit_seconds", "Latency of libaio io_submit on traced files and devices."},
    {KVIO_H_AIO_GETEVENTS, "kvio_aio_getevents_seconds",
     "Latency of io_getevents/io_pgetevents on contexts that submitted to traced storage."},
};

struct CounterMetric {
    kvio_counter id;
    const char* name;
    const char* help;
};
constexpr CounterMetric kCounters[] = {
    {KVIO_CNT_RB_DROPS, "kvio_dropped_events_total",
     "Events lost because the ring buffer was full (histograms are complete)."},
    {KVIO_CNT_LOST_COMPLETE, "kvio_lost_completions_total",
     "Issued commands whose completion no BPF program saw (no D2C)."},
    {KVIO_CNT_UNMATCHED_COMPLETE, "kvio_unmatched_completions_total",
     "Completions without a seen issue (in flight before the trace)."},
    {KVIO_CNT_NEGATIVE_DELTA, "kvio_negative_deltas_total", "Latencies that came out negative and were discarded."},
    {KVIO_CNT_NO_OWNER, "kvio_unattributed_commands_total",
     "Requests with an unknown submitter under a task filter (not counted)."},
    {KVIO_CNT_PARTIAL_COMPLETE, "kvio_partial_completions_total", "block_rq_complete calls for part of a request."},
    {KVIO_CNT_MAP_FULL, "kvio_map_full_total", "In-flight map updates that failed."},
    {KVIO_CNT_STALE, "kvio_stale_entries_total", "In-flight entries of an earlier life of a request, replaced."},
    {KVIO_CNT_RESCUED, "kvio_rescued_by_backup_total", "Issues or completions handled by the backup programs."},
    {KVIO_CNT_RQ_SPILLS, "kvio_rq_table_spills_total",
     "Requests kept in the fallback hash: every slot they may use was in flight."},
    {KVIO_CNT_OWNER_SPILLS, "kvio_owner_table_spills_total",
     "Bio owners kept in the fallback hash: every slot they may use was taken."},
    {KVIO_CNT_EVENTS, "kvio_events_total", "Event records submitted to the ring buffer."},
    {KVIO_CNT_COMPLETE_RUNS, "kvio_completion_runs_total",
     "Completion program runs for the end of a request of a traced device."},
};

}  // namespace

ExpositionFormat negotiate_format(const std::string& accept) {
    return accept.find("application/openmetrics-text") != std::string::npos ? ExpositionFormat::OpenMetrics
                                                                            : ExpositionFormat::Text;
}

const char* content_type(ExpositionFormat f) {
    return f == ExpositionFormat::OpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                              : "text/plain; version=0.0.4; charset=utf-8";
}

std::string render_metrics(const TraceSnapshot& s, ExpositionFormat f) {
    Exposition e(f);
    const auto& devs = s.report.devices();
    const uint64_t lba = 1;  // LBA histograms are not exported: their width does not matter here
    std::vector<std::pair<uint32_t, std::string>> names;
    for (const auto& [kdev, hists] : devs) names.emplace_back(kdev, device_label(kdev));

    auto totals = [&](const char* name, const char* help, bool bytes) {
        e.family(name, "counter", help);
        for (const auto& [kdev, dev] : names) {
            const auto& hists = devs.at(kdev);
            auto value = [&](uint16_t id) {
                Histogram h = dev_hist(hists, id, lba);
                return bytes ? h.sum() : h.count();
            };
            const uint64_t flush = value(KVIO_H_FLUSH_CMDS), discard = value(KVIO_H_DISCARD_CMDS);
            const uint64_t other = value(KVIO_H_OTHER_CMDS);  // flushes and discards included
            for (auto [op, v] : {std::pair<const char*, uint64_t>{"read", value(KVIO_H_BSSPLIT_READ)},
                                 {"write", value(KVIO_H_BSSPLIT_WRITE)},
                                 {"flush", flush},
                                 {"discard", discard},
                                 {"other", other - std::min(other, flush + discard)}})
                e.sample(name, {{"device", dev}, {"op", op}}, double(v));
        }
    };
    totals("kvio_device_commands_total",
           "Block device commands completed (op discard: discards and secure erases; other: the rest, write zeroes and "
           "driver commands).",
           false);
    totals("kvio_device_bytes_total", "Bytes moved by completed block device commands.", true);
    e.family("kvio_device_failed_commands_total", "counter",
             "Block device commands that completed with an error (blk_status_t), of kvio_device_commands_total "
             "(op other: flushes, discards and the rest).");
    for (const auto& [kdev, dev] : names)
        for (auto [op, id] : {std::pair<const char*, uint32_t>{"read", KVIO_H_FAILED_READ},
                              {"write", KVIO_H_FAILED_WRITE},
                              {"other", KVIO_H_FAILED_OTHER}})
            e.sample("kvio_device_failed_commands_total", {{"device", dev}, {"op", op}},
                     double(dev_hist(devs.at(kdev), id, lba).count()));

    if (s.report.breakdown()) {
        e.family("kvio_block_events_total", "counter",
                 "Block layer events per device and direction (--breakdown): rq_merges (block_rq_merge), "
                 "bio_backmerges, bio_frontmerges, splits (block_split), requeues (block_rq_requeue).");
        for (const auto& [kdev, counts] : s.report.block_events())
            for (uint32_t k = 0; k < KVIO_BT_KINDS; ++k)
                for (uint32_t d = 0; d < KVIO_BT_DIRS; ++d)
                    e.sample("kvio_block_events_total",
                             {{"device", device_label(kdev)},
                              {"op", block_event_dir_name(d)},
                              {"event", block_event_name(k)}},
                             double(counts[k][d]));
    }

    for (const auto& fam : kDevFamilies) {
        e.family(fam.name, "histogram",
                 fam.kind == DevFamily::Depth ? fam.help + qd_sampling_note(s.report.qd_sample_every()) : fam.help);
        for (const auto& [kdev, dev] : names)
            for (auto [op, id] : {std::pair{"read", fam.read_id}, {"write", fam.write_id}}) {
                Histogram h = dev_hist(devs.at(kdev), id, lba);
                Labels l{{"device", dev}, {"op", op}};
                if (fam.kind == DevFamily::Depth)
                    e.qd_histogram(fam.name, l, h);
                else
                    e.log2_histogram(fam.name, l, h, fam.kind == DevFamily::Seconds ? kSeconds : kBytes);
            }
    }
    if (s.nvme_present) {
        e.family("kvio_nvme_d2c_seconds", "histogram", "NVMe command latency, nvme_setup_cmd to nvme_complete_rq.");
        for (const auto& [kdev, dev] : names)
            for (auto [op, id] : {std::pair{"read", KVIO_H_NVME_D2C_READ}, {"write", KVIO_H_NVME_D2C_WRITE}})
                e.log2_histogram("kvio_nvme_d2c_seconds", {{"device", dev}, {"op", op}},
                                 dev_hist(devs.at(kdev), id, lba), kSeconds);
        e.family("kvio_nvme_queue_d2c_seconds", "histogram",
                 "NVMe command latency per submission queue, both directions.");
        const std::string prefix = dev_hist_name(KVIO_H_NVME_D2C_QUEUE, 0);
        const std::string qprefix = prefix.substr(0, prefix.size() - 1);  // "nvme_d2c_q"
        for (const auto& [kdev, dev] : names)
            for (const auto& [hname, h] : devs.at(kdev))
                if (hname.rfind(qprefix, 0) == 0 && hname.size() > qprefix.size())
                    e.log2_histogram("kvio_nvme_queue_d2c_seconds",
                                     {{"device", dev}, {"queue", hname.substr(qprefix.size())}}, h, kSeconds);
    }
    for (const auto& fam : kProcFamilies) {
        e.family(fam.name, "histogram", fam.help);
        auto it = s.report.process().find(proc_hist_name(fam.id));
        e.log2_histogram(fam.name, {}, it != s.report.process().end() ? it->second : make_proc_hist(fam.id), kSeconds);
    }
    for (const auto& c : kCounters) {
        e.family(c.name, "counter", c.help);
        e.sample(c.name, {}, double(s.counters[c.id]));
    }
    e.family("kvio_bpf_recursion_misses_total", "counter",
             "Program runs the kernel skipped because the program was already running on that CPU.");
    e.sample("kvio_bpf_recursion_misses_total", {}, double(s.recursion_misses));
    if (s.stats_on) {
        e.family("kvio_bpf_program_runs_total", "counter",
                 "Runs of each BPF program (kernel accounting, BPF_ENABLE_STATS; --stats).");
        for (const auto& p : s.progs) e.sample("kvio_bpf_program_runs_total", {{"program", p.name}}, double(p.run_cnt));
        e.family("kvio_bpf_program_run_seconds_total", "counter",
                 "Time spent in each BPF program (kernel accounting; --stats).");
        for (const auto& p : s.progs)
            e.sample("kvio_bpf_program_run_seconds_total", {{"program", p.name}}, double(p.run_time_ns) / 1e9);
    }
    e.family("kvio_trace_start_time_seconds", "gauge", "Unix time the trace attached its programs.");
    e.sample("kvio_trace_start_time_seconds", {}, s.start_unix_s);
    return e.finish();
}

void write_file_atomically(const std::string& path, const std::string& text) {
    namespace fs = std::filesystem;
    fs::path p(path);
    fs::path tmp = p.parent_path() / ("." + p.filename().string() + ".tmp." + std::to_string(getpid()));
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(path + ": cannot write " + tmp.string() + ": " + std::strerror(errno));
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int err = errno;
            close(fd);
            unlink(tmp.c_str());
            throw Error(path + ": write failed: " + std::strerror(err));
        }
        done += size_t(n);
    }
    if (close(fd) != 0 || rename(tmp.c_str(), p.c_str()) != 0) {
        int err = errno;
        unlink(tmp.c_str());
        throw Error(path + ": cannot replace: " + std::strerror(err));
    }
}

}  // namespace kvio::trace
