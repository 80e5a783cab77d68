#include "trace/duty.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/// Waits for an RCU grace period (membarrier(2) MEMBARRIER_CMD_GLOBAL: synchronize_rcu()): a tracepoint runs its
/// programs with preemption off, so after it no run of a program whose link was destroyed before is left on any CPU.
/// Where the kernel refuses (nohz_full), 20 ms, far longer than a program run.
void rcu_grace_period() {
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) usleep(20000);
}

/// kvio.trace/1 "duty" "window_log": one object per window (DutyWindow's fields).
nlohmann::json window_log_json(const std::vector<DutyWindow>& log) {
    nlohmann::json out = nlohmann::json::array();
    for (const DutyWindow& w : log)
        out.push_back({{"start_s", w.start_s},
                       {"end_s", w.end_s},
                       {"tail_s", w.tail_s},
                       {"why", w.why},
                       {"issued", w.issued},
                       {"completed", w.completed},
                       {"cut", w.cut},
                       {"lost", w.lost},
                       {"outside", w.outside},
                       {"unmatched", w.unmatched},
                       {"at_stop", w.at_stop}});
    return out;
}

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
                    " ms (the completions' longest tail) must be shorter than PERIOD");
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
    open_stat_ = seen_ = start_;
    dirs_.assign(slot_devs_.size(), {false, false});
    auto& p = s->progs;
    auto& l = s->links;
    // attached in this order, detached in the reverse: insert only while issue is attached, so a request inserted in
    // a window is issued in it too (or its state is released as cut), never a state whose issue was not seen
    issues_ = {{p.block_rq_issue_btf, &l.block_rq_issue_btf},   {p.block_rq_issue_cast_btf, &l.block_rq_issue_cast_btf},
               {p.block_rq_issue_raw, &l.block_rq_issue_raw},   {p.nvme_setup_cmd, &l.nvme_setup_cmd},
               {p.block_rq_insert_btf, &l.block_rq_insert_btf}, {p.block_rq_insert_raw, &l.block_rq_insert_raw}};
    completions_ = {{p.block_rq_complete_btf, &l.block_rq_complete_btf},
                    {p.block_rq_complete_raw, &l.block_rq_complete_raw},
                    {p.nvme_complete_rq, &l.nvme_complete_rq}};
    at_open_ = read_counts();
    window_start_ns_ = mono_ns();
    s_->bss->duty_open_ns = window_start_ns_;
    next_ns_ = t0_ns_ + to_ns(spec_.on_s);
    current_.why = "start";
}

int DutyCycle::timeout_ms(uint64_t now_ns, int cap) const {
    if (next_ns_ <= now_ns) return 0;
    return int(std::min<uint64_t>(uint64_t(cap), (next_ns_ - now_ns + 999999) / 1000000));
}

/// Until the traced disks' first command: whether it came (their stat files against the trace's start). The cycle's
/// schedule starts then.
bool DutyCycle::anchor(uint64_t now_ns) {
    bool busy = false;
    for (size_t i = 0; i < slot_devs_.size() && !busy; ++i) {
        const DiskStat d = read_disk_stat(slot_devs_[i]);
        busy = d.ios[0] + d.ios[1] != start_[i].ios[0] + start_[i].ios[1] || d.in_flight;
    }
    next_ns_ = now_ns + to_ns(spec_.on_s);
    if (!busy) return false;
    anchored_ = true;
    next_sched_ns_ = now_ns + to_ns(spec_.period_s);
    hard_end_ns_ = next_sched_ns_ - to_ns(kDutyTailS);
    return true;
}

/// Between windows: whether a traced disk finished commands of a direction the last window saw none of since the
/// last look (a job's next phase). Reads each stat file once.
bool DutyCycle::phase_started() {
    bool started = false;
    for (size_t i = 0; i < slot_devs_.size(); ++i) {
        const DiskStat d = read_disk_stat(slot_devs_[i]);
        for (int dir = 0; dir < 2; ++dir) started |= d.ios[dir] > seen_[i].ios[dir] && !dirs_[i][dir];
        seen_[i] = d;
    }
    return started;
}

