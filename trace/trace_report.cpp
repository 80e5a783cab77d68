#include "trace/trace_report.h"

#include <sys/utsname.h>

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "common/devinfo.h"
#include "common/queue_settings.h"

namespace kvio::trace {

namespace {
struct HistSpec {
    const char* name;
    const char* unit;
    HistKind kind;
};
// Order and names follow enum kvio_dev_hist in bpf/kvio_trace.h.
constexpr HistSpec kDevHists[KVIO_DEV_HISTS] = {
    {"d2c_read", "ns", HistKind::Log2},        {"d2c_write", "ns", HistKind::Log2},
    {"q2d_read", "ns", HistKind::Log2},        {"q2d_write", "ns", HistKind::Log2},
    {"bssplit_read", "bytes", HistKind::Log2}, {"bssplit_write", "bytes", HistKind::Log2},
    {"qd_read", "cmds", HistKind::Linear},     {"qd_write", "cmds", HistKind::Linear},
    {"lba_read", "bytes", HistKind::Linear},   {"lba_write", "bytes", HistKind::Linear},
    {"nvme_d2c_read", "ns", HistKind::Log2},   {"nvme_d2c_write", "ns", HistKind::Log2},
    {"nvme_d2c_q", "ns", HistKind::Log2},      {"other_cmds", "bytes", HistKind::Log2},
    {"flush_cmds", "bytes", HistKind::Log2},   {"discard_cmds", "bytes", HistKind::Log2},
};
// --breakdown stages, from KVIO_BT_H_Q2G_READ on (enum kvio_bt_hist; "bt_" keeps them apart from the main d2c).
constexpr HistSpec kBtHists[KVIO_BT_H_END - KVIO_BT_H_Q2G_READ] = {
    {"bt_q2g_read", "ns", HistKind::Log2}, {"bt_q2g_write", "ns", HistKind::Log2},
    {"bt_g2i_read", "ns", HistKind::Log2}, {"bt_g2i_write", "ns", HistKind::Log2},
    {"bt_i2d_read", "ns", HistKind::Log2}, {"bt_i2d_write", "ns", HistKind::Log2},
    {"bt_g2d_read", "ns", HistKind::Log2}, {"bt_g2d_write", "ns", HistKind::Log2},
    {"bt_d2c_read", "ns", HistKind::Log2}, {"bt_d2c_write", "ns", HistKind::Log2},
    {"bt_q2c_read", "ns", HistKind::Log2}, {"bt_q2c_write", "ns", HistKind::Log2},
};
bool is_bt_hist(uint32_t id) { return id >= KVIO_BT_H_Q2G_READ && id < KVIO_BT_H_END; }
// Failed commands, from KVIO_H_FAILED_READ on (enum kvio_failed_hist).
constexpr HistSpec kFailedHists[KVIO_H_FAILED_END - KVIO_H_FAILED_READ] = {
    {"failed_read", "bytes", HistKind::Log2},
    {"failed_write", "bytes", HistKind::Log2},
    {"failed_other", "bytes", HistKind::Log2},
};
bool is_failed_hist(uint32_t id) { return id >= KVIO_H_FAILED_READ && id < KVIO_H_FAILED_END; }
constexpr HistSpec kProcHists[KVIO_PROC_HISTS] = {
    {"vfs_read", "ns", HistKind::Log2},
    {"vfs_write", "ns", HistKind::Log2},
    {"fsync", "ns", HistKind::Log2},
    {"write_fsync_gap", "ns", HistKind::Log2},
    {"fadvise_read_gap", "ns", HistKind::Log2},
    {"aio_submit", "ns", HistKind::Log2},
    {"aio_getevents", "ns", HistKind::Log2},
};
}  // namespace

std::string dev_hist_name(uint32_t id, uint32_t qid) {
    if (is_bt_hist(id)) return kBtHists[id - KVIO_BT_H_Q2G_READ].name;
    if (is_failed_hist(id)) return kFailedHists[id - KVIO_H_FAILED_READ].name;
    if (id >= KVIO_DEV_HISTS) return "unknown";
    if (id == KVIO_H_NVME_D2C_QUEUE) return std::string(kDevHists[id].name) + std::to_string(qid);
    return kDevHists[id].name;
}

std::string proc_hist_name(uint32_t id) { return id < KVIO_PROC_HISTS ? kProcHists[id].name : "unknown"; }

Histogram make_dev_hist(uint32_t id, uint64_t lba_bucket_bytes) {
    const auto& s = is_bt_hist(id)       ? kBtHists[id - KVIO_BT_H_Q2G_READ]
                    : is_failed_hist(id) ? kFailedHists[id - KVIO_H_FAILED_READ]
                                         : kDevHists[id < KVIO_DEV_HISTS ? id : 0];
    uint64_t width = id == KVIO_H_LBA_READ || id == KVIO_H_LBA_WRITE ? lba_bucket_bytes : 1;
    return Histogram(s.kind, s.unit, KVIO_HIST_SLOTS, width);
}

Histogram make_proc_hist(uint32_t id) {
    const auto& s = kProcHists[id < KVIO_PROC_HISTS ? id : 0];
    return Histogram(s.kind, s.unit, KVIO_HIST_SLOTS);
}

void TraceReport::add_dev_hist(const kvio_hist_key& key, const kvio_hist& h) {
    auto& m = devs_[key.dev];
    std::string name = dev_hist_name(key.id, key.qid);
    auto it = m.find(name);
    if (it == m.end()) it = m.emplace(name, make_dev_hist(key.id, lba_bucket_)).first;
    it->second.add_slots(reinterpret_cast<const uint64_t*>(h.slots), KVIO_HIST_SLOTS, h.sum);
}

void TraceReport::add_dev_value(uint32_t kdev, uint16_t id, uint64_t value, uint64_t n) {
    auto& m = devs_[kdev];
    std::string name = dev_hist_name(id, 0);
    auto it = m.find(name);
    if (it == m.end()) it = m.emplace(name, make_dev_hist(id, lba_bucket_)).first;
    it->second.add(value, n);
}

std::string qd_sampling_note(uint32_t qd_sample_every) {
    if (qd_sample_every <= 1) return "";
    const std::string n = std::to_string(qd_sample_every);
    return " [depth sampled at 1 issue in " + n + ", each sample counted " + n + " times]";
}

void TraceReport::add_proc_hist(uint32_t id, const kvio_hist& h) {
    std::string name = proc_hist_name(id);
    auto it = proc_.find(name);
    if (it == proc_.end()) it = proc_.emplace(name, make_proc_hist(id)).first;
    it->second.add_slots(reinterpret_cast<const uint64_t*>(h.slots), KVIO_HIST_SLOTS, h.sum);
}

void TraceReport::touch_device(uint32_t kdev) { devs_[kdev]; }

void TraceReport::add_group(const kvio_group_key& key, const kvio_group_val& val, std::string name) {
    GroupTotals g{key.id, std::move(name), key.dev, key.op, val.cmds, val.bytes, make_proc_hist(KVIO_H_VFS_READ)};
    g.d2c.add_slots(reinterpret_cast<const uint64_t*>(val.d2c.slots), KVIO_HIST_SLOTS, val.d2c.sum);
    groups_.push_back(std::move(g));
}

TraceReport TraceReport::minus(const TraceReport& earlier) const {
    TraceReport d = *this;
    for (auto& [kdev, hists] : d.devs_) {
        auto e = earlier.devs_.find(kdev);
        if (e == earlier.devs_.end()) continue;
        for (auto& [name, h] : hists)
            if (auto eh = e->second.find(name); eh != e->second.end()) h = h.minus(eh->second);
    }
    for (auto& [name, h] : d.proc_)
        if (auto eh = earlier.proc_.find(name); eh != earlier.proc_.end()) h = h.minus(eh->second);
    for (auto& g : d.groups_)
        for (const auto& eg : earlier.groups_)
            if (eg.id == g.id && eg.dev == g.dev && eg.op == g.op) {
                g.cmds -= std::min(g.cmds, eg.cmds);
                g.bytes -= std::min(g.bytes, eg.bytes);
                g.d2c = g.d2c.minus(eg.d2c);
                break;
            }
    std::erase_if(d.groups_, [](const GroupTotals& g) { return g.cmds == 0; });
    return d;
}

bool TraceReport::device_empty(uint32_t kdev) const {
    auto it = devs_.find(kdev);
    if (it == devs_.end()) return true;
    for (const auto& [n, h] : it->second)
        if (h.count()) return false;
    return true;
}

static std::string kernel_release() {
    struct utsname u {};
    uname(&u);
    return u.release;
}

/// A histogram's kvio.trace/1 JSON; latency (ns) histograms also get "percentiles" (Histogram::percentiles_json).
static nlohmann::json hist_json(const Histogram& h) {
    auto j = h.to_json();
    if (h.unit() == "ns") j["percentiles"] = h.percentiles_json();
    return j;
}

static const char* group_by_name(kvio_group_by by) { return by == KVIO_GROUP_CGROUP ? "cgroup" : "process"; }

std::string disk_name(uint32_t kdev) {
    try {
        return block_dev_info(decode_kernel_dev(kdev)).name;
    } catch (const std::exception&) {
        return "?";  // detached meanwhile
    }
}

/// Groups by bytes moved, largest first (biotop's order).
static std::vector<const GroupTotals*> by_bytes(const std::vector<GroupTotals>& groups) {
    std::vector<const GroupTotals*> v;
    for (const auto& g : groups) v.push_back(&g);
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
    return v;
}

static nlohmann::json totals(const std::map<std::string, Histogram>& m, const char* hist) {
    auto it = m.find(hist);
    uint64_t c = it == m.end() ? 0 : it->second.count(), b = it == m.end() ? 0 : it->second.sum();
    return {{"cmds", c}, {"bytes", b}};
}

/// "failed" of a device in kvio.trace/1: {read, write, other} -> {cmds, bytes} of the commands that completed with
/// an error (the block layer's blk_status_t; the events' "error" field).
static nlohmann::json failed_json(const std::map<std::string, Histogram>& m) {
    return {
        {"read", totals(m, "failed_read")}, {"write", totals(m, "failed_write")}, {"other", totals(m, "failed_other")}};
}

/// Failed commands of all devices (kvio.trace/1 "failed_cmds").
static uint64_t failed_cmds(const std::map<uint32_t, std::map<std::string, Histogram>>& devs) {
    uint64_t n = 0;
    for (const auto& [kdev, hists] : devs)
        for (const char* h : {"failed_read", "failed_write", "failed_other"})
            if (auto it = hists.find(h); it != hists.end()) n += it->second.count();
    return n;
}

const char* block_event_name(uint32_t kind) {
    static const char* const names[KVIO_BT_KINDS] = {"rq_merges", "bio_backmerges", "bio_frontmerges", "splits",
                                                     "requeues"};
    return kind < KVIO_BT_KINDS ? names[kind] : "?";
}

const char* block_event_dir_name(uint32_t dir) {
    static const char* const names[KVIO_BT_DIRS] = {"read", "write", "other"};
    return dir < KVIO_BT_DIRS ? names[dir] : "?";
}

void TraceReport::add_block_events(const kvio_bt_key& key, uint64_t n) {
    if (key.kind >= KVIO_BT_KINDS || key.dir >= KVIO_BT_DIRS) return;
    block_events_[key.dev][key.kind][key.dir] += n;  // value-initialised: zeros
}

namespace {

/// "block_events" of kvio.trace/1: per device, per direction, each kind's count.
nlohmann::json block_events_json(const std::map<uint32_t, TraceReport::BlockEvents>& evs) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [kdev, counts] : evs) {
        nlohmann::json d = {{"dev", dev_string(decode_kernel_dev(kdev))}, {"disk", disk_name(kdev)}};
        for (uint32_t dir = 0; dir < KVIO_BT_DIRS; ++dir) {
            nlohmann::json c = nlohmann::json::object();
            for (uint32_t k = 0; k < KVIO_BT_KINDS; ++k) c[block_event_name(k)] = counts[k][dir];
            d[block_event_dir_name(dir)] = c;
        }
        out.push_back(d);
    }
    return out;
}

