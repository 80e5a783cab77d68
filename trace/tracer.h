// `kvio trace`: attach the CO-RE programs of bpf/kvio_trace.bpf.c, collect, report.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::trace {

/// --per-process / --per-cgroup: how device totals and D2C are grouped by submitter (biotop).
enum class GroupBy { None, Process, Cgroup };

/// What to trace and where the results go. Empty filters mean "everything".
struct TraceOptions {
    std::vector<std::string> devices;  ///< names ("loop3") or "MAJ:MIN"; partitions map to their disk
    std::vector<uint32_t>
        pids;               ///< tgids; their threads (io_uring workers included) follow; the trace ends when all exited
    bool children = false;  ///< with pids: also the processes below them, those there now and those forked later
    std::vector<std::string> comms;  ///< task comm, exact match, at most KVIO_MAX_COMMS
    std::string cgroup;              ///< cgroup v2 directory
    double duration_s = 0;           ///< 0: until the command (or every pid) exits or SIGINT/SIGTERM/SIGHUP
    std::string events_path;         ///< kvio.events/1 JSONL (or kvio.events.bin/1), "" for none
    bool events_bin = false;         ///< write events_path as the binary capture kvio.events.bin/1
    bool syscall_events = false;     ///< also write "syscall" records
    bool block_only = false;         ///< --block-only: no syscall program (no VFS, fsync, gap histograms; --events
                                     ///< records carry no io_uring user_data): the machine's syscalls keep the
    ///< kernel's fast path (syscall tracepoints send every syscall through the slow one)
    std::string json_path;  ///< kvio.trace/1 summary, "" for none
    bool quiet = false;     ///< no human summary on stdout
    bool stats = false;     ///< BPF run-time statistics per program (summary "bpf_stats", printed)
    uint64_t lba_bucket_bytes = 10ULL << 30;
    std::vector<std::string> command;  ///< run this and trace it and its children for its lifetime
    std::string ready_file;            ///< created (containing "ready\n") once every program is attached, "" = none
    double interval_s = 0;             ///< INTERVAL: a line per device and D2C histograms every this many s, 0 = none
    uint64_t interval_count = 0;       ///< COUNT: stop after this many intervals, 0 = until stopped
    GroupBy group_by = GroupBy::None;  ///< --per-process / --per-cgroup
    std::string listen;                ///< --listen ADDR:PORT: serve /metrics (Prometheus), "" = none
    std::string prom_textfile;         ///< --prom-textfile FILE: the same metrics, rewritten atomically each interval
    bool breakdown = false;            ///< --breakdown: merges, splits, requeues per device and direction (bt_counts)
    uint32_t qd_sample = 1;      ///< --qd-sample N: queue depth read at 1 issue in N (power of two), 1 = every one
    uint32_t d2c_sample = 1;     ///< --d2c-sample N: 1 request in N timed (D2C, Q2D, depth), 1 = every one
    bool files = false;          ///< --files: each command's file, a table per file ("files" in the summary)
    std::string files_under;     ///< --under DIR: only files below DIR in the table
    std::string files_group_by;  ///< --group-by REGEX: a row per match over the path (first group if any)
    /// --duty ON/PERIOD (trace/duty.h): the block programs attached ON s in every PERIOD s; "" = always. Histogram
    /// mode with --block-only only; commands, bytes and the mean depth of the whole run from the disks' stat files.
    std::string duty;
};

/// Largest --qd-sample: a sample then stands for this many commands.
constexpr uint32_t kMaxQdSample = 1024;

/// Outcome of a trace, also written to TraceOptions::json_path.
struct TraceResult {
    nlohmann::json summary;  ///< the kvio.trace/1 document
    uint64_t events = 0;     ///< records written to the events file
    uint64_t dropped = 0;    ///< ring-buffer reservations that failed (events lost)
    int command_status = 0;  ///< exit status of the traced command (128+signal when killed)
    /// SIGINT/SIGTERM/SIGHUP that ended the trace before the end it was given (COMMAND's exit, every -p process's
    /// exit, --duration, COUNT intervals): `kvio trace` exits 128 + it. 0 when the trace reached that end, or had
    /// none but a stop (a bare `kvio trace`, `--listen`): then the stop is its normal end.
    int stopped_by = 0;
};

/// Runs a trace to completion. Throws kvio::Error for missing privileges/BTF/tracefs, an unknown
/// device, or an unwritable output. Outputs are always flushed, also when stopped by a signal.
TraceResult run_trace(const TraceOptions& opts);

}  // namespace kvio::trace
