// `kvio drives --job JOB.fio --drive NAME=PATH ...`: one fio job on many drives and hosts, side by side.
#include <iostream>
#include <memory>

#include "drives/drives.h"
#include "common/error.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/simulate_options.h"
#include "kvio_version.h"

namespace kvio::cli {

void add_drives_command(CLI::App& app) {
    auto o = std::make_shared<drives::DrivesOptions>();
    auto model = std::make_shared<ModelOptions>();
    auto* sub = app.add_subcommand(
        "drives",
        "Run one workload (a fio job, a kvio trace or kvio simulate) on several drives and hosts in interleaved "
        "rounds; before them, a short ceiling probe of each drive; the job may be distilled or any; rounds go A B C, "
        "B C A, ...; trace each local run at the "
        "device; print a table "
        "(median [min-max] per figure) and a verdict per neighbour in the ranking: 'A faster than B by X % (rounds "
        "don't overlap)' or 'inside noise'. Writes DIR/drives.json (kvio.drives/1) and DIR/drives.html. A mounted "
        "or read-only device is refused, one holding data in its first MiB unless --force. Remote targets "
        "(HOST[:PORT]:PATH) run through `fio --client` on hosts running `fio --server`, all hosts at once. Exit 1 when "
        "a target failed (the others' results are written), 2 for a usage error (options that do not go together, a "
        "missing --job or --events file), 128+N when stopped by signal N (what was measured is written). "
        "--job, --events and --simulate exclude each other. With --model, a KV line per drive: time to store and to "
        "load "
        "one KV object of the model at the measured mix, and the users' loads it sustains. docs/drives.md");
    auto* job = sub->add_option("--job", o->job_path,
                                "The fio job file; its filename=/directory= lines are replaced per target");
    auto* events =
        sub->add_option(
               "--events", o->events_path,
               "Instead of --job: a kvio trace (kvio.events/1 or .bin/1), distilled on the fly into the device "
               "job `kvio distill --level device` writes (saved as DIR/job.fio)")
            ->excludes(job);
    sub->add_option(
           "--simulate", o->simulate,
           "Instead of --job: the serving workload itself, `kvio simulate` with these flags (one quoted "
           "string, e.g. '--model llama3.1-8b --num-users 10 --duration 30 --gpu-mem-gb 0 --cpu-mem-gb 0 "
           "--seed 42 --storage-io direct') run on each drive: --cache-dir is a directory under a directory "
           "target, or the block device itself (which needs --storage-io direct or io_uring). Compared by "
           "the benchmark's storage tokens/s, with its read/write bandwidth and device P95s; local drives only; "
           "--load trace or both is refused with it (the simulation offers its own load) and --fio is not used")
        ->excludes(job)
        ->excludes(events);
    sub->add_option("--drive", o->drives,
                    "NAME=PATH (block device, file or directory here) or NAME=HOST[:PORT]:PATH (a host running "
                    "`fio --server`, port 8765 by default; an IPv6 HOST in brackets: [::1]); repeat per target")
        ->required();
    sub->add_option("--rounds", o->rounds, "Runs per target and load mode (min/median/max over them)")
        ->check(positive_integer())
        ->capture_default_str();
    sub->add_option("--load", o->load,
                    "closed: as fast as the job's depth allows (rate and thinktime lines dropped: capacity); trace: "
                    "open loop at the job's own rates and thinktime (refused for a job without rate/rate_iops); both")
        ->check(CLI::IsMember({"closed", "trace", "both"}))
        ->capture_default_str();
    sub->add_flag("--keep-thinktime", o->keep_thinktime,
                  "The closed loop keeps the job's thinktime lines: the workload at its own pace between bursts "
                  "(how each drive serves it as traced), not the drive's capacity at the job's depth");
    sub->add_flag("--trace-every-command", o->trace_every_command,
                  "Trace every command of each run; by default the tracer's block programs are attached 0.5 s in "
                  "every 5 s (kvio trace --duty 0.5/5: a CPU-bound device pays their time a tenth of the time), the "
                  "latency and depth histograms from those windows, commands, bytes and mean depth from the disk's "
                  "/sys stat over the whole run (\"trace_duty\" in drives.json; docs/drives.md)");
    sub->add_flag("--parallel", o->parallel,
                  "Run the local drives of a round all at once instead of one after another (each still traced at "
                  "its own disk): a round takes the slowest drive's time; the drives then share this host's CPUs, "
                  "memory and, for loop devices, their backing storage");
    sub->add_option("-o,--output-dir", o->out_dir,
                    "Results directory (default kvio-drives-YYYYMMDD-HHMMSS); an existing directory is written into "
                    "(drives.json, drives.html, job.fio, runs/ and probe/ replaced, nothing else touched); a path "
                    "that is not a directory is refused");
    sub->add_option("--probe-seconds", o->probe_seconds,
                    "Length of each ceiling probe in seconds, at least 0.1; 0 skips the probe")
        ->check(CLI::Number)
        ->check(CLI::Validator(
            [](std::string& v) {
                const double s = std::stod(v);
                return s == 0 || s >= 0.1 ? std::string() : "must be 0 (no probe) or at least 0.1, got " + v;
            },
            "0 or >= 0.1"))
        ->capture_default_str();
    sub->add_option("--probe-bytes", o->probe_bytes,
                    "Region each probe covers, in bytes or with a suffix (64m, 1g: powers of 1024), at least 1 MiB "
                    "(capped at the target's size)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Range(uint64_t(1) << 20, uint64_t(1) << 60, "1 MiB to 1 EiB"))
        ->capture_default_str();
    sub->add_flag("--force", o->force, "Write a block device even when its first MiB holds data");
    sub->add_option("--fio", o->fio,
                    "The fio binary, or a wrapper that execs it (e.g. to enter a cgroup); not used by --simulate")
        ->capture_default_str();
    sub->add_option("--remote-timeout", o->remote_timeout_s,
                    "End a remote run (and fail its host) after this many seconds; 0: wait")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    sub->add_option("--metrics", o->metrics,
                    "NAME=HOST:PORT: the `kvio trace -d DISK --listen HOST:PORT` exporter on remote drive NAME's host, "
                    "scraped before and after each run for its device-side figures");
    auto* kv = sub->add_option_group("KV line",
                                     "With --model or --hf-config: per drive, the time to store and to "
                                     "load one KV object of the model, and the users' loads it sustains");
    add_model_options(kv, *model);
    kv->add_option("--kv-user-rate", o->kv.user_objects_per_s,
                   "With --model: KV objects one user loads per second, to turn the KV line's loads/s into users")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    sub->callback([o, model] {
        o->kvio_version = KVIO_VERSION;
        o->check_simulate_args = check_simulate_args;
        if (!model->model.empty() || !model->hf_config.empty()) {
            if (!o->simulate.empty())
                throw UsageError(
                    "--model/--hf-config: the KV line is for --job and --events; --simulate reports "
                    "the benchmark's storage tokens/s for the model in its own flags");
            const workload::Geometry g = resolve_geometry(*model);
            o->kv.bytes = g.per_rank_bytes;
            o->kv.label = g.model.name + " " + workload::dtype_name(g.kv_dtype) + ", " +
                          std::to_string(g.chunk_tokens) + "-token chunk, tp " + std::to_string(g.tp) +
                          (g.tp > 1 ? " (one rank's object)" : "");
        }
        int st = drives::run_drives(*o, std::cout);
        if (st != 0) throw CLI::RuntimeError(st);
    });
}

}  // namespace kvio::cli