/// The --breakdown table: one line per device and direction.
void print_block_events(std::ostream& os, const std::map<uint32_t, TraceReport::BlockEvents>& evs) {
    os << "\n== block layer events (--breakdown)\n"
       << std::left << std::setw(10) << "DISK" << std::setw(7) << "DIR" << std::right;
    for (uint32_t k = 0; k < KVIO_BT_KINDS; ++k) os << std::setw(17) << block_event_name(k);
    os << "\n";
    if (evs.empty()) os << "(none)\n";
    for (const auto& [kdev, counts] : evs)
        for (uint32_t dir = 0; dir < KVIO_BT_DIRS; ++dir) {
            os << std::left << std::setw(10) << disk_name(kdev) << std::setw(7) << block_event_dir_name(dir)
               << std::right;
            for (uint32_t k = 0; k < KVIO_BT_KINDS; ++k) os << std::setw(17) << counts[k][dir];
            os << "\n";
        }
}

}  // namespace

nlohmann::json TraceReport::to_json(double duration_s, const uint64_t (&counters)[KVIO_COUNTERS],
                                    bool nvme_present) const {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& [kdev, hists] : devs_) {
        DevId id = decode_kernel_dev(kdev);
        nlohmann::json d = {{"dev", dev_string(id)}};
        try {
            auto info = block_dev_info(id);
            d["disk"] = info.name;
            d["logical_block_size"] = info.logical_block_size;
            d["max_sectors_kb"] = info.max_sectors_kb;
            d["max_hw_sectors_kb"] = info.max_hw_sectors_kb;
            d["max_segments"] = info.max_segments;
            d["nr_requests"] = info.nr_requests;
            d["queue"] = queue_settings_json(read_queue_settings(info.name));  // docs/formats.md, kvio.trace/1
        } catch (const std::exception&) {
            d["disk"] = "?";  // detached before the report was written
        }
        d["read"] = totals(hists, "bssplit_read");
        d["write"] = totals(hists, "bssplit_write");
        d["other"] = totals(hists, "other_cmds");
        d["failed"] = failed_json(hists);
        nlohmann::json hj = nlohmann::json::object();
        for (const auto& [name, h] : hists) hj[name] = hist_json(h);
        d["histograms"] = hj;
        devices.push_back(d);
    }
    nlohmann::json proc = nlohmann::json::object();
    for (uint32_t i = 0; i < KVIO_PROC_HISTS; ++i) {
        auto it = proc_.find(proc_hist_name(i));
        proc[proc_hist_name(i)] = hist_json(it == proc_.end() ? make_proc_hist(i) : it->second);
    }
    nlohmann::json out = {
        {"schema", "kvio.trace/1"},
        {"kernel", kernel_release()},
        {"duration_s", duration_s},
        {"dropped", counters[KVIO_CNT_RB_DROPS]},
        {"unmatched_completes", counters[KVIO_CNT_UNMATCHED_COMPLETE]},
        {"negative_deltas", counters[KVIO_CNT_NEGATIVE_DELTA]},
        {"partial_completes", counters[KVIO_CNT_PARTIAL_COMPLETE]},
        {"map_full", counters[KVIO_CNT_MAP_FULL]},
        {"unattributed", counters[KVIO_CNT_NO_OWNER]},
        {"stale_entries", counters[KVIO_CNT_STALE]},
        {"lost_completes", counters[KVIO_CNT_LOST_COMPLETE]},
        {"complete_runs", counters[KVIO_CNT_COMPLETE_RUNS]},
        {"failed_cmds", failed_cmds(devs_)},
        {"rescued_by_backup", counters[KVIO_CNT_RESCUED]},
        {"rq_table_spills", counters[KVIO_CNT_RQ_SPILLS]},
        {"owner_table_spills", counters[KVIO_CNT_OWNER_SPILLS]},
        {"nvme_tracepoints", nvme_present},
        {"qd_sample_every", qd_sample_every_},
        {"d2c_sample_every", d2c_sample_every_},
        {"qd_source", qd_source_},
        {"devices", devices},
        {"process", proc},
        {"process_fds", syscall_scope_},
        {"percentile_method",
         "linear interpolation inside the log2 bucket holding the quantile; each percentile "
         "gives its bucket [lo, hi) in the histogram's unit"},
    };
    if (group_by_ != KVIO_GROUP_NONE) {
        nlohmann::json entries = nlohmann::json::array();
        for (const auto* g : by_bytes(groups_)) {
            nlohmann::json e = {{group_by_ == KVIO_GROUP_CGROUP ? "cgroup_id" : "pid", g->id},
                                {group_by_ == KVIO_GROUP_CGROUP ? "cgroup" : "comm", g->name},
                                {"dev", dev_string(decode_kernel_dev(g->dev))},
                                {"disk", disk_name(g->dev)},
                                {"op", g->op == KVIO_OP_READ ? "read" : "write"},
                                {"cmds", g->cmds},
                                {"bytes", g->bytes},
                                {"d2c", hist_json(g->d2c)}};
            entries.push_back(e);
        }
        out["groups"] = {{"by", group_by_name(group_by_)}, {"entries", entries}};
    }
    if (breakdown_) out["block_events"] = block_events_json(block_events_);
    return out;
}

