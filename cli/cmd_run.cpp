// `kvio run`: the main job end to end — gen under trace, validate, distill, verify on a second device, report.html.
#include <csignal>
#include <cstring>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>

#include "common/error.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/simulate_options.h"
#include "report/report_html.h"
#include "run/run_pipeline.h"

namespace kvio::cli {

namespace {

/// `kvio run`'s options: the model's, the pipeline's, -q.
struct RunArgs {
    ModelOptions model;
    run::RunOptions run;
    bool quiet = false;
};

/// How many times the option `name` was given.
using OptionCount = std::function<size_t(const char*)>;

/// The options of --workload simulate, in their own help group.
void add_simulate_workload_options(CLI::App* sub, run::SimulateWorkload& w) {
    const char* sim_group = "Simulate workload (--workload simulate)";
    sub->add_option("--num-users", w.num_users, "Simulated users")
        ->capture_default_str()
        ->check(positive_integer())
        ->group(sim_group);
    sub->add_option("--duration", w.duration_s, "Seconds the simulation runs")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 3600.0))
        ->group(sim_group);
    sub->add_option("--storage-io", w.storage_io,
                    "Storage tier I/O: direct (O_DIRECT: every op's commands are projected exactly) "
                    "or buffered (the benchmark's pattern: page cache, fsync; joined by offset and time)")
        ->capture_default_str()
        ->check(CLI::IsMember({"direct", "buffered", "io_uring"}))
        ->group(sim_group);
    sub->add_option("--generation-mode", w.generation_mode,
                    "Sleep per generated token: none, fast (2 ms) or realistic (30 ms)")
        ->capture_default_str()
        ->check(CLI::IsMember({"none", "fast", "realistic"}))
        ->group(sim_group);
    sub->add_option("--image-size", w.image_bytes,
                    "Size of the sparse ext4 image (the storage tier takes 95 % of its free space)")
        ->transform(CLI::AsSizeValue(false))
        ->capture_default_str()
        ->group(sim_group);
    sub->add_option("--sim-arg", w.extra_args,
                    "One more argument for kvio simulate, repeatable, appended last (a repeated flag "
                    "takes the last value), e.g. --sim-arg=--cpu-mem-gb --sim-arg=1; checked by simulate's own parser "
                    "before any device is made")
        ->allow_extra_args(false)
        ->group(sim_group);
}

/// Refuses the options of the other workload than r.workload; --model given with simulate becomes its model.
void check_workload_options(run::RunOptions& r, const ModelOptions& model, const OptionCount& sub_count) {
    if (r.workload == "simulate") {
        for (const char* opt : {"--hf-config", "--kv-dtype", "--chunk-tokens", "--tp", "--num-chunks", "--engine",
                                "--layout", "--target"})
            if (sub_count(opt))
                throw UsageError(std::string(opt) +
                                 " is for --workload objects; --workload simulate takes --model, --num-users, "
                                 "--duration, --storage-io, --generation-mode, --image-size and --sim-arg");
        if (sub_count("--model")) r.sim.model = model.model;
    } else {
        for (const char* opt :
             {"--num-users", "--duration", "--storage-io", "--generation-mode", "--image-size", "--sim-arg"})
            if (sub_count(opt)) throw UsageError(std::string(opt) + " is for --workload simulate");
    }
}

/// The object geometry (bytes per object, objects) and the model arguments gen is given, from `model`.
void set_model(run::RunOptions& r, const ModelOptions& model) {
    workload::Geometry g = resolve_geometry(model);
    r.object_bytes = g.per_rank_bytes;
    r.objects = r.num_chunks * g.objects_per_chunk;
    r.model_args.clear();
    if (!model.hf_config.empty())
        r.model_args = {"--hf-config", model.hf_config};
    else
        r.model_args = {"--model", model.model};
    if (!model.kv_dtype.empty()) r.model_args.insert(r.model_args.end(), {"--kv-dtype", model.kv_dtype});
    r.model_args.insert(r.model_args.end(),
                        {"--chunk-tokens", std::to_string(model.chunk_tokens), "--tp", std::to_string(model.tp)});
}

/// The lines kvio run prints at its end: simulate's figures, validate and fidelity, the timeline, outputs and report.
void print_run_summary(const run::RunResult& res) {
    const auto& d = res.doc;
    const auto& f = d["fidelity"];
    if (d.contains("simulate")) {
        const auto& s = d["simulate"];
        std::printf("simulate: %llu requests in %.1f s (%.2f req/s), cache hit rate %.1f %%, %llu storage ops traced\n",
                    (unsigned long long)s["requests_completed"].get<uint64_t>(), s["elapsed_s"].get<double>(),
                    s["requests_per_second"].get<double>(), 100 * s["cache_hit_rate"].get<double>(),
                    (unsigned long long)s["storage_ops"].get<uint64_t>());
    }
    std::printf("validate: %s\n", res.summary_line.c_str());
    std::printf("fidelity: %s\n", f.value("summary", std::string("n/a")).c_str());
    std::printf("timeline: %s (ui.perfetto.dev or chrome://tracing)\n",
                d["timeline"]["path"].get<std::string>().c_str());
    std::printf("outputs in %s (%.1f s)\nreport: %s\n", d["out"].get<std::string>().c_str(), d["seconds"].get<double>(),
                res.report_path.c_str());
}

