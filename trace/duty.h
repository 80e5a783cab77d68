// `kvio trace --duty ON/PERIOD`: the block programs attached only in windows of ON seconds every PERIOD seconds,
// and the disks' whole-run figures from the kernel's own accounting (/sys/dev/block/MAJ:MIN/stat), so that the
// timing histograms come from the windows while commands, bytes and the mean depth cover the whole run
// (docs/trace.md, "Duty-cycled tracing").
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct kvio_trace_bpf;
struct bpf_program;
struct bpf_link;

namespace kvio::trace {

/// --duty ON/PERIOD, seconds; period_s 0: off (every command traced).
struct DutySpec {
    double on_s = 0;
    double period_s = 0;
    bool enabled() const { return period_s > 0; }
};

/// Parses "ON/PERIOD" (seconds, decimals allowed: "1/10", "0.5/5"). 0 < ON, ON + kDutyTailS < PERIOD. Throws
/// kvio::Error naming the option and what is wrong.
DutySpec parse_duty(const std::string& text);

/// How long the completion programs stay attached after a window's issue programs are detached, so that the
/// commands issued in the window are timed (s). Those still in flight after it are counted as cut.
constexpr double kDutyTailS = 0.05;

/// One disk's /sys/dev/block/MAJ:MIN/stat (Documentation/ABI/stable/sysfs-block, "stat"; counts since boot):
/// finished reads and writes, their 512-byte sectors and their summed times (ms, from each request's start to its
/// end), requests in flight, the time with at least one in flight (io_ticks, ms) and the weighted time in queue (ms).
struct DiskStat {
    uint64_t ios[2] = {};       ///< finished requests: [0] reads, [1] writes
    uint64_t sectors[2] = {};   ///< 512-byte sectors of them
    uint64_t ticks_ms[2] = {};  ///< their summed times, ms
    uint64_t in_flight = 0;
    uint64_t io_ticks_ms = 0;
    uint64_t time_in_queue_ms = 0;
};

/// Reads the stat file of kernel dev_t `kdev`. Throws kvio::Error naming the file and field when it is short or
/// not numbers.
DiskStat read_disk_stat(uint32_t kdev);

/// What the kernel counted on one disk between two reads of its stat file over `elapsed_s`: commands and bytes
/// per direction (exact, every command), the mean requests in flight over the span (time_in_queue / elapsed) and
/// while busy (summed request times per direction / io_ticks: Little's law over the busy time). `traced_cmds`:
/// the commands the trace's histograms counted, for the traced share.
nlohmann::json disk_stat_json(const DiskStat& a, const DiskStat& b, double elapsed_s, uint64_t traced_cmds);

/// Attaches and detaches the block programs of a loaded, attached trace in windows (DutySpec). A window: the
/// completion programs are attached first, then insert and issue (as attach_in_order does); the window's start
/// goes to the BPF global duty_open_ns, so that completions of requests issued before it are counted apart
/// (KVIO_CNT_DUTY_BEFORE). Its end: insert and issue detached, then after kDutyTailS the completions; the sampled
/// requests still in flight then are released and counted as cut. Each window starts with a fresh in-flight count
/// (the requests in flight now, from the stat file, as the trace's start does). The first window is the trace's
/// start (the programs are attached when this is made) and lasts until ON s after the traced disks' first command
/// (their stat files read every loop, ~100 ms, until then): a workload started after the tracer is traced from its
/// start.
class DutyCycle {
public:
    DutyCycle(kvio_trace_bpf* s, DutySpec spec, std::vector<uint32_t> slot_devs, uint64_t t0_ns);
    /// Opens or closes a window when it is time.
    void service(uint64_t now_ns);
    /// Whether the issue programs are attached now.
    bool open() const { return phase_ == Phase::Open; }
    /// ms until the next change, at most `cap`.
    int timeout_ms(uint64_t now_ns, int cap) const;
    /// The "duty" object of kvio.trace/1: the cycle, windows, time traced, cut and before-window counts, and per
    /// traced disk its disk_stat_json over the trace (`devices`: the summary's devices, for the traced commands).
    /// `bpf_run_ns`: the programs' run time (--stats), else 0.
    nlohmann::json summary(uint64_t end_ns, const nlohmann::json& devices, uint64_t duty_before,
                           uint64_t bpf_run_ns) const;

private:
    enum class Phase { Open, Tail, Off };
    struct Group {
        bpf_program* prog;
        bpf_link** link;
        bool cycled = false;  ///< attached when the window closed: attached again at the next
    };
    void open_window(uint64_t now_ns);
    void close_issues(uint64_t now_ns);
    void close_completions();
    void reset_depths();
    uint64_t sweep_cut();

    kvio_trace_bpf* s_;
    DutySpec spec_;
    std::vector<uint32_t> slot_devs_;
    std::vector<DiskStat> start_;
    uint64_t t0_ns_;
    /// The cycle's start: the trace's start until a traced disk saw its first command (anchored_), then that moment;
    /// the first window lasts until ON s after it, window k opens at sched0_ns_ + (k - 1) PERIOD.
    uint64_t sched0_ns_ = 0;
    bool anchored_ = false;
    Phase phase_ = Phase::Open;
    uint64_t window_start_ns_;
    uint64_t next_ns_;  ///< the next change: the window's end, the tail's end or the next window's start
    uint64_t windows_ = 1;
    uint64_t traced_ns_ = 0;  ///< time the issue programs were attached, closed windows
    uint64_t cut_ = 0;
    std::vector<Group> issues_, completions_;
    std::set<std::string> cycled_names_;  ///< the programs detached at least once
};

}  // namespace kvio::trace