void DutyCycle::service(uint64_t now_ns) {
    if (!anchored_) {  // the cycle starts with the disks' first command: a workload started after the trace is traced
        anchor(now_ns);
        return;
    }
    switch (phase_) {
        case Phase::Open:
            if (now_ns < next_ns_) return;
            if (now_ns < hard_end_ns_ && window_issues() < kDutyMinIssues) {  // too few yet: stay
                next_ns_ = std::min<uint64_t>(now_ns + 100000000ull, hard_end_ns_);
                return;
            }
            close_issues(now_ns);
            break;
        case Phase::Tail:
            if (now_ns < tail_end_ns_ && live_issued() > 0) {
                next_ns_ = std::min<uint64_t>(now_ns + 5000000ull, tail_end_ns_);
                return;
            }
            close_completions(now_ns);
            break;
        case Phase::Off:
            if (now_ns >= next_sched_ns_) {
                while (next_sched_ns_ <= now_ns) next_sched_ns_ += to_ns(spec_.period_s);
                phase_used_ = false;
                open_window(now_ns, "period");
            } else if (phase_started() && !phase_used_ && now_ns + to_ns(spec_.on_s + kDutyTailS) < next_sched_ns_) {
                phase_used_ = true;
                open_window(now_ns, "phase");
            } else {
                next_ns_ = std::min<uint64_t>(next_sched_ns_, now_ns + 100000000ull);  // the stat files again then
            }
            break;
    }
}

void DutyCycle::close_issues(uint64_t now_ns) {
    // first: a completion without state from now on is of a request issued outside the window, whichever CPU it
    // runs on while the issue programs leave
    s_->bss->duty_open_ns = ~0ULL;
    window_end_ns_ = mono_ns();
    for (auto it = issues_.rbegin(); it != issues_.rend(); ++it) {
        Group& g = *it;
        g.cycled = *g.link != nullptr;
        if (g.cycled) bpf_link__destroy(*g.link), *g.link = nullptr, cycled_names_.insert(bpf_program__name(g.prog));
    }
    rcu_grace_period();  // no issue program run is left on any CPU: the window's issues are all counted
    traced_ns_ += window_end_ns_ - window_start_ns_;
    current_.end_s = double(window_end_ns_ - t0_ns_) / 1e9;
    for (size_t i = 0; i < slot_devs_.size(); ++i) {
        const DiskStat d = read_disk_stat(slot_devs_[i]);
        for (int dir = 0; dir < 2; ++dir) dirs_[i][dir] = d.ios[dir] > open_stat_[i].ios[dir];
        seen_[i] = d;
    }
    phase_ = Phase::Tail;
    tail_end_ns_ = now_ns + to_ns(kDutyTailS);
    next_ns_ = now_ns;  // the first look at once: on a fast disk the window's requests are done
}

void DutyCycle::close_completions(uint64_t now_ns) {
    for (auto& g : completions_) {
        g.cycled = *g.link != nullptr;
        if (g.cycled) bpf_link__destroy(*g.link), *g.link = nullptr, cycled_names_.insert(bpf_program__name(g.prog));
    }
    rcu_grace_period();  // no completion program run is left: the sweep does not race one
    current_.tail_s = double(mono_ns() - window_end_ns_) / 1e9;
    current_.cut = sweep_cut();
    cut_ += current_.cut;
    log_window(0);
    phase_ = Phase::Off;
    next_ns_ = std::min<uint64_t>(next_sched_ns_, now_ns + 100000000ull);
}

void DutyCycle::open_window(uint64_t now_ns, const char* why) {
    reset_depths();
    at_open_ = read_counts();  // no program counts now but merge and requeue
    for (size_t i = 0; i < slot_devs_.size(); ++i) open_stat_[i] = read_disk_stat(slot_devs_[i]);
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
    current_ = DutyWindow{};
    current_.why = why;
    current_.start_s = double(window_start_ns_ - t0_ns_) / 1e9;
    phase_ = Phase::Open;
    next_ns_ = now_ns + to_ns(spec_.on_s);
    hard_end_ns_ = std::max(next_ns_, next_sched_ns_ - to_ns(kDutyTailS));
}

void DutyCycle::finish(uint64_t now_ns) {
    if (phase_ == Phase::Off) return;
    if (phase_ == Phase::Open) {
        traced_ns_ += now_ns - window_start_ns_;
        window_start_ns_ = now_ns;  // summary() adds nothing more
    }
    log_window(live_issued());
}