std::string human_ns(double ns) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(1);
    if (ns < 1e3)
        o << ns << "ns";
    else if (ns < 1e6)
        o << ns / 1e3 << "us";
    else if (ns < 1e9)
        o << ns / 1e6 << "ms";
    else
        o << ns / 1e9 << "s";
    return o.str();
}

void print_percentiles(std::ostream& os, const Histogram& h) {
    if (!h.count() || h.unit() != "ns") return;
    os << "     ";
    for (const auto& [name, q] : kReportedQuantiles) {
        auto e = h.quantile_estimate(q);
        os << " " << name << " " << human_ns(e.value) << " [" << e.lo << "," << e.hi << ")";
    }
    os << " ns buckets\n";
}

void print_groups(std::ostream& os, const TraceReport& r, kvio_group_by by) {
    if (by == KVIO_GROUP_NONE) return;
    bool cg = by == KVIO_GROUP_CGROUP;
    os << "\n== block reads and writes by " << group_by_name(by) << " (submitter at bio allocation)\n";
    os << std::left << std::setw(cg ? 12 : 8) << (cg ? "CGROUP_ID" : "PID") << " " << std::setw(cg ? 32 : 16)
       << (cg ? "CGROUP" : "COMM") << " " << std::setw(10) << "DISK" << std::setw(6) << "OP" << std::right
       << std::setw(10) << "CMDS" << std::setw(14) << "BYTES" << std::setw(11) << "D2C_p50" << std::setw(11)
       << "D2C_p99" << std::setw(11) << "D2C_p99.9"
       << "\n";
    if (r.groups().empty()) os << "(no block reads or writes with a known submitter)\n";
    for (const auto* g : by_bytes(r.groups()))
        os << std::left << std::setw(cg ? 12 : 8) << g->id << " " << std::setw(cg ? 32 : 16) << g->name << " "
           << std::setw(10) << disk_name(g->dev) << std::setw(6) << (g->op == KVIO_OP_READ ? "read" : "write")
           << std::right << std::setw(10) << g->cmds << std::setw(14) << g->bytes << std::setw(11)
           << human_ns(g->d2c.quantile(0.5)) << std::setw(11) << human_ns(g->d2c.quantile(0.99)) << std::setw(11)
           << human_ns(g->d2c.quantile(0.999)) << "\n";
}

