// `kvio distill`: trace -> fio job (+ exact iolog), and the closed-loop fidelity check (--verify). The work is
// distiller::distill(); this shell binds the flags and turns its outcome into an exit status.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "distiller/distill.h"
#include "cli/commands.h"
#include "common/stop_signal.h"

namespace kvio::cli {

namespace {
struct DistillArgs {
    distiller::DistillOptions o;
    std::string mode = "count";
    std::string level = "auto";
    std::vector<std::string>
        stray;  ///< words given without an option (`kvio distill trace.jsonl`): refused with the fix
};

void run_distill(const DistillArgs& a) {
    distiller::DistillOptions o = a.o;
    o.mode = a.mode == "time" ? distiller::JobMode::Time : distiller::JobMode::Count;
    o.level = a.level == "device" ? distiller::DistillLevel::Device
              : a.level == "file" ? distiller::DistillLevel::File
              : a.level == "both" ? distiller::DistillLevel::Both
                                  : distiller::DistillLevel::Auto;
    o.print = &std::cout;
    o.diag = &std::cerr;
    // A stop while the trace is read (a large one takes a while): one line and 128 + N, not the signal's default
    // action. Until the job is derived; --verify installs its own handlers for the replay.
    // distill() reads `stop` only before on_derived, so the flag never outlives its scope in use.
    std::optional<StopSignal> loading(std::in_place, StopSignal::Options{.restart = true});
    o.stop = loading->flag();
    o.on_derived = [&] { loading.reset(); };
    const distiller::DistillResult r = distiller::distill(o);
    if (r.missed) {
        std::fprintf(stderr, "kvio distill: the replay's worst size TV exceeds --max-tv %.4f\n", o.max_tv);
        throw CLI::RuntimeError(1);
    }
}
}  // namespace

void add_distill_command(CLI::App& app) {
    auto a = std::make_shared<DistillArgs>();
    auto* sub = app.add_subcommand(
        "distill",
        "Turn a device trace into a fio job (and an exact fio iolog), and score how faithfully it replays.\n"
        "Every job value is derived from the trace; the job's header says from what, and what could not be inferred.\n"
        "Rules: docs/distill.md.");
    sub->add_option("--events", a->o.events,
                    "kvio.events/1 JSONL (or a kvio.events.bin/1 capture) from `kvio trace --events` (preferred)");
    sub->add_option("--trace-json", a->o.trace_json,
                    "kvio.trace/1 from `kvio trace --json` (histograms; used without --events)");
    sub->add_option("--dev", a->o.dev,
                    "distill only this device, \"MAJ:MIN\" or name (default: every device of the trace, each with "
                    "its own sections)");
    sub->add_option("--pid", a->o.pid, "keep only commands submitted by this pid");
    sub->add_option("--comm", a->o.comm, "keep only commands submitted by tasks with this comm");
    sub->add_option("-o,--output", a->o.out, "write the fio job here (default: print it)");
    sub->add_option(
           "--filename", a->o.filenames,
           "fio target (file or block device), never defaulted; without it the job sets no filename (give it on fio's "
           "command line); needed by --verify and --iolog. Several devices: DEV=PATH for each (DEV as --dev takes it), "
           "repeatable")
        ->allow_extra_args(false);
    sub->add_option("--mode", a->mode,
                    "how each section ends: count (the trace's number of commands, number_ios) or time (the trace's "
                    "duration, runtime)")
        ->capture_default_str()
        ->check(CLI::IsMember({"count", "time"}));
    sub->add_option("--runtime", a->o.runtime_s,
                    "the whole job's runtime in seconds (implies --mode time; phases get their share)")
        ->check(positive_integer());
    sub->add_option("--max-phases", a->o.max_phases,
                    "at most this many phases (1: one flat section for the whole trace)")
        ->capture_default_str()
        ->check(positive_integer());
    sub->add_option("--nr-requests", a->o.nr_requests,
                    "the source device's tag count, caps iodepth (default: /sys/block/DISK/queue/nr_requests when the "
                    "traced disk exists here)");
    sub->add_option("--iolog", a->o.iolog,
                    "also write an exact replay log in fio iolog v3 format (timestamps µs, offsets bytes)");
    sub->add_flag(
        "--verify", a->o.verify,
        "run the job with fio on --filename (a block device, not the traced one) under `kvio trace`, and print the "
        "fidelity score, whole run and window by window: size TV per direction, read-share error, queue-depth TV, "
        "sequential-share error, the phase sequence, D2C ratios");
    sub->add_flag("--force", a->o.force,
                  "with --verify: let a job that writes overwrite a target whose first MiB holds data (a filesystem "
                  "signature, a partition table, an earlier job's bytes); a mounted, in-use or read-only target is "
                  "always refused");
    sub->add_flag(
        "--keep-files", a->o.keep_files,
        "with --verify and no -o: keep the private directory (under $TMPDIR, else /tmp) holding the job, the "
        "replay's trace, fio JSON and log, and name it on stderr (default: removed at the end; with -o they are "
        "written next to the job and kept)");
    sub->add_option(
           "--max-tv", a->o.max_tv,
           "with --verify: exit 1 when the replay's worst size TV (whole run or any window) is above this (for CI)")
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--level", a->level,
                    "device (the device's commands, as traced), file (the application's own file calls, from "
                    "`trace --syscalls` records, reissued on a filesystem: for page-cache workloads), both (the file "
                    "job beside -o as NAME.file.fio), or auto: file when most of the device's bytes came through the "
                    "page cache (docs/distill.md, \"Two levels\")")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "device", "file", "both"}));
    sub->add_option("--directory", a->o.directory,
                    "the file level: the directory (absolute) the job's files live in (default /mnt/kvio-file)");
    sub->add_option("--target", a->o.target,
                    "with --verify, the file level: the block device a filesystem is made on for the replay (a "
                    "mounted one is refused; one holding data unless --force)");
    sub->add_option("--fs", a->o.fs_type, "with --target: the filesystem made there (ext4 or xfs)")
        ->default_str("ext4")
        ->check(CLI::IsMember({"ext4", "xfs"}));
    sub->add_option("--json", a->o.json_out,
                    "write the derived options, phases (and the fidelity numbers) as JSON to FILE; - = stdout "
                    "(instead of the text output)");
    // A trace given as a bare word is the commonest slip: say which option takes it rather than "not expected".
    sub->add_option("stray", a->stray)->group("");
    sub->callback([a] {
        if (!a->stray.empty())
            throw UsageError("'" + a->stray.front() +
                             "' is not an option: give the trace as --events FILE (kvio trace --events) or "
                             "--trace-json FILE (kvio trace --json)");
        run_distill(*a);
    });
}

}  // namespace kvio::cli