/// `kvio run`: --report-only re-renders a run directory's report; otherwise the pipeline, a stop signal exiting
/// 128 + signal after saying what was cleaned up.
void run_run_command(RunArgs& args, const std::string& report_only, const OptionCount& sub_count) {
    auto& r = args.run;
    if (!report_only.empty()) {
        report::write_report(report_only, report_only + "/report.html");
        std::printf("report: %s/report.html\n", report_only.c_str());
        return;
    }
    check_workload_options(r, args.model, sub_count);
    set_model(r, args.model);
    r.progress = args.quiet ? nullptr : &std::cerr;
    run::RunResult res;
    try {
        res = run::run_all(r);
    } catch (const run::Interrupted& e) {
        if (!e.validated.empty())
            std::fprintf(stderr, "kvio run: the ops the workload completed before the stop: validate: %s\n",
                         e.validated.c_str());
        std::fprintf(stderr, "kvio run: stopped by signal %d (%s); embedded loop devices detached, images removed\n",
                     e.signo, strsignal(e.signo));
        throw CLI::RuntimeError(128 + e.signo);
    }
    print_run_summary(res);
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunArgs>();
    o->model.model = "llama3.1-8b";
    o->run.num_chunks = 8;
    o->run.check_simulate_args = check_simulate_args;
    auto* sub = app.add_subcommand(
        "run",
        "The whole story on one device: `kvio gen` under `kvio trace --events`, `kvio validate`, `kvio distill` (fio "
        "job and "
        "iolog) and the job replayed under trace on a second device (fidelity), plus report.html — all in --out.\n"
        "Without --target it makes a sparse image under --out, attaches it as a loop device with direct I/O and "
        "detaches and "
        "removes it at the end (also on Ctrl-C, SIGTERM, SIGHUP or an error; after a SIGKILL a guard process does, and "
        "unmounts the "
        "simulate workload's ext4); the verify replay always uses a second such device.\n"
        "--workload simulate runs the serving workload instead: `kvio simulate` (a few users, 20 s, tiny-1b, every "
        "entry on "
        "storage) on ext4 made on the embedded loop device, under its own tracer, then the same validate, distill, "
        "verify and "
        "report, with the simulation's section (requests, QoS, tiers, hit rates, latency layers). Every run also "
        "writes "
        "timeline.json (open it in ui.perfetto.dev or chrome://tracing).\n"
        "Needs root. Example: sudo kvio run --num-chunks 8 --out /tmp/r1; sudo kvio run --workload simulate --out "
        "/tmp/r2");
    add_model_options(sub, o->model);
    sub->get_option("--model")->description(
        "Built-in model (default llama3.1-8b): tiny-1b (the MLPerf KV benchmark's, 24,576 B/token), llama3.2-1b, "
        "mistral-7b, llama2-7b, llama3.1-8b, llama3.1-70b-instruct, deepseek-v3, qwen3-32b, gpt-oss-20b, gpt-oss-120b");
    auto& r = o->run;
    sub->add_option(
        "--target", r.target,
        "Device, file or directory for gen (default: an embedded loop device over a sparse image in --out); "
        "its data is overwritten");
    sub->add_option("--engine", r.engine, "I/O engine of gen: posix, io_uring, uring_cmd")
        ->capture_default_str()
        ->check(CLI::IsMember({"posix", "io_uring", "uring_cmd"}));
    sub->add_option(
           "--layout", r.layout,
           "Object layout: slots (header + payload in fixed slots; default on devices and files) or files (one "
           "file per object; default on a --target DIRECTORY, which it needs)")
        ->check(CLI::IsMember({"slots", "files"}));
    sub->add_option("--num-chunks", r.num_chunks,
                    "KV chunks to store then load (objects = chunks × --tp); the default takes a few seconds here")
        ->capture_default_str()
        ->check(positive_integer());
    sub->add_option("--out", r.out_dir, "Output directory, new or empty (default ./kvio-run-YYYYMMDD-HHMMSS)");
    sub->add_flag("--keep", r.keep, "Keep the embedded image files (detached) instead of removing them");
    sub->add_flag("--force", r.force,
                  "Write a --target whose first MiB holds data (a filesystem signature or partition table); "
                  "a mounted one is always refused");
    sub->add_flag("-q,--quiet", o->quiet, "No progress lines on stderr");
    auto& w = r.sim;
    sub->add_option("--workload", r.workload,
                    "objects (default: kvio gen's stores then loads of --num-chunks chunks, exact and "
                    "fast) or simulate (the serving workload: kvio simulate on ext4)")
        ->capture_default_str()
        ->check(CLI::IsMember({"objects", "simulate"}));
    add_simulate_workload_options(sub, w);
    // Hidden: re-render OUT/report.html from an existing run directory (report development).
    auto report_only = std::make_shared<std::string>();
    sub->add_option("--report-only", *report_only, "")->group("");
    auto sub_count = [sub](const char* name) { return sub->get_option(name)->count(); };
    sub->callback([o, report_only, sub_count] { run_run_command(*o, *report_only, sub_count); });
}

}  // namespace kvio::cli