void TraceReport::print(std::ostream& os, double duration_s, const uint64_t (&counters)[KVIO_COUNTERS],
                        bool nvme_present) const {
    os << std::fixed << std::setprecision(2) << "kvio trace: " << duration_s << " s, kernel " << kernel_release()
       << "\n";
    for (const auto& [kdev, hists] : devs_) {
        DevId id = decode_kernel_dev(kdev);
        std::string name = "?";
        try {
            name = block_dev_info(id).name;
        } catch (const std::exception&) {}
        auto r = totals(hists, "bssplit_read"), w = totals(hists, "bssplit_write");
        os << "\n== " << name << " (" << dev_string(id) << "): read " << r["cmds"] << " cmds / " << r["bytes"]
           << " B, write " << w["cmds"] << " cmds / " << w["bytes"] << " B\n";
        const auto f = failed_json(hists);
        if (f["read"]["cmds"] != 0 || f["write"]["cmds"] != 0 || f["other"]["cmds"] != 0)
            os << "FAILED (completed with an error): read " << f["read"]["cmds"] << " cmds / " << f["read"]["bytes"]
               << " B, write " << f["write"]["cmds"] << " cmds / " << f["write"]["bytes"] << " B, other "
               << f["other"]["cmds"] << " cmds\n";
        for (const auto& [hname, h] : hists) {
            if (!h.count()) continue;
            bool qd = hname == "qd_read" || hname == "qd_write";
            bool timed = hname.rfind("d2c_", 0) == 0 || hname.rfind("q2d_", 0) == 0 || qd;
            std::string note = qd ? qd_sampling_note(qd_sample_every_) : "";
            if (timed && d2c_sample_every_ > 1)
                note += " [1 request in " + std::to_string(d2c_sample_every_) + " timed, each counted " +
                        std::to_string(d2c_sample_every_) + " times]";
            h.print(os, hname + note);
            print_percentiles(os, h);
        }
    }
    os << "\n== syscalls (fds: " << syscall_scope_ << ")\n";
    for (const auto& [hname, h] : proc_)
        if (h.count()) {
            h.print(os, hname);
            print_percentiles(os, h);
        }
    print_groups(os, *this, group_by_);
    if (breakdown_) print_block_events(os, block_events_);
    os << "\nnvme tracepoints: " << (nvme_present ? "attached" : "not present on this kernel (no NVMe driver loaded)")
       << "\n";
    os << "dropped events: " << counters[KVIO_CNT_RB_DROPS]
       << "  unmatched completes: " << counters[KVIO_CNT_UNMATCHED_COMPLETE]
       << "  negative deltas discarded: " << counters[KVIO_CNT_NEGATIVE_DELTA]
       << "  unattributed (submitter unknown, not counted): " << counters[KVIO_CNT_NO_OWNER]
       << "  completions not seen: " << counters[KVIO_CNT_LOST_COMPLETE] << "  failed commands: " << failed_cmds(devs_)
       << "\n";
    if (counters[KVIO_CNT_RQ_SPILLS] || counters[KVIO_CNT_OWNER_SPILLS])
        os << "in-flight table spills (kept in the fallback hashes): requests " << counters[KVIO_CNT_RQ_SPILLS]
           << "  bio owners " << counters[KVIO_CNT_OWNER_SPILLS] << "\n";
}

}  // namespace kvio::trace
