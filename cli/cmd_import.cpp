// `kvio import`: other tools' traces as kvio.events/1 (blktrace per-CPU files, fio iologs), so distill, compare,
// replay and report read them like a `kvio trace` capture. Logic in importer/.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "common/error.h"
#include "common/output_file.h"
#include "common/warn.h"
#include "importer/blktrace.h"
#include "importer/engine_layout.h"
#include "importer/fio_iolog.h"
#include "cli/commands.h"
#include "cli/model_options.h"

namespace kvio::cli {

namespace {

/// Runs `write` into `path` (stdout when empty), whole or not at all (common/output_file.h: PATH.tmp-PID renamed when
/// complete; a name ending in .zst is compressed); throws kvio::Error naming the file and the errno.
template <class F>
void write_output(const std::string& path, F write) {
    if (path.empty()) {
        write(std::cout);
        std::cout.flush();
        return;
    }
    OutputFile out(path);
    write(out.stream());
    out.close();
}

/// `kvio import vllm-fs|lmcache-disk DIR --model M --events EV -o SEM`: an engine's KV files as kvio.semantic/1.
void add_engine_layout_command(CLI::App* sub, importer::EngineLayout engine) {
    struct Opts {
        std::string dir, out, events, trace_json;
        bool partial = false;
        ModelOptions model;
        std::optional<uint32_t> block_tokens, blocks_per_file;
    };
    auto o = std::make_shared<Opts>();
    const bool vllm = engine == importer::EngineLayout::VllmFs;
    auto* c = sub->add_subcommand(
        importer::engine_layout_name(engine),
        vllm ? "vLLM's offloading filesystem tier (llm-d fs backend): DIR/.../<hhh>/<hh>/<16-hex block hash>.bin, raw "
               "KV bytes of blocks_per_file blocks of one rank, with block_size_B_blocks_per_file_N, tp_T_..., rank_R "
               "in the directory names. With the events of `kvio trace --files`, writes one store (writes) and one "
               "load (reads) per file as kvio.semantic/1, sized by the model geometry, for `kvio validate --objects` "
               "(docs/engine_layouts.md)"
             : "LMCache's local disk backend: DIR/FMT@MODEL@WORLD_SIZE@WORKER_ID@CHUNK_HASH[@...].pt, raw KV bytes of "
               "one chunk of one worker. With the events of `kvio trace --files`, writes one store and one load per "
               "file as kvio.semantic/1, sized by the model geometry, for `kvio validate --objects` "
               "(docs/engine_layouts.md)");
    c->add_option("DIR", o->dir, "The engine's KV directory (read recursively)")->required();
    c->add_option("--events", o->events, "kvio.events/1 of `kvio trace --files --events` over the same run")
        ->required();
    c->add_option("--trace-json", o->trace_json,
                  "The `kvio trace --files --json` summary of the same trace: its files table's app bytes make a file "
                  "the application read from the page cache a load measured 0 (needed unless the events carry "
                  "syscall records, --syscalls)");
    c->add_flag("--partial", o->partial,
                "Accept an events stream without its closing summary (cut: the trace was killed or the file "
                "truncated), with a warning");
    c->add_option("-o,--output", o->out, "kvio.semantic/1 JSONL to write (default: stdout)");
    auto* m = c->add_option("--model", o->model.model, "Built-in model (kvio geometry lists them)");
    m->excludes(c->add_option("--hf-config", o->model.hf_config, "A Hugging Face config.json instead of --model"));
    c->add_option("--kv-dtype", o->model.kv_dtype, "KV element type: fp32, fp16, bf16, fp8 (default: the model's)");
    c->add_option("--tp", o->model.tp, "Tensor-parallel ranks (vLLM tp_T, LMCache world_size must agree)")
        ->capture_default_str()
        ->check(positive_integer());
    c->add_option("--block-tokens", o->block_tokens,
                  vllm ? "Tokens per GPU block (default: block_size_B in the path, else vLLM's 16)"
                       : "Tokens per chunk, LMCache's chunk_size (default 256)")
        ->check(positive_integer());
    if (vllm)
        c->add_option("--blocks-per-file", o->blocks_per_file,
                      "GPU blocks per file (default: blocks_per_file_N in the path, else 1)")
            ->check(positive_integer());
    c->callback([o, engine] {
        importer::ImportOptions io;
        io.layout.engine = engine;
        o->model.chunk_tokens =
            o->block_tokens.value_or(engine == importer::EngineLayout::VllmFs ? importer::kVllmDefaultBlockTokens
                                                                              : importer::kLmcacheDefaultChunkTokens);
        io.layout.geometry = resolve_geometry(o->model);
        io.layout.block_tokens = o->block_tokens;
        io.layout.blocks_per_file = o->blocks_per_file;
        io.events_path = o->events;
        io.trace_json_path = o->trace_json;
        io.accept_partial = o->partial;
        importer::ImportSummary s;
        write_output(o->out, [&](std::ostream& os) { s = importer::import_engine_layout(o->dir, io, os); });
        std::cerr << "kvio import " << importer::engine_layout_name(engine) << ": " << s.scan.files.size() << " files, "
                  << s.projected_bytes << " B projected -> " << s.stores << " stores, " << s.loads << " loads; "
                  << s.untouched << " files untouched by the events";
        if (s.cached_loads) std::cerr << ", " << s.cached_loads << " loads from the page cache (no device read)";
        if (s.short_ops)
            std::cerr << ", " << s.short_ops << " stores or loads short of the trace summary's device bytes";
        if (s.events.dropped) std::cerr << ", " << s.events.dropped << " records dropped by the tracer";
        if (s.events.lost_completions)
            std::cerr << ", " << s.events.lost_completions << " commands without their completion";
        if (!s.events.summary) std::cerr << ", stream cut (no closing summary)";
        if (s.scan.skipped_tmp) std::cerr << ", " << s.scan.skipped_tmp << " temporary files left out";
        std::cerr << "\n";
        if (s.merged)
            warn("kvio import: " + std::to_string(s.merged) +
                 " files' commands moved more bytes than the file holds: the kernel merged several files into one "
                 "command and these events' records name only its first file (a kvio before the records' \"files\"), "
                 "so validate --objects' per-file bytes are not exact for them; the trace's --json files table is "
                 "(docs/engine_layouts.md)");
    });
}

}  // namespace

void add_import_command(CLI::App& app) {
    struct Opts {
        std::string input, out, dev;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "import",
        "Turn another tool's trace into kvio.events/1 device commands (as `kvio trace --events` writes them), so "
        "distill, compare and replay --events read it; or an engine's KV file directory (vllm-fs, lmcache-disk) into "
        "kvio.semantic/1 for `kvio validate --objects`. Formats: docs/formats.md#kvio-import, docs/engine_layouts.md");
    // Not require_subcommand(1): CLI11's "A subcommand is required" names no format; the callback below does.
    sub->require_subcommand(0, 1);
    sub->allow_extras();
    sub->callback([sub] {
        if (!sub->get_subcommands().empty()) return;
        const auto left = sub->remaining();
        throw CLI::ValidationError(
            (left.empty() ? std::string("which format?") : "unknown format '" + left.front() + "':") +
            " give a subcommand, blktrace, fio-iolog, vllm-fs or lmcache-disk");  // main: a usage error
    });

    auto* bt = sub->add_subcommand(
        "blktrace",
        "blktrace's binary per-CPU files (`blktrace -d /dev/X -o NAME` writes NAME.blktrace.<cpu>), read directly: one "
        "command per request from its issue (D) to its final completion (C), with sector, bytes, rwbs, CLOCK_MONOTONIC "
        "ns times (blktrace's own clock), Q2D when an insert (I) was seen, in-flight depth, and the submitting thread "
        "(G/Q events) and its name (blktrace's process notes). pid is 0: blktrace records thread ids only.");
    bt->add_option("DIR_OR_PREFIX", o->input,
                   "A directory holding NAME.blktrace.N files of one device, the prefix DIR/NAME, or one per-CPU file")
        ->required();
    bt->add_option("-o,--output", o->out, "kvio.events/1 JSONL to write (default: stdout)");
    bt->callback([o] {
        importer::BlktraceImport s;
        write_output(o->out, [&](std::ostream& os) { s = importer::import_blktrace(o->input, os); });
        std::cerr << "kvio import blktrace: " << s.files.size() << " files, " << s.records << " records -> " << s.cmds
                  << " commands (" << s.lost_completes << " never completed: complete_lost), " << s.unmatched_completes
                  << " completions without their issue, " << s.requeued << " requeues, " << s.truncated
                  << " records cut off at a file end\n";
    });

    auto* fi = sub->add_subcommand(
        "fio-iolog",
        "A fio I/O log (`fio --write_iolog=FILE`, version 2 or 3): one command per read/write/trim line, offset and "
        "length as sector and bytes, the line's time (v3 timestamp, v2 sum of waits; µs) as ts_issue in ns from the "
        "log's start. An iolog records issues only: ts_complete = ts_issue (D2C 0), so latency figures derived from an "
        "imported iolog say nothing; sync lines are counted and left out. A log that later fio runs appended to (a "
        "header line again) is read as segments one after the other: each segment's clock restarts at 0, so it is "
        "placed where the previous one ended (the time between the runs is not in the log).");
    fi->add_option("FILE", o->input, "The iolog (plain or .zst)")->required();
    fi->add_option("-o,--output", o->out, "kvio.events/1 JSONL to write (default: stdout)");
    fi->add_option(
        "--dev", o->dev,
        "The disk the log's file is on, MAJ:MIN or name: its offsets are taken as offsets on that disk (default: "
        "the log's file name must be a block device on this machine)");
    fi->callback([o] {
        importer::IologImportOptions io;
        io.dev = o->dev;
        importer::IologImport s;
        write_output(o->out, [&](std::ostream& os) { s = importer::import_fio_iolog(o->input, io, os); });
        std::cerr << "kvio import fio-iolog: version " << s.version << ", " << s.cmds << " commands, " << s.syncs
                  << " sync lines left out";
        if (s.segments > 1)
            std::cerr << ", " << s.segments
                      << " segments (fio runs appended to the log), each placed where the one before ended";
        std::cerr << "\n";
    });
    add_engine_layout_command(sub, importer::EngineLayout::VllmFs);
    add_engine_layout_command(sub, importer::EngineLayout::LmcacheDisk);
}

}  // namespace kvio::cli
