// `kvio gen`: issue the store/load stream of KV-cache offload for a model on a device, file or directory.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

#include "common/error.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "common/stop_signal.h"
#include "workload/gen.h"

namespace kvio::cli {

void add_gen_command(CLI::App& app) {
    struct Opts {
        ModelOptions model;
        workload::GenOptions gen;
        std::string layout;
        std::string verify = "stamps";
        bool quiet = false;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "gen",
        "Generate a model's KV-cache offload I/O (LMCache-style stores and loads of verifiable KV chunks) on a block "
        "device, /dev/ngXnY, a regular file or a directory");
    add_model_options(sub, o->model);
    auto& g = o->gen;
    sub->add_option(
           "--target", g.target,
           "Block device (slots layout), NVMe generic char device /dev/ngXnY (uring_cmd), regular file "
           "(slots; created if absent, grown with fallocate) or directory (one file per object; created if absent "
           "with --layout files)")
        ->required();
    sub->add_option("--engine", g.engine,
                    "I/O engine: posix (pread/pwrite; threads for --qd > 1), io_uring (fixed buffers), uring_cmd (NVMe "
                    "passthrough), cufile")
        ->capture_default_str()
        ->check(CLI::IsMember({"posix", "io_uring", "uring_cmd", "cufile"}));
    sub->add_option("--layout", o->layout,
                    "Object layout: slots (header + payload in fixed slots after a 1 MiB metadata region; default on "
                    "devices and files) or files (default on directories)")
        ->check(CLI::IsMember({"slots", "files"}));
    sub->add_option("--num-chunks", g.num_chunks, "KV chunks to store and load (objects = chunks × --tp)")
        ->capture_default_str()
        ->check(positive_integer());
    sub->add_option("--pattern", g.pattern,
                    "store-then-load (all stores, then all loads) or interleaved (store i, load i)")
        ->capture_default_str()
        ->check(CLI::IsMember({"store-then-load", "interleaved"}));
    sub->add_option("--iters", g.iters, "Repeat the whole pattern N times")
        ->capture_default_str()
        ->check(positive_integer());
    sub->add_option(
           "--qd", g.qd,
           "Transfers in flight. io_uring, uring_cmd: one ring. posix: 1 = synchronous pread/pwrite on the "
           "submitting thread (like fio's psync engine); N > 1 = N threads, each with one pread/pwrite in flight")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    sub->add_flag("--buffered", g.buffered,
                  "Page cache instead of O_DIRECT: stores end with fsync, loads start with posix_fadvise(DONTNEED)");
    sub->add_option("--max-io", g.max_io_bytes,
                    "Transfer cap in bytes (default: min(max_sectors_kb×1024, max_segments×PAGE_SIZE) of the device; "
                    "uring_cmd: MDTS instead of max_sectors_kb); a positive multiple of the LBA size")
        ->check(positive_integer());
    sub->add_option("--block-align", g.block_align,
                    "Slot alignment and header size in bytes (multiple of the LBA size)")
        ->capture_default_str();
    sub->add_option("--semantic", g.semantic_path,
                    "Write the kvio.semantic/1 JSONL (one record per object op with device offsets) to FILE (.zst: "
                    "zstd-compressed, each op flushed as it completes)");
    sub->add_option("--record", g.record_path, "Write the record manifest (kvio_record.json, for replay) to FILE");
    sub->add_option(
           "--verify", o->verify,
           "How loads are checked: stamps (each 4 KiB payload block starts with a 32-byte stamp: object, offset, "
           "store generation; reads only those, so it catches missing, zeroed, stale, misplaced or torn blocks at "
           "almost no CPU cost) or full (compares every byte and checksums every word: also catches a flipped byte "
           "inside a block, at a CPU cost that slows fast devices). The --semantic checksum covers the same bytes")
        ->capture_default_str()
        ->check(CLI::IsMember({"stamps", "full"}));
    sub->add_flag("--force", g.force, "Write a device even if its first MiB holds data (never a mounted one)");
    sub->add_flag("-q,--quiet", o->quiet, "No progress lines on stderr");
    sub->callback([o] {
        auto& g = o->gen;
        g.geometry = resolve_geometry(o->model);
        if (!o->layout.empty()) g.layout = workload::parse_layout(o->layout);
        g.verify = workload::parse_verify(o->verify);
        g.progress = o->quiet ? nullptr : &std::cerr;
        // Ctrl-C / SIGTERM: the ops in flight finish, --semantic and --record keep every completed op; a second
        // signal half a second or more later gives up the ops in flight at their transfers in flight.
        StopSignal stop(StopSignal::Options{
            .restart = true,
            .first_message = "kvio gen: stopping: the ops in flight finish (signal again to give them up at the "
                             "transfers in flight)\n"});
        g.stop = stop.flag();
        g.cut = stop.insist_flag();
        workload::GenSummary s = workload::run_gen(g);
        workload::print_summary(std::cout, g, s);
        if (s.stopped_by) {
            std::fprintf(stderr, "kvio gen: stopped by signal %d (%s) after %zu of %llu ops%s%s\n", s.stopped_by,
                         strsignal(s.stopped_by), s.done_trace_ids.size(), (unsigned long long)s.ops_planned,
                         g.semantic_path.empty() ? "" : "; wrote them to ", g.semantic_path.c_str());
            if (s.cut_ops)
                std::fprintf(stderr,
                             "kvio gen: %llu ops given up at the second signal: their bytes on the target belong "
                             "to no op of --semantic or --record\n",
                             (unsigned long long)s.cut_ops);
            throw CLI::RuntimeError(128 + s.stopped_by);
        }
        if (!s.first_error.empty())
            throw Error("gen: " + std::to_string(s.store.errors + s.load.errors) +
                        " ops failed; first: " + s.first_error);
    });
}

}  // namespace kvio::cli
