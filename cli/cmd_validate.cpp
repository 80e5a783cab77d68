// `kvio validate`: score the device commands each KV object op caused against its projection.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <sys/resource.h>

#include "common/error.h"
#include "common/jsonl.h"
#include "cli/commands.h"
#include "validate/files.h"
#include "validate/gate.h"
#include "validate/objects.h"
#include "validate/synth.h"
#include "validate/validate.h"

namespace kvio::cli {

namespace {

/// `kvio validate`'s flags, bound by add_validate_command.
struct Opts {
    validate::Options o;
    std::string join = "auto", json_out, semantic_format = "auto", commands_format = "auto";
    bool timing = false, objects = false, partial = false;
    std::string synth_dir;
    validate::SynthSpec synth;
    bool synth_bin = false;
    validate::Gate gate;
};

/// The --synth-* options, under their own heading in --help.
void add_synth_options(CLI::App* sub, Opts& a) {
    // Synthetic inputs for benchmarks (docs/validate.md, docs/performance.md): listed under their own heading.
    const std::string synth = "Synthetic inputs (benchmarks; docs/validate.md)";
    sub->add_option(
           "--synth", a.synth_dir,
           "Write a synthetic DIR/semantic.jsonl and DIR/events.jsonl (a known answer: every op exact) and exit; "
           "DIR is created if absent")
        ->group(synth);
    sub->add_option("--synth-objects", a.synth.objects, "--synth: object ops to write (half stores, half loads)")
        ->capture_default_str()
        ->group(synth);
    sub->add_option("--synth-object-bytes", a.synth.object_bytes, "--synth: payload bytes of each object")
        ->capture_default_str()
        ->group(synth);
    sub->add_option("--synth-slots", a.synth.slots,
                    "--synth: slots on the device (0: one per object; loads reuse them)")
        ->capture_default_str()
        ->group(synth);
    sub->add_option("--synth-noise-per-op", a.synth.noise_per_op,
                    "--synth: untagged 4 KiB writes in the metadata region during each op")
        ->capture_default_str()
        ->group(synth);
    sub->add_option("--synth-engine", a.synth.engine,
                    "--synth: engine the ops claim: posix, or io_uring (commands tagged with user_data)")
        ->capture_default_str()
        ->check(CLI::IsMember({"posix", "io_uring"}))
        ->group(synth);
    sub->add_flag("--synth-bin", a.synth_bin,
                  "--synth: write DIR/events.kvb (kvio.events.bin/1) instead of events.jsonl")
        ->group(synth);
}

/// --synth writes its inputs and returns; else validate::run, the report, --json, --timing, and the exit status's
/// reasons (nothing measured, a missed gate) as errors.
void run_validate(Opts& a) {
    auto t0 = std::chrono::steady_clock::now();
    if (!a.synth_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(a.synth_dir, ec);
        if (ec) throw kvio::Error("--synth " + a.synth_dir + ": cannot create it: " + ec.message());
        const std::string ev = a.synth_bin ? "events.kvb" : "events.jsonl";
        uint64_t n = validate::synth_write(a.synth, a.synth_dir + "/semantic.jsonl", a.synth_dir + "/" + ev);
        std::printf("wrote %s/semantic.jsonl (%llu ops) and %s/%s (%llu commands)\n", a.synth_dir.c_str(),
                    (unsigned long long)a.synth.objects, a.synth_dir.c_str(), ev.c_str(), (unsigned long long)n);
        return;
    }
    if (a.objects) {  // ops that name their file (kvio import vllm-fs|lmcache-disk): joined by file
        if (a.o.commands.empty() || a.o.semantic.empty())
            throw UsageError("--objects: give --commands EVENTS (traced with --files) and --semantic SEMANTIC");
        if (a.join != "auto" && a.join != "files") throw UsageError("--objects joins by file: leave --join out");
        const validate::ObjectsReport r = validate::join_objects(a.o.semantic, a.o.commands, a.o.geometry, a.partial);
        validate::print_objects_report(std::cout, r);
        if (!a.json_out.empty()) write_json_file(a.json_out, validate::objects_report_json(r));
        const double pct = validate::objects_bytes_exact_pct(r);
        if (a.gate.fail_below_pct && pct < *a.gate.fail_below_pct)
            throw kvio::Error("validate: bytes exact " + std::to_string(pct) + " % of ops is below --fail-below " +
                              std::to_string(*a.gate.fail_below_pct));
        return;
    }
    if (a.join == "files") {  // no semantic log: each traced file is the object (docs/validate_files.md)
        if (a.o.commands.empty()) throw UsageError("--join files: give --commands EVENTS (traced with --files)");
        validate::FilesJoin j = validate::join_files(a.o.commands);
        if (!a.o.geometry.trace_json.empty())
            validate::name_files_from_trace_json(j, a.o.geometry.trace_json, a.o.commands);
        validate::print_files_report(std::cout, j);
        if (!a.json_out.empty()) write_json_file(a.json_out, validate::files_report_json(j));
        return;
    }
    if (a.o.commands.empty() || a.o.semantic.empty())
        throw UsageError("give --commands EVENTS.jsonl and --semantic SEMANTIC.jsonl");
    a.o.join = validate::parse_join_mode(a.join);
    a.o.semantic_format = validate::parse_semantic_format(a.semantic_format);
    a.o.commands_format = validate::parse_commands_format(a.commands_format);
    if (!a.json_out.empty()) {  // a bad --json path fails before the work, not after the report; no empty file left
        const bool existed = std::filesystem::exists(a.json_out);
        std::ofstream probe(a.json_out, std::ios::app);
        if (!probe) throw kvio::Error(a.json_out + ": cannot write: " + std::strerror(errno));
        probe.close();
        if (!existed) std::filesystem::remove(a.json_out);
    }
    validate::Report r = validate::run(a.o);
    validate::print_report(std::cout, r);
    if (!a.json_out.empty()) write_json_file(a.json_out, validate::report_json(r));
    if (a.timing) {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        struct rusage ru {};
        getrusage(RUSAGE_SELF, &ru);
        std::fprintf(stderr, "validate: %llu command records in %.3f s (%.0f records/s), peak RSS %.1f MiB\n",
                     (unsigned long long)r.join.records.cmds, s, double(r.join.records.cmds) / s,
                     double(ru.ru_maxrss) / 1024);
    }
    // Why nothing joined reaches stderr too: the report on stdout is often a file or a pipe.
    for (const auto& w : r.warnings) std::fprintf(stderr, "kvio validate: warning: %s\n", w.c_str());
    if (!r.nothing_measured.empty()) throw kvio::Error("validate: nothing measured: " + r.nothing_measured);
    std::string missed;
    for (const auto& m : validate::missed_thresholds(r, a.gate)) missed += (missed.empty() ? "" : "; ") + m;
    if (!missed.empty()) throw kvio::Error("validate: " + missed);
}

}  // namespace

void add_validate_command(CLI::App& app) {
    auto* sub = app.add_subcommand(
        "validate",
        "Join traced device commands to the KV object ops that caused them and score them against the projection.\n"
        "Rules: docs/validate.md. Exit status 0 when it scored (whatever the scores, unless --fail-below or "
        "--max-wape\n"
        "is missed); 1 on malformed input, a missed threshold, or commands that hold nothing for the ops (none at "
        "all,\n"
        "or none on the ops' device: the report and --json are still written, the reason is on stderr).");
    auto opts = std::make_shared<Opts>();
    auto& o = opts->o;
    sub->add_option(
        "--commands", o.commands,
        "Device commands: kvio.events/1 JSONL or a kvio.events.bin/1 capture from `kvio trace --events`, or the NVMe "
        "io_uring_cmd monitor JSONL (.zst: decompressed)");
    sub->add_option(
        "--semantic", o.semantic,
        "Object ops: kvio.semantic/1 JSONL from `kvio gen --semantic`, or an LMCache kvio trace (LMCACHE_KVIO_TRACE, "
        "schema 2) (.zst: decompressed)");
    sub->add_option("--semantic-format", opts->semantic_format, "auto (default: from the first line), kvio or lmcache")
        ->check(CLI::IsMember({"auto", "kvio", "lmcache"}));
    sub->add_option("--commands-format", opts->commands_format,
                    "auto (default: from the first record), kvio or monitor")
        ->check(CLI::IsMember({"auto", "kvio", "monitor"}));
    sub->add_option("--record", o.record,
                    "Record manifest from `kvio gen --record`: fills geometry the semantic meta lacks");
    sub->add_option("--trace-json", o.geometry.trace_json,
                    "kvio.trace/1 JSON from `kvio trace --json`: its entry for the meta's device gives max_sectors_kb; "
                    "with --join files, its `files` table (--files) names each file's path");
    sub->add_option("--lba-bytes", o.geometry.lba_bytes, "Logical block size in bytes (default: meta lba_bytes)")
        ->check(CLI::Validator(
            [](std::string& v) {
                unsigned long long n = 0;
                try {
                    n = std::stoull(v);
                } catch (const std::exception&) {}
                return n >= 512 && n <= 65536 && (n & (n - 1)) == 0
                           ? std::string()
                           : "must be a power of two from 512 to 65536, got " + v;
            },
            "BYTES"));
    sub->add_option("--mdts-bytes", o.geometry.mdts_bytes,
                    "NVMe MDTS in bytes, the passthrough split (default: meta mdts_bytes)")
        ->check(positive_integer());
    sub->add_option("--max-io-bytes", o.geometry.max_io_bytes,
                    "The engine's userspace transfer cap in bytes (default: meta max_io_bytes)")
        ->check(positive_integer());
    sub->add_option(
           "--max-sectors-kb", o.geometry.max_sectors_kb,
           "The device's queue/max_sectors_kb when traced, KiB (default: --trace-json, else meta max_sectors_kb)")
        ->check(positive_integer());
    sub->add_option_function<uint64_t>(
        "--header-bytes",
        [opts](uint64_t v) {
            opts->o.geometry.header_bytes = v;
            opts->o.geometry.header_bytes_set = true;
        },
        "Slot header bytes a store writes before the payload (default: meta header_bytes)");
    sub->add_option("--join", opts->join,
                    "How commands find their op: auto, user_data, key or offset (default auto); files: no --semantic, "
                    "each file of a `kvio trace --files` events stream is the object (docs/validate_files.md)")
        ->check(CLI::IsMember({"auto", "user_data", "key", "offset", "files"}));
    sub->add_flag("--objects", opts->objects,
                  "Per object (per file): projected vs measured device bytes and commands, the commands joined by "
                  "file; --semantic from `kvio import vllm-fs|lmcache-disk` (docs/engine_layouts.md)");
    sub->add_flag("--partial", opts->partial,
                  "--objects: score an events stream without its closing summary (cut: the trace was killed or the "
                  "file truncated), with a warning");
    sub->add_option("--json", opts->json_out, "Also write the report as JSON to this file");
    auto pct = CLI::Range(0.0, 100.0);
    sub->add_option_function<double>(
           "--fail-below", [opts](double v) { opts->gate.fail_below_pct = v; },
           "Exit 1 when the exact-match share of scored ops is below PCT percent (CI gate)")
        ->check(pct)
        ->type_name("PCT");
    sub->add_option_function<double>(
           "--max-wape", [opts](double v) { opts->gate.max_wape_pct = v; },
           "Exit 1 when WAPE over all ops is above PCT percent (CI gate)")
        ->check(pct)
        ->type_name("PCT");
    sub->add_flag("--timing", opts->timing, "Print elapsed time, records/s and peak RSS to stderr");
    add_synth_options(sub, *opts);

    sub->callback([opts] { run_validate(*opts); });
}

}  // namespace kvio::cli