/// Completes current_ from the counters and the issues counted since it opened and adds it to the log.
void DutyCycle::log_window(uint64_t at_stop) {
    const Counts c = read_counts();
    current_.issued = window_issues();
    current_.outside = c.outside - at_open_.outside;
    current_.unmatched = c.unmatched - at_open_.unmatched;
    current_.lost = c.lost - at_open_.lost;
    current_.completed = (c.runs - at_open_.runs) - current_.outside - current_.unmatched;
    current_.at_stop = at_stop;
    log_.push_back(current_);
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

/// The issues the programs counted since the window opened, all traced disks (slot_depths' `issued`, reset at each
/// window's start; rq_state.bpf.h issue_depth).
uint64_t DutyCycle::window_issues() const {
    uint64_t n = 0;
    for (uint32_t slot = 0; slot < slot_devs_.size(); ++slot) {
        struct slot_depth d {};
        if (bpf_map__lookup_elem(s_->maps.slot_depths, &slot, sizeof slot, &d, sizeof d, 0) == 0 && d.issued > 0)
            n += uint64_t(d.issued);
    }
    return n;
}

/// The requests with live state that were issued and are traced: in the tail, the window's requests still in
/// flight. rq_table in one batch read (a per-entry read where the kernel has no batch), rq_spill entry by entry.
uint64_t DutyCycle::live_issued() const {
    auto live = [](const kvio_rq_state& st) { return (st.key & KVIO_SLOT_LIVE) && st.issued && !st.ignored; };
    uint64_t n = 0;
    const int table = bpf_map__fd(s_->maps.rq_table);
    const uint32_t entries = bpf_map__max_entries(s_->maps.rq_table);
    std::vector<uint32_t> keys(entries);
    std::vector<kvio_rq_state> states(entries);
    uint32_t count = entries, out = 0;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    const int err = bpf_map_lookup_batch(table, nullptr, &out, keys.data(), states.data(), &count, &opts);
    if (err == 0 || (errno == ENOENT && count > 0)) {
        for (uint32_t i = 0; i < count; ++i) n += live(states[i]);
    } else {
        for (uint32_t i = 0; i < entries; ++i) {
            kvio_rq_state st{};
            if (bpf_map_lookup_elem(table, &i, &st) == 0) n += live(st);
        }
    }
    const int spill = bpf_map__fd(s_->maps.rq_spill);
    uint64_t key = 0, next = 0;
    for (bool first = true; bpf_map_get_next_key(spill, first ? nullptr : &key, &next) == 0; first = false) {
        key = next;
        kvio_rq_spilled v{};
        if (bpf_map_lookup_elem(spill, &next, &v) == 0) n += live(v.s);
    }
    return n;
}

/// The counters a window's log needs, summed over CPUs (the per-CPU counters map, enum kvio_counter).
DutyCycle::Counts DutyCycle::read_counts() const {
    const int ncpus = libbpf_num_possible_cpus();
    std::vector<uint64_t> cpus(size_t(ncpus > 0 ? ncpus : 1));
    auto sum = [&](uint32_t id) {
        uint64_t n = 0;
        if (bpf_map__lookup_elem(s_->maps.counters, &id, sizeof id, cpus.data(), cpus.size() * sizeof(uint64_t), 0) ==
            0)
            for (uint64_t v : cpus) n += v;
        return n;
    };
    return {sum(KVIO_CNT_COMPLETE_RUNS), sum(KVIO_CNT_DUTY_BEFORE), sum(KVIO_CNT_UNMATCHED_COMPLETE),
            sum(KVIO_CNT_LOST_COMPLETE)};
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
    uint64_t traced = traced_ns_ + (phase_ == Phase::Open && end_ns > window_start_ns_ ? end_ns - window_start_ns_ : 0);
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
    nlohmann::json out = {{"t0_ns", t0_ns_},
                          {"on_s", spec_.on_s},
                          {"period_s", spec_.period_s},
                          {"tail_s", kDutyTailS},
                          {"windows", windows_},
                          {"traced_s", double(traced) / 1e9},
                          {"elapsed_s", elapsed},
                          {"traced_time_share", elapsed > 0 ? double(traced) / 1e9 / elapsed : 0.0},
                          {"cut", cut_},
                          {"outside_window", duty_before},
                          {"programs_cycled", cycled_names_},
                          {"disks", disks},
                          {"window_log", window_log_json(log_)}};
    if (bpf_run_ns)
        out["bpf_ns_per_disk_cmd"] = disk_cmds ? nlohmann::json(double(bpf_run_ns) / double(disk_cmds)) : nullptr;
    return out;
}

}  // namespace kvio::trace
