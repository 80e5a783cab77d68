// `kvio trace --duty ON/PERIOD`: the block programs attached only in windows of ON seconds every PERIOD seconds,
// and the disks' whole-run figures from the kernel's own accounting (/sys/dev/block/MAJ:MIN/stat), so that the
// timing histograms come from the windows while commands, bytes and the mean depth cover the whole run
// (docs/trace.md, "Duty-cycled tracing").
#pragma once
#include <array>
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

/// The most the completion programs stay attached after a window's issue programs are detached (s): they leave as
/// soon as no request issued in the window is in flight, at the latest after this; those still in flight then are
/// counted as cut. A slow disk's deep queue drains in well under it; 4 KiB reads on a loop device take microseconds.
constexpr double kDutyTailS = 0.2;

/// A window stays open past ON s until the traced disks' programs counted this many issues in it (or until the tail
/// bound before the next window's start): a disk of a few hundred commands a second, whose commands cost the CPU
/// nothing worth saving, is then traced for most of a period, and a short job's phases all fall in a window. At
/// --d2c-sample 16 it is 64 timed requests; on a CPU-bound disk (100 k IOPS) it takes 10 ms, far inside ON.
constexpr uint64_t kDutyMinIssues = 1024;

/// One window's accounting (kvio.trace/1 "duty" "window_log"). Every request the issue programs counted in the window
/// is completed in it or its tail, cut, lost or still in flight at the stop: issued = completed + cut + lost +
/// at_stop, exactly, when every request is timed (no --d2c-sample: its untimed requests have no state, and the
/// completions of those issued before the window count as completed) and none is requeued (counted at each issue).
struct DutyWindow {
    double start_s = 0;      ///< the issue programs attached, s after the trace's start
    double end_s = 0;        ///< the issue programs detached (0: open at the stop)
    double tail_s = 0;       ///< how long the completion programs stayed after end_s
    std::string why;         ///< "start" (the disks' first command), "period" or "phase" (DutyCycle)
    uint64_t issued = 0;     ///< issues the programs counted (slot_depths; commands the kernel counts finished)
    uint64_t completed = 0;  ///< completions of those seen (completion runs less outside and unmatched ones)
    uint64_t cut = 0;        ///< still in flight after the tail: released, never timed
    uint64_t lost = 0;       ///< lost_completes counted in the window
    uint64_t outside = 0;    ///< completions seen of requests issued outside it (excluded)
    uint64_t unmatched = 0;  ///< unmatched_completes counted in the window (0 unless a program missed an issue)
    uint64_t at_stop = 0;    ///< still in flight when the trace stopped in the window or its tail
};

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

/// Attaches and detaches the block programs of a loaded, attached trace in windows (DutySpec). A window opens with
/// the completion programs attached first, then insert and issue, then the window's start written to the BPF global
/// duty_open_ns, so that a completion without state of a request allocated before it is counted apart
/// (KVIO_CNT_DUTY_BEFORE). It closes with duty_open_ns set to all ones first (every completion without state is then
/// outside the window), then insert and issue detached, then an RCU grace period (no program run of theirs is left on
/// any CPU); the completion programs stay until none of the window's requests is in flight or kDutyTailS passes,
/// are detached, a grace period again, and the requests still in flight are released and counted as cut. Each
/// window starts a fresh in-flight count (the requests in flight now, from the stat file, as the trace's start does).
/// The first window is the trace's start (the programs are attached when this is made) and lasts until ON s after
/// the traced disks' first command (their stat files read every loop, ~100 ms, until then): a workload started
/// after the tracer is traced from its start. A window lasts past ON s until kDutyMinIssues issues. Between windows
/// the stat files are read every loop: a direction the last window saw none of (a job's read phase after its write
/// phase) opens a "phase" window at once, one between two scheduled windows.
class DutyCycle {
public:
    DutyCycle(kvio_trace_bpf* s, DutySpec spec, std::vector<uint32_t> slot_devs, uint64_t t0_ns);
    /// Opens or closes a window, or ends a tail, when it is time.
    void service(uint64_t now_ns);
    /// Whether the issue programs are attached now.
    bool open() const { return phase_ == Phase::Open; }
    /// ms until the next change, at most `cap`.
    int timeout_ms(uint64_t now_ns, int cap) const;
    /// At the stop, before the tracer's own sweep of what is in flight: logs the window open now (its requests
    /// still in flight: at_stop, left to that sweep).
    void finish(uint64_t now_ns);
    /// The "duty" object of kvio.trace/1: the cycle, windows, time traced, cut and before-window counts, the window
    /// log, and per traced disk its disk_stat_json over the trace (`devices`: the summary's devices, for the traced
    /// commands). `bpf_run_ns`: the programs' run time (--stats), else 0.
    nlohmann::json summary(uint64_t end_ns, const nlohmann::json& devices, uint64_t duty_before,
                           uint64_t bpf_run_ns) const;

private:
    enum class Phase { Open, Tail, Off };
    struct Group {
        bpf_program* prog;
        bpf_link** link;
        bool cycled = false;  ///< attached when the window closed: attached again at the next
    };
    struct Counts {
        uint64_t runs = 0, outside = 0, unmatched = 0, lost = 0;
    };
    void open_window(uint64_t now_ns, const char* why);
    void close_issues(uint64_t now_ns);
    void close_completions(uint64_t now_ns);
    bool anchor(uint64_t now_ns);
    bool phase_started();
    void log_window(uint64_t at_stop);
    void reset_depths();
    uint64_t window_issues() const;
    uint64_t live_issued() const;
    Counts read_counts() const;
    uint64_t sweep_cut();

    kvio_trace_bpf* s_;
    DutySpec spec_;
    std::vector<uint32_t> slot_devs_;
    std::vector<DiskStat> start_;
    uint64_t t0_ns_;
    bool anchored_ = false;
    Phase phase_ = Phase::Open;
    uint64_t window_start_ns_;
    uint64_t window_end_ns_ = 0;
    uint64_t hard_end_ns_ = ~0ULL;    ///< the open window closes by then, whatever its issues
    uint64_t tail_end_ns_ = 0;        ///< the tail's bound
    uint64_t next_ns_;                ///< the next change: the window's end, a tail check or the next window's start
    uint64_t next_sched_ns_ = ~0ULL;  ///< the next scheduled window's start (a PERIOD after the last one)
    bool phase_used_ = false;         ///< a phase window opened since the last scheduled one
    uint64_t windows_ = 1;
    uint64_t traced_ns_ = 0;  ///< time the issue programs were attached, closed windows
    uint64_t cut_ = 0;
    Counts at_open_;                          ///< counters when the window opened
    DutyWindow current_;                      ///< the window open or in its tail
    std::vector<DutyWindow> log_;             ///< the windows closed
    std::vector<DiskStat> open_stat_, seen_;  ///< per disk: at the window's start; at the last look between windows
    std::vector<std::array<bool, 2>> dirs_;   ///< per disk: reads, writes finished in the last window
    std::vector<Group> issues_, completions_;
    std::set<std::string> cycled_names_;  ///< the programs detached at least once
};

}  // namespace kvio::trace
