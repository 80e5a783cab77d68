#include "trace/bpf_stats.h"

#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <iomanip>
#include <ostream>

#include "common/error.h"

namespace kvio::trace {

BpfStatsEnabled::BpfStatsEnabled() {
    fd_ = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (fd_ < 0)
        throw Error(std::string("--stats: the kernel refused BPF_ENABLE_STATS (") + std::strerror(errno) +
                    "); kernel.bpf_stats_enabled=1 is the alternative");
}

BpfStatsEnabled::~BpfStatsEnabled() {
    if (fd_ >= 0) close(fd_);
}

std::vector<ProgStats> prog_stats(bpf_object* obj) {
    std::vector<ProgStats> out;
    bpf_program* p = nullptr;
    bpf_object__for_each_program(p, obj) {
        int fd = bpf_program__fd(p);
        if (fd < 0) continue;  // not loaded on this kernel or in this mode
        bpf_prog_info info{};
        uint32_t len = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
        out.push_back({bpf_program__name(p), info.run_cnt, info.run_time_ns});
    }
    return out;
}

static uint64_t total_ns(const std::vector<ProgStats>& stats) {
    uint64_t t = 0;
    for (const auto& s : stats) t += s.run_time_ns;
    return t;
}

nlohmann::json stats_json(const std::vector<ProgStats>& stats, uint64_t cmds) {
    nlohmann::json progs = nlohmann::json::array();
    for (const auto& s : stats)
        progs.push_back({{"name", s.name},
                         {"run_cnt", s.run_cnt},
                         {"run_time_ns", s.run_time_ns},
                         {"ns_per_run", s.run_cnt ? double(s.run_time_ns) / double(s.run_cnt) : 0.0}});
    nlohmann::json j = {{"programs", progs}, {"run_time_ns", total_ns(stats)}, {"cmds", cmds}};
    j["ns_per_cmd"] = cmds ? nlohmann::json(double(total_ns(stats)) / double(cmds)) : nlohmann::json(nullptr);
    return j;
}

void print_stats(std::ostream& os, const std::vector<ProgStats>& stats, uint64_t cmds) {
    os << "\n== BPF programs (kernel accounting, BPF_ENABLE_STATS)\n";
    os << "  " << std::left << std::setw(24) << "program" << std::right << std::setw(14) << "runs" << std::setw(14)
       << "ns/run" << std::setw(16) << "total ms"
       << "\n";
    for (const auto& s : stats)
        os << "  " << std::left << std::setw(24) << s.name << std::right << std::setw(14) << s.run_cnt << std::setw(14)
           << std::fixed << std::setprecision(0) << (s.run_cnt ? double(s.run_time_ns) / double(s.run_cnt) : 0.0)
           << std::setw(16) << std::setprecision(2) << double(s.run_time_ns) / 1e6 << "\n";
    os << "  total " << std::setprecision(2) << double(total_ns(stats)) / 1e6 << " ms";
    if (cmds)
        os << " = " << std::setprecision(0) << double(total_ns(stats)) / double(cmds) << " ns per device command ("
           << cmds << " commands)";
    os << "\n";
}

}  // namespace kvio::trace
