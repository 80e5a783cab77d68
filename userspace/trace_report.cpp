#include "userspace/trace_report.h"

#include <sys/utsname.h>

#include <iomanip>
#include <ostream>

#include "common/devinfo.h"

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
};
constexpr HistSpec kProcHists[KVIO_PROC_HISTS] = {
    {"vfs_read", "ns", HistKind::Log2},
    {"vfs_write", "ns", HistKind::Log2},
    {"fsync", "ns", HistKind::Log2},
    {"write_fsync_gap", "ns", HistKind::Log2},
    {"fadvise_read_gap", "ns", HistKind::Log2},
};
}  // namespace

std::string dev_hist_name(uint32_t id, uint32_t qid) {
    if (id >= KVIO_DEV_HISTS) return "unknown";
    if (id == KVIO_H_NVME_D2C_QUEUE) return std::string(kDevHists[id].name) + std::to_string(qid);
    return kDevHists[id].name;
}

std::string proc_hist_name(uint32_t id) { return id < KVIO_PROC_HISTS ? kProcHists[id].name : "unknown"; }

Histogram make_dev_hist(uint32_t id, uint64_t lba_bucket_bytes) {
    const auto& s = kDevHists[id < KVIO_DEV_HISTS ? id : 0];
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

void TraceReport::add_dev_value(uint32_t kdev, uint16_t id, uint64_t value) {
    auto& m = devs_[kdev];
    std::string name = dev_hist_name(id, 0);
    auto it = m.find(name);
    if (it == m.end()) it = m.emplace(name, make_dev_hist(id, lba_bucket_)).first;
    it->second.add(value);
}

void TraceReport::add_proc_hist(uint32_t id, const kvio_hist& h) {
    std::string name = proc_hist_name(id);
    auto it = proc_.find(name);
    if (it == proc_.end()) it = proc_.emplace(name, make_proc_hist(id)).first;
    it->second.add_slots(reinterpret_cast<const uint64_t*>(h.slots), KVIO_HIST_SLOTS, h.sum);
}

void TraceReport::touch_device(uint32_t kdev) { devs_[kdev]; }

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

static nlohmann::json totals(const std::map<std::string, Histogram>& m, const char* hist) {
    auto it = m.find(hist);
    uint64_t c = it == m.end() ? 0 : it->second.count(), b = it == m.end() ? 0 : it->second.sum();
    return {{"cmds", c}, {"bytes", b}};
}

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
        } catch (const std::exception&) {
            d["disk"] = "?";  // detached before the report was written
        }
        d["read"] = totals(hists, "bssplit_read");
        d["write"] = totals(hists, "bssplit_write");
        d["other"] = totals(hists, "other_cmds");
        nlohmann::json hj = nlohmann::json::object();
        for (const auto& [name, h] : hists) hj[name] = h.to_json();
        d["histograms"] = hj;
        devices.push_back(d);
    }
    nlohmann::json proc = nlohmann::json::object();
    for (uint32_t i = 0; i < KVIO_PROC_HISTS; ++i) {
        auto it = proc_.find(proc_hist_name(i));
        proc[proc_hist_name(i)] = it == proc_.end() ? make_proc_hist(i).to_json() : it->second.to_json();
    }
    return {
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
        {"rescued_by_backup", counters[KVIO_CNT_RESCUED]},
        {"nvme_tracepoints", nvme_present},
        {"devices", devices},
        {"process", proc},
        {"process_fds", syscall_scope_},
    };
}

void TraceReport::print(std::ostream& os, double duration_s, const uint64_t (&counters)[KVIO_COUNTERS],
                        bool nvme_present) const {
    os << std::fixed << std::setprecision(2) << "kvio trace: " << duration_s << " s, kernel " << kernel_release()
       << "\n";
    for (const auto& [kdev, hists] : devs_) {
        DevId id = decode_kernel_dev(kdev);
        std::string name = "?";
        try { name = block_dev_info(id).name; } catch (const std::exception&) {}
        auto r = totals(hists, "bssplit_read"), w = totals(hists, "bssplit_write");
        os << "\n== " << name << " (" << dev_string(id) << "): read " << r["cmds"] << " cmds / " << r["bytes"]
           << " B, write " << w["cmds"] << " cmds / " << w["bytes"] << " B\n";
        for (const auto& [hname, h] : hists)
            if (h.count()) h.print(os, hname);
    }
    os << "\n== syscalls (fds: " << syscall_scope_ << ")\n";
    for (const auto& [hname, h] : proc_)
        if (h.count()) h.print(os, hname);
    os << "\nnvme tracepoints: "
       << (nvme_present ? "attached" : "not present on this kernel (no NVMe driver loaded)") << "\n";
    os << "dropped events: " << counters[KVIO_CNT_RB_DROPS]
       << "  unmatched completes: " << counters[KVIO_CNT_UNMATCHED_COMPLETE]
       << "  negative deltas discarded: " << counters[KVIO_CNT_NEGATIVE_DELTA]
       << "  unattributed (submitter unknown, not counted): " << counters[KVIO_CNT_NO_OWNER]
       << "  completions not seen: " << counters[KVIO_CNT_LOST_COMPLETE] << "\n";
}

}  // namespace kvio::trace
