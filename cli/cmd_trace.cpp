// `kvio trace`: the storage latency stack of whatever runs on the machine.
#include <algorithm>
#include <csignal>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include "common/error.h"
#include "common/jsonl.h"
#include "cli/commands.h"
#include "diagnose/diagnose.h"
#include "trace/file_table.h"
#include "trace/trace_positionals.h"
#include "report/perfetto_timeline.h"
#include "trace/tracer.h"

namespace kvio::cli {

namespace {
/// `kvio trace --perfetto`: the timeline of the events just written (a temporary capture is removed after).
void write_trace_timeline(const std::string& events, const std::string& out, bool temp_events) {
    report::TimelineOptions t;
    t.events = events;
    t.out = out;
    report::TimelineStats s;
    try {
        s = report::write_perfetto(t);
    } catch (...) {
        if (temp_events) std::remove(events.c_str());
        throw;
    }
    if (temp_events) std::remove(events.c_str());
    std::cerr << "kvio trace: timeline " << out << ": " << s.commands << " commands, " << s.syscalls << " syscalls\n";
}
/// Refuses a --perfetto FILE whose directory is missing or not writable before tracing starts, naming the user's
/// path (the temporary capture next to it would otherwise be the first file to fail, after the trace).
void check_perfetto_dir(const std::string& out) {
    std::filesystem::path dir = std::filesystem::path(out).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw Error("--perfetto " + out + ": cannot write: " + dir.string() + " is not a directory");
    if (::access(dir.c_str(), W_OK) != 0)
        throw Error("--perfetto " + out + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
}
/// --duration's check: a finite number of seconds >= 0.
CLI::Validator seconds_validator() {
    return CLI::Validator(
        [](std::string& v) {
            double d = 0;
            try {
                d = std::stod(v);
            } catch (const std::exception&) {
                return std::string("not a number of seconds: " + v);
            }
            return std::isfinite(d) && d >= 0 ? std::string() : std::string("must be a finite number >= 0, got " + v);
        },
        "SECONDS>=0");
}

/// --qd-sample's check: a power of two from 1 to trace::kMaxQdSample.
CLI::Validator qd_sample_validator() {
    return CLI::Validator(
        [](std::string& v) {
            unsigned long n = 0;
            try {
                n = std::stoul(v);
            } catch (const std::exception&) {
                return std::string("not a number: ") + v;
            }
            return n >= 1 && n <= trace::kMaxQdSample && !(n & (n - 1))
                       ? std::string()
                       : "must be a power of two from 1 to " + std::to_string(trace::kMaxQdSample);
        },
        "N");
}

/// Completes `opts` from the positionals (INTERVAL [COUNT], -- COMMAND) and --perfetto (a temporary binary capture
/// when there is no --events FILE), refusing the combinations that cannot work. Returns whether the capture is
/// temporary.
bool complete_trace_options(trace::TraceOptions& opts, const std::vector<std::string>& positionals, const CLI::App& sub,
                            const std::string& perfetto) {
    // CLI11 keeps a "--" that came before every positional among its leftovers, one after them among the words.
    auto left = sub.remaining();
    bool dashdash_first = std::find(left.begin(), left.end(), "--") != left.end();
    auto pos = trace::split_trace_positionals(positionals, dashdash_first);
    opts.interval_s = pos.interval_s;
    opts.interval_count = pos.count;
    opts.command = pos.command;
    // 1 is the default, exact depth: only sampling (N > 1) is at odds with --events' exact per-command depths, and
    // --perfetto without --events traces into a temporary --events capture (the sampling would be dropped
    // silently).
    if (opts.qd_sample > 1 && !opts.events_path.empty())
        throw UsageError("--events excludes --qd-sample " + std::to_string(opts.qd_sample) +
                         " (--events records carry each command's exact depth; --qd-sample 1 is accepted)");
    if (opts.qd_sample > 1 && !perfetto.empty())
        throw UsageError("--perfetto excludes --qd-sample " + std::to_string(opts.qd_sample) +
                         " (its commands come from an --events capture, which records each command's exact depth; "
                         "--qd-sample 1 is accepted)");
    if (!perfetto.empty() && opts.events_path == "-")
        throw UsageError("--perfetto reads the commands back from --events FILE: not stdout");
    if (!perfetto.empty()) check_perfetto_dir(perfetto);
    const bool temp_events = !perfetto.empty() && opts.events_path.empty();
    if (temp_events) {
        opts.events_path = perfetto + ".events.kvb";
        opts.events_bin = true;
    }
    if (opts.files && opts.block_only)
        throw UsageError(
            "--files excludes --block-only (the application's bytes per file come from the syscall "
            "programs --block-only leaves out, and so does the writeback a command filter follows)");
    if (opts.syscall_events && opts.events_path.empty())
        throw UsageError("--syscalls writes syscall records into --events FILE: give --events");
    if (!opts.events_path.empty() && opts.events_path == opts.json_path)
        throw UsageError("--events and --json name the same file (" + opts.json_path +
                         "): one would overwrite the other");
    return temp_events;
}

/// `kvio trace`'s run: the trace, then the --perfetto timeline; a stop signal or the command's failure becomes the
/// exit status (128 + signal, the command's status).
void run_trace_command(trace::TraceOptions& opts, const std::vector<std::string>& positionals, const CLI::App& sub,
                       const std::string& perfetto, bool diagnosis) {
    const bool temp_events = complete_trace_options(opts, positionals, sub, perfetto);
    auto res = trace::run_trace(opts);
    if (diagnosis) {  // before the timeline, which removes a temporary capture; stdout --events cannot be read back
        const auto findings =
            diagnose::diagnose({res.summary, opts.events_path == "-" ? std::string() : opts.events_path});
        if (!opts.json_path.empty()) {  // the summary again, with the findings (docs/formats.md, kvio.trace/1)
            res.summary["diagnosis"] = diagnose::to_json(findings);
            write_json_file(opts.json_path, res.summary);
        }
        std::cout << diagnose::to_text(findings) << std::flush;
    }
    if (!perfetto.empty()) write_trace_timeline(opts.events_path, perfetto, temp_events);
    if (res.stopped_by) {  // outputs are flushed; exit as a shell reports a job ended by that signal
        std::cerr << "kvio trace: stopped by signal " << res.stopped_by << " (" << strsignal(res.stopped_by)
                  << "); outputs written\n";
        throw CLI::RuntimeError(128 + res.stopped_by);
    }
    if (!opts.command.empty() && res.command_status != 0) {
        std::cerr << "kvio trace: the traced command exited with status " << res.command_status << "\n";
        throw CLI::RuntimeError(res.command_status);
    }
}
}  // namespace

/// trace's options that group its totals: by process, by cgroup, by file (--files, --under, --group-by).
void add_grouping_options(CLI::App& sub, const std::shared_ptr<trace::TraceOptions>& opts) {
    auto* per_process = sub.add_flag_function(
        "--per-process", [opts](int64_t) { opts->group_by = trace::GroupBy::Process; },
        "Group block read/write totals and D2C by submitting process (biotop): printed, and \"groups\" in --json");
    sub.add_flag_function(
           "--per-cgroup", [opts](int64_t) { opts->group_by = trace::GroupBy::Cgroup; },
           "Group block read/write totals and D2C by the submitter's cgroup v2 (a container, a systemd unit)")
        ->excludes(per_process);
    auto* files = sub.add_flag(
        "--files", opts->files,
        "Attribute each device command to the file whose data it moves, in the kernel (page-cache pages: buffered "
        "writeback, readahead; the syscall's or io_uring SQE's file: direct I/O), and print a table per file: device "
        "commands, bytes, sizes and D2C per direction, the application's own read/write bytes on the file, and the "
        "page-cache share 1 - device/app; \"files\" in --json, ino/fs_dev/gen on --events block records");
    sub.add_option("--under", opts->files_under,
                   "With --files: only files below this directory in the table (an existing directory; symbolic links "
                   "and a relative path are resolved when the command line is read)")
        ->needs(files)
        ->check(CLI::Validator(
            [](std::string& dir) {
                if (dir.empty()) return std::string("an empty path: give a directory");
                std::error_code ec;
                const auto real = std::filesystem::canonical(dir, ec);
                if (ec) return dir + ": " + ec.message();
                if (!std::filesystem::is_directory(real)) return dir + ": not a directory";
                dir = real.string();
                return std::string();
            },
            "DIR"));
    sub.add_option("--group-by", opts->files_group_by,
                   "With --files: a row per distinct match of this regex (ECMAScript, at most " +
                       std::to_string(trace::kMaxGroupByChars) +
                       " characters) over the path, its first capture group when it has one (e.g. '^(.*)/' per "
                       "directory); unmatched files keep their own row")
        ->needs(files)
        ->check(CLI::Validator(
            [](const std::string& pattern) {
                try {
                    trace::group_by_regex(pattern);
                    return std::string();
                } catch (const Error& e) {
                    return std::string(e.what());
                }
            },
            "REGEX"));
}

void add_trace_command(CLI::App& app) {
    auto opts = std::make_shared<trace::TraceOptions>();
    auto positionals = std::make_shared<std::vector<std::string>>();
    auto* sub = app.add_subcommand(
        "trace",
        "Attach CO-RE BPF programs (block, NVMe, syscall, io_uring tracepoints) and report the storage latency\n"
        "stack: D2C, Q2D, VFS, fsync and gap histograms, command sizes (bssplit), queue depth, LBA heatmap.\n"
        "Stops on --duration, when COMMAND (or every -p process) exits, after COUNT intervals, or on "
        "Ctrl-C/SIGTERM/SIGHUP\n"
        "(a running COMMAND then gets SIGTERM); outputs are always flushed. Exit status: COMMAND's own, else 0; 128 + "
        "the\n"
        "signal when a signal came before one of those ends (a trace with none ends normally on the signal: 0).\n"
        "INTERVAL [COUNT] (biolatency/iostat habit): every INTERVAL seconds a line per device (IOPS, MB/s, D2C\n"
        "p50/p99/p99.9, queue depth) and that interval's D2C histograms; stop after COUNT intervals.\n"
        "--listen ADDR:PORT serves the histograms and counters as Prometheus metrics at /metrics until stopped.\n"
        "Example: kvio trace -d loop0 --events cmds.jsonl --json trace.json -- fio job.ini\n"
        "         kvio trace -d nvme0n1 1 10          kvio trace --listen 127.0.0.1:9435");
    sub->add_option("-d,--device", opts->devices,
                    "Trace only this disk (a partition traces its whole disk): name (vda, loop3, nvme0n1) or MAJ:MIN; "
                    "repeatable (-d a -d b) or a comma-separated list (-d a,b)")
        ->delimiter(',')
        ->allow_extra_args(false);  // one value per -d: `-d loop1 1 3` leaves INTERVAL COUNT alone
    auto* pid = sub->add_option("-p,--pid", opts->pids,
                                "Trace only I/O submitted by this process and its threads; repeatable. "
                                "The trace ends when every -p process has exited")
                    ->allow_extra_args(false)
                    ->check(positive_integer());
    sub->add_flag("--children", opts->children,
                  "With -p: also the processes below it, those running now and those it forks "
                  "while traced (fio's job processes, a shell's commands), as -- COMMAND does")
        ->needs(pid);
    sub->add_option("-c,--comm", opts->comms,
                    "Trace only tasks whose comm is exactly this (e.g. vllm; the kernel keeps 15 characters: "
                    "VLLM::EngineCor); repeatable, max 4")
        ->allow_extra_args(false);
    sub->add_option("--cgroup", opts->cgroup, "Trace only tasks in this cgroup v2 directory");
    sub->add_option("--duration", opts->duration_s,
                    "Stop after this many seconds; 0 (default): until COMMAND exits or Ctrl-C")
        ->check(seconds_validator());
    auto* events = sub->add_option(
        "--events", opts->events_path,
        "Write one record per device command (kvio.events/1 JSONL; see --events-format; - for stdout, where a traced "
        "COMMAND's own stdout then goes to stderr), at its completion; commands whose completion was not seen (in "
        "flight at stop) are marked complete_lost; a FILE ending in .zst is zstd-compressed, its frame ended at stop");
    sub->add_option_function<std::string>(
           "--events-format", [opts](const std::string& f) { opts->events_bin = f == "bin"; },
           "Format of --events: jsonl (default, kvio.events/1) or bin (kvio.events.bin/1: the kernel's records as they "
           "are, "
           "no encoding while tracing; validate, distill and replay read it, `kvio dump` prints it as kvio.events/1)")
        ->check(CLI::IsMember({"jsonl", "bin"}))
        ->needs(events);
    auto* syscalls =
        sub->add_flag("--syscalls", opts->syscall_events, "With --events: also write a record per traced syscall");
    sub->add_flag(
           "--block-only", opts->block_only,
           "Trace block (and NVMe) commands only: no syscall program, so no vfs_read/vfs_write/fsync/gap histograms "
           "and no io_uring user_data in --events records (validate joins by offset; distill cannot tell io_uring from "
           "libaio and writes ioengine=libaio). While any syscall tracepoint "
           "is attached every syscall on the machine takes the kernel's slow path (~65 ns more per syscall on a "
           "2-core VM, docs/performance.md); --block-only leaves them on the fast one")
        ->excludes(syscalls);
    auto perfetto = std::make_shared<std::string>();
    sub->add_option(
        "--perfetto", *perfetto,
        "At the end, write the commands (and --syscalls) as a timeline for ui.perfetto.dev / chrome://tracing "
        "(Chrome JSON trace events; `kvio dump --perfetto` adds object ops; a FILE ending in .zst is zstd-compressed); "
        "without --events FILE the commands go through a temporary capture next to it");
    sub->add_flag("--breakdown", opts->breakdown,
                  "Also count the block layer's merges (request merges, bio back and front merges), bio splits and "
                  "requeues per device and direction (blktrace's M/F/X/R events); in --json as \"block_events\", "
                  "printed after the summary, and as kvio_block_events_total with --listen");
    sub->add_option("--json", opts->json_path, "Write the summary and histograms (kvio.trace/1 JSON)");
    auto diagnosis = std::make_shared<bool>(false);
    sub->add_flag("--diagnose", *diagnosis,
                  "At the end, print a diagnosis from the trace (docs/diagnose.md): each finding with its figures and "
                  "what to change (low queue depth where the device did more, commands split at max_sectors_kb, reads "
                  "from the page cache, fsync-dominated writes, small writes amplified, unaligned I/O, queue wait, "
                  "requeues, merges). With --events the per-command rules run too (with --syscalls the syscall "
                  "ones); with --json the findings go into the summary as \"diagnosis\" (kvio.diagnosis/1). "
                  "`kvio report TRACE.json --events FILE` gives the same from saved files");
    sub->add_flag("-q,--quiet", opts->quiet, "No human summary on stdout");
    sub->add_flag(
        "--stats", opts->stats,
        "Report what each BPF program cost the kernel while tracing: runs, mean ns per run, ns per device command "
        "(the kernel's own accounting, BPF_ENABLE_STATS, on for the trace only); in --json as \"bpf_stats\", "
        "printed after the summary (on stderr with -q)");
    sub->add_option(
           "--qd-sample", opts->qd_sample,
           "Read the queue depth at dispatch (the qd_read/qd_write histograms) at 1 issue in N, N a power of two "
           "up to " +
               std::to_string(trace::kMaxQdSample) +
               ", each sample counted N times (counts and mean "
               "kept; \"qd_sample_every\" in --json). Default 1: every command, exact. A sampled issue is the only "
               "one that reads the completing CPU's counter: ~40-90 ns per command less at N=16 on a 2-core VM "
               "(docs/performance.md). --events records always carry each command's exact depth: with --events (or "
               "--perfetto) only 1")
        ->check(qd_sample_validator());
    sub->add_option("--d2c-sample", opts->d2c_sample,
                    "Time 1 request in N (D2C, Q2D and its queue depth; N a power of two up to " +
                        std::to_string(trace::kMaxQdSample) +
                        "), each sample counted N times (\"d2c_sample_every\" in --json); the others are counted "
                        "(commands, bytes, sizes, LBA, errors: exact) with no in-flight state. Which request: a hash "
                        "of it and its allocation time. Default 1: every request timed. Histogram mode only (not with "
                        "--events, --perfetto, a task filter, --per-process/--per-cgroup or --files): about half the "
                        "BPF time per command on a 2-core VM (docs/performance.md)")
        ->check(qd_sample_validator());
    sub->add_option("--duty", opts->duty,
                    "ON/PERIOD seconds (e.g. 1/10): attach the block programs only ON s in every PERIOD s (longer "
                    "until 1024 issues; a direction the last window did not see opens one at once), so a "
                    "CPU-bound device pays their time per command ON/PERIOD of the time; the latency and depth "
                    "histograms come from the windows, the commands, bytes and mean depth of the whole run from "
                    "the disks' /sys stat files (\"duty\" in --json; docs/trace.md, \"Duty-cycled tracing\"). "
                    "Histogram mode with --block-only only");
    sub->add_option("--lba-bucket", opts->lba_bucket_bytes, "Bucket width of the LBA heatmap, bytes (default 10 GiB)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Validator(
            [](std::string& v) { return v == "0" ? std::string("must be at least 1 byte") : std::string(); },
            "BYTES>0"));
    sub->add_option("--ready-file", opts->ready_file,
                    "Create this file (\"ready\") once every program is attached: a parent process starting kvio trace "
                    "waits for it before issuing the I/O to trace");
    sub->add_option(
        "--listen", opts->listen,
        "Serve Prometheus metrics (text format, or OpenMetrics when the scraper asks for it) at "
        "http://ADDR:PORT/metrics, read from the in-kernel histograms at each scrape; runs until Ctrl-C/SIGTERM "
        "(or --duration, COMMAND, COUNT), which still write --json. ADDR: 127.0.0.1, [::1], a host name, or "
        "empty (:9435, or a bare 9435) for loopback only; 0.0.0.0:PORT or [::]:PORT for every address; PORT 0 "
        "picks a free one (printed on stderr). Limits: 64 connections, 16 KiB of headers, the request within 5 s");
    sub->add_option(
        "--prom-textfile", opts->prom_textfile,
        "Write the same metrics (text format) to FILE atomically every INTERVAL (default every 10 s) and at "
        "stop, for node_exporter's textfile collector (FILE ending in .prom in its directory)");
    add_grouping_options(*sub, opts);
    sub->add_option(
        "args", *positionals,
        "[INTERVAL [COUNT]] [-- COMMAND [ARGS...]]: print every INTERVAL seconds (COUNT times); run COMMAND, "
        "trace it and its children for its lifetime");
    sub->positionals_at_end();
    sub->callback([opts, positionals, sub, perfetto, diagnosis] {
        run_trace_command(*opts, *positionals, *sub, *perfetto, *diagnosis);
    });
}

}  // namespace kvio::cli
