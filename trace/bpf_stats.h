// The kernel's own accounting of what each BPF program costs (BPF_ENABLE_STATS, bpf_prog_info run_cnt /
// run_time_ns): `kvio trace --stats`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct bpf_object;

namespace kvio::trace {

/// Run-time statistics on for this object's lifetime: holds the fd of BPF_ENABLE_STATS(BPF_STATS_RUN_TIME), the
/// kernel's reference-counted switch (kernel.bpf_stats_enabled stays as the administrator set it; closing the fd
/// drops our reference). Throws kvio::Error when the kernel refuses.
class BpfStatsEnabled {
public:
    BpfStatsEnabled();
    ~BpfStatsEnabled();
    BpfStatsEnabled(const BpfStatsEnabled&) = delete;
    BpfStatsEnabled& operator=(const BpfStatsEnabled&) = delete;

private:
    int fd_ = -1;
};

/// One loaded program: how often it ran and the ns it spent (bpf_prog_info), since statistics were enabled.
struct ProgStats {
    std::string name;  ///< the program's name in the BPF object (bpftool shows 15 characters of it)
    uint64_t run_cnt = 0;
    uint64_t run_time_ns = 0;
};

/// Statistics of every loaded program of `obj`, in the object's order.
std::vector<ProgStats> prog_stats(bpf_object* obj);

/// The "bpf_stats" section of the kvio.trace/1 summary: per program run_cnt, run_time_ns and ns_per_run; the total;
/// and, with `cmds` > 0 (device commands traced), ns_per_cmd = total / cmds.
nlohmann::json stats_json(const std::vector<ProgStats>& stats, uint64_t cmds);

/// The same as a human table.
void print_stats(std::ostream& os, const std::vector<ProgStats>& stats, uint64_t cmds);

}  // namespace kvio::trace
