#include "trace/duty.h"

#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bpf/kvio_trace.h"
#include "bpf/kvio_trace.skel.h"
#include "common/devinfo.h"
#include "common/error.h"

namespace kvio::trace {

namespace {

uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t to_ns(double s) { return uint64_t(s * 1e9); }

}  // namespace

DutySpec parse_duty(const std::string& text) {
    const auto slash = text.find('/');
    auto number = [&](const std::string& part, const char* what) {
        size_t used = 0;
        double v = 0;
        try {
            v = std::stod(part, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (part.empty() || used != part.size() || !(v > 0))
            throw Error("--duty " + text + ": " + what + " is not a positive number of seconds (ON/PERIOD, e.g. 1/10)");
        return v;
    };
    if (slash == std::string::npos) throw Error("--duty " + text + ": expected ON/PERIOD in seconds, e.g. 1/10");
    DutySpec d{number(text.substr(0, slash), "ON"), number(text.substr(slash + 1), "PERIOD")};
    if (d.on_s + kDutyTailS >= d.period_s)
        throw Error("--duty " + text + ": ON + " + std::to_string(int(kDutyTailS * 1000)) +
                    " ms (the completions' tail) must be shorter than PERIOD");
    return d;
}

DiskStat read_disk_stat(uint32_t kdev) {
    const DevId id = decode_kernel_dev(kdev);
    const std::string path = "/sys/dev/block/" + dev_string(id) + "/stat";
    std::ifstream in(path);
    if (!in) throw Error(path + ": cannot read: " + std::strerror(errno));
    // fields 1-11: read ios, merges, sectors, ticks; write ios, merges, sectors, ticks; in_flight, io_ticks,
    // time_in_queue (Documentation/block/stat.rst)
    uint64_t f[11] = {};
    for (int i = 0; i < 11; ++i)
        if (!(in >> f[i])) throw Error(path + ": line 1, field " + std::to_string(i + 1) + ": missing or not a number");
    DiskStat d;
    d.ios[0] = f[0], d.sectors[0] = f[2], d.ticks_ms[0] = f[3];
    d.ios[1] = f[4], d.sectors[1] = f[6], d.ticks_ms[1] = f[7];
    d.in_flight = f[8], d.io_ticks_ms = f[9], d.time_in_queue_ms = f[10];
    return d;
}

nlohmann::json disk_stat_json(const DiskStat& a, const DiskStat& b, double elapsed_s, uint64_t traced_cmds) {
    nlohmann::json j = nlohmann::json::object();
    const char* dirs[2] = {"read", "write"};
    uint64_t cmds = 0;
    const double busy_ms = double(b.io_ticks_ms - a.io_ticks_ms);
    for (int d = 0; d < 2; ++d) {
        const uint64_t n = b.ios[d] - a.ios[d];
        cmds += n;
        j[dirs[d]] = {{"cmds", n},
                      {"bytes", (b.sectors[d] - a.sectors[d]) * 512},
                      {"mean_depth_busy", busy_ms > 0 ? double(b.ticks_ms[d] - a.ticks_ms[d]) / busy_ms : 0.0}};
    }
    j["cmds"] = cmds;
    j["io_ticks_ms"] = b.io_ticks_ms - a.io_ticks_ms;
    j["time_in_queue_ms"] = b.time_in_queue_ms - a.time_in_queue_ms;
    j["mean_depth"] = elapsed_s > 0 ? double(b.time_in_queue_ms - a.time_in_queue_ms) / (elapsed_s * 1000) : 0.0;
    j["traced_cmds"] = traced_cmds;
    j["traced_share"] = cmds ? double(traced_cmds) / double(cmds) : 0.0;
    return j;
}

DutyCycle::DutyCycle(kvio_trace_bpf* s, DutySpec spec, std::vector<uint32_t> slot_devs, uint64_t t0_ns)
    : s_(s), spec_(spec), slot_devs_(std::move(slot_devs)), t0_ns_(t0_ns) {
    for (uint32_t d : slot_devs_) start_.push_back(read_disk_stat(d));
    auto& p = s->progs;
    auto& l = s->links;
    // attached in this order, detached in the reverse: insert only while issue is attached, so a request inserted in
    // a window is issued in it too (or its state is released as cut), never a state whose issue was not seen
    issues_ = {{p.block_rq_issue_btf, &l.block_rq_issue_btf},
               {p.block_rq_issue_raw, &l.block_rq_issue_raw},
               {p.nvme_setup_cmd, &l.nvme_setup_cmd},
               {p.block_rq_insert_btf, &l.block_rq_insert_btf},
               {p.block_rq_insert_raw, &l.block_rq_insert_raw}};
    completions_ = {{p.block_rq_complete_btf, &l.block_rq_complete_btf},
                    {p.block_rq_complete_raw, &l.block_rq_complete_raw},
                    {p.nvme_complete_rq, &l.nvme_complete_rq}};
    window_start_ns_ = mono_ns();
    s_->bss->duty_open_ns = window_start_ns_;
    next_ns_ = t0_ns_ + to_ns(spec_.on_s);
    sched0_ns_ = t0_ns_;
}

int DutyCycle::timeout_ms(uint64_t now_ns, int cap) const {
    if (next_ns_ <= now_ns) return 0;
    return int(std::min<uint64_t>(uint64_t(cap), (next_ns_ - now_ns + 999999) / 1000000));
}

void DutyCycle::service(uint64_t now_ns) {
    if (!anchored_) {  // the cycle starts with the disks' first command: a workload started after the trace is traced
        bool busy = false;
        for (size_t i = 0; i < slot_devs_.size() && !busy; ++i) {
            const DiskStat d = read_disk_stat(slot_devs_[i]);
            busy = d.ios[0] + d.ios[1] != start_[i].ios[0] + start_[i].ios[1] || d.in_flight;
        }
        next_ns_ = now_ns + to_ns(spec_.on_s);
        if (!busy) return;
        anchored_ = true;
        sched0_ns_ = now_ns;
        return;
    }
    if (now_ns < next_ns_) return;
    switch (phase_) {
        case Phase::Open:
            close_issues(now_ns);
            break;
        case Phase::Tail:
            close_completions();
            break;
        case Phase::Off:
            open_window(now_ns);
            break;
    }
}

void DutyCycle::close_issues(uint64_t now_ns) {
    for (auto it = issues_.rbegin(); it != issues_.rend(); ++it) {
        Group& g = *it;
        g.cycled = *g.link != nullptr;
        if (g.cycled) bpf_link__destroy(*g.link), *g.link = nullptr, cycled_names_.insert(bpf_program__name(g.prog));
    }
    traced_ns_ += mono_ns() - window_start_ns_;
    // the tail: every completion without state is of a request issued outside the window (after it, mostly)
    s_->bss->duty_open_ns = ~0ULL;
    phase_ = Phase::Tail;
    next_ns_ = now_ns + to_ns(kDutyTailS);
}

void DutyCycle::close_completions() {
    for (auto& g : completions_) {
        g.cycled = *g.link != nullptr;
        if (g.cycled) bpf_link__destroy(*g.link), *g.link = nullptr, cycled_names_.insert(bpf_program__name(g.prog));
    }
    cut_ += sweep_cut();
    phase_ = Phase::Off;
    next_ns_ = sched0_ns_ + windows_ * to_ns(spec_.period_s);
}

void DutyCycle::open_window(uint64_t now_ns) {
    reset_depths();
    auto attach = [](Group& g) {
        if (!g.cycled) return;
        bpf_link* l = bpf_program__attach(g.prog);
        if (!l)
            throw Error(std::string("--duty: attaching ") + bpf_program__name(g.prog) +
                        " again failed: " + std::strerror(errno));
        *g.link = l;
    };
    for (auto& g : completions_) attach(g);
    for (auto& g : issues_) attach(g);
    window_start_ns_ = mono_ns();
    s_->bss->duty_open_ns = window_start_ns_;
    ++windows_;
    phase_ = Phase::Open;
    next_ns_ = std::max(now_ns, sched0_ns_ + (windows_ - 1) * to_ns(spec_.period_s)) + to_ns(spec_.on_s);
}

/// A fresh in-flight count per slot, as the trace's start sets it (trace/tracer.cpp, set_kernel_baselines): the
/// requests in flight now, whose completions the kernel will count but whose issues no program saw.
void DutyCycle::reset_depths() {
    for (uint32_t slot = 0; slot < slot_devs_.size(); ++slot) {
        struct slot_depth d {};
        if (s_->rodata->qd_kernel_done) d.kbase = int64_t(read_disk_stat(slot_devs_[slot]).in_flight);
        bpf_map__update_elem(s_->maps.slot_depths, &slot, sizeof slot, &d, sizeof d, BPF_ANY);
    }
}

/// The requests issued in the window and not completed within the tail: their state is released (its key stays,
/// as slot_release leaves it) so a later life of the request is not taken for a lost completion; counted.
uint64_t DutyCycle::sweep_cut() {
    uint64_t cut = 0;
    const int table = bpf_map__fd(s_->maps.rq_table);
    for (uint32_t i = 0; i < bpf_map__max_entries(s_->maps.rq_table); ++i) {
        kvio_rq_state st{};
        if (bpf_map_lookup_elem(table, &i, &st) != 0 || !(st.key & KVIO_SLOT_LIVE)) continue;
        if (st.issued && !st.ignored) ++cut;
        st.key &= ~KVIO_SLOT_LIVE;
        bpf_map_update_elem(table, &i, &st, BPF_ANY);
    }
    const int spill = bpf_map__fd(s_->maps.rq_spill);
    std::vector<uint64_t> keys;
    uint64_t key = 0, next = 0;
    for (bool first = true; bpf_map_get_next_key(spill, first ? nullptr : &key, &next) == 0; first = false) {
        key = next;
        keys.push_back(next);
    }
    int64_t removed = 0;
    for (uint64_t k : keys) {
        kvio_rq_spilled v{};
        if (bpf_map_lookup_elem(spill, &k, &v) == 0 && v.s.issued && !v.s.ignored) ++cut;
        if (bpf_map_delete_elem(spill, &k) == 0) ++removed;
    }
    if (removed) {
        const uint32_t which = 0;  // SPILL_RQ (bpf/config.bpf.h)
        int64_t n = 0;
        const int fd = bpf_map__fd(s_->maps.spill_live);
        if (bpf_map_lookup_elem(fd, &which, &n) == 0) {
            n = std::max<int64_t>(0, n - removed);
            bpf_map_update_elem(fd, &which, &n, BPF_ANY);
        }
    }
    return cut;
}

nlohmann::json DutyCycle::summary(uint64_t end_ns, const nlohmann::json& devices, uint64_t duty_before,
                                  uint64_t bpf_run_ns) const {
    uint64_t traced = traced_ns_ + (phase_ == Phase::Open ? end_ns - window_start_ns_ : 0);
    const double elapsed = double(end_ns - t0_ns_) / 1e9;
    nlohmann::json disks = nlohmann::json::array();
    uint64_t disk_cmds = 0;
    for (size_t i = 0; i < slot_devs_.size(); ++i) {
        const std::string dev = dev_string(decode_kernel_dev(slot_devs_[i]));
        uint64_t traced_cmds = 0;
        for (const auto& d : devices)
            if (d.value("dev", "") == dev)
                traced_cmds = d["read"]["cmds"].get<uint64_t>() + d["write"]["cmds"].get<uint64_t>();
        nlohmann::json j = disk_stat_json(start_[i], read_disk_stat(slot_devs_[i]), elapsed, traced_cmds);
        j["dev"] = dev;
        disk_cmds += j["cmds"].get<uint64_t>();
        disks.push_back(std::move(j));
    }
    nlohmann::json out = {{"on_s", spec_.on_s},
                          {"period_s", spec_.period_s},
                          {"tail_s", kDutyTailS},
                          {"windows", windows_},
                          {"traced_s", double(traced) / 1e9},
                          {"elapsed_s", elapsed},
                          {"traced_time_share", elapsed > 0 ? double(traced) / 1e9 / elapsed : 0.0},
                          {"cut", cut_},
                          {"outside_window", duty_before},
                          {"programs_cycled", cycled_names_},
                          {"disks", disks}};
    if (bpf_run_ns)
        out["bpf_ns_per_disk_cmd"] = disk_cmds ? nlohmann::json(double(bpf_run_ns) / double(disk_cmds)) : nullptr;
    return out;
}

}  // namespace kvio::trace
