// `kvio replay`: reissue a recorded object stream (--record) or a captured device command stream (--events)
// on another target.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "replay/events_replay.h"
#include "replay/io_trace_replay.h"
#include "replay/record_replay.h"
#include "cli/commands.h"
#include "common/stop_signal.h"

namespace kvio::cli {

namespace {

/// `kvio replay`'s flags, bound by add_replay_command.
struct Opts {
    replay::RecordReplayOptions rec;
    replay::EventsOptions ev;
    replay::IoTraceReplayOptions io;
    std::string tiers;
    uint64_t max_io = 0;
    std::string timing = "asis";
    std::vector<std::string> maps;
    bool quiet = false;
};

/// --io-trace: the MLPerf io-trace-log's storage rows executed on --target.
void run_io_trace(Opts& o) {
    auto& t = o.io;
    t.target = o.rec.target;
    if (t.target.empty()) throw UsageError("--io-trace needs --target PATH");
    t.force = o.rec.force;
    t.semantic_path = o.rec.semantic_path;
    if (!o.rec.engine.empty()) t.engine = o.rec.engine;
    if (t.engine == "cufile") throw UsageError("--io-trace runs on posix, io_uring or uring_cmd");
    if (o.rec.qd) t.qd = o.rec.qd;
    if (o.rec.iters || !o.maps.empty()) throw UsageError("--iters and --map-dev do not apply to --io-trace replays");
    if (!o.tiers.empty()) t.tiers = replay::parse_tiers(o.tiers);
    t.max_io_bytes = o.max_io;
    t.timing = replay::parse_timing(o.timing);
    t.progress = o.quiet ? nullptr : &std::cerr;
    StopSignal stop(
        StopSignal::Options{.restart = true});  // the ops in flight finish and --semantic keeps every completed op
    t.stop = stop.flag();
    replay::IoTraceReplayResult r = replay::replay_io_trace(t);
    replay::print_io_trace_replay(std::cout, t, r);
    if (r.summary.stopped_by) throw CLI::RuntimeError(128 + r.summary.stopped_by);
    if (!r.summary.first_error.empty())
        throw Error("replay: " + std::to_string(r.summary.store.errors + r.summary.load.errors) +
                    " ops failed; first: " + r.summary.first_error);
}

/// --events: the captured device commands reissued on --target or the --map-dev paths.
void run_events(Opts& o) {
    auto& e = o.ev;
    e.target = o.rec.target;
    e.force = o.rec.force;
    if (!o.rec.engine.empty()) e.engine = o.rec.engine;
    if (o.rec.qd) e.max_qd = o.rec.qd;
    if (o.rec.iters || !o.rec.semantic_path.empty())
        throw UsageError("--iters and --semantic apply to --record replays, not --events");
    e.timing = replay::parse_timing(o.timing);
    for (const auto& m : o.maps) {
        auto eq = m.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
            throw UsageError("--map-dev " + m + ": expected MAJ:MIN=PATH");
        e.maps.push_back({m.substr(0, eq), m.substr(eq + 1)});
    }
    if (!e.maps.empty() && !e.target.empty()) throw UsageError("give either --target or --map-dev, not both");
    if (e.maps.empty() && e.target.empty())
        throw UsageError("--events needs --target PATH (or --map-dev MAJ:MIN=PATH)");
    StopSignal stop(
        StopSignal::Options{.restart = true});  // the commands in flight complete and the summary is printed
    e.stop = stop.flag();
    replay::EventsSummary s = replay::replay_events(e);
    replay::print_events_summary(std::cout, e, s);
    if (s.stopped_by) throw CLI::RuntimeError(128 + s.stopped_by);
    if (s.errors) throw Error("replay: " + std::to_string(s.errors) + " commands failed; first: " + s.first_error);
}

/// --record: the object stream of `kvio gen --record` re-split for --target.
void run_record(Opts& o) {
    if (o.rec.record.empty()) throw UsageError("give --record REC.json, --events CMDS.jsonl or --io-trace FILE.csv");
    if (o.rec.target.empty()) throw UsageError("--record needs --target PATH");
    if (!o.maps.empty() || o.timing != "asis")
        throw UsageError("--map-dev and --timing apply to --events replays, not --record");
    o.rec.progress = o.quiet ? nullptr : &std::cerr;
    StopSignal stop(StopSignal::Options{
        .restart = true});  // as in `kvio gen`: the ops in flight finish and --semantic keeps every completed op
    o.rec.stop = stop.flag();
    replay::RecordReplayResult r = replay::replay_record(o.rec);
    replay::print_record_replay(std::cout, o.rec, r);
    if (r.summary.stopped_by) throw CLI::RuntimeError(128 + r.summary.stopped_by);
    if (!r.summary.first_error.empty())
        throw Error("replay: " + std::to_string(r.summary.store.errors + r.summary.load.errors) +
                    " ops failed; first: " + r.summary.first_error);
}

}  // namespace

void add_replay_command(CLI::App& app) {
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "replay",
        "Reissue a recorded workload on another target: --record REC.json (the object stream of `kvio gen --record`, "
        "re-split for the target's LBA size and transfer limits) or --events CMDS.jsonl (the device commands of "
        "`kvio trace --events`: same offsets, sizes, directions and order, like btreplay), or --io-trace FILE.csv "
        "(an MLPerf KV-cache benchmark --io-trace-log, e.g. from `kvio simulate --io-trace-log`: its storage-tier "
        "Writes and Reads executed for real, one object per Key). Rules: docs/replay.md");
    auto* rec = sub->add_option("--record", o->rec.record,
                                "Record manifest (schema_version 1) from `kvio gen --record`, or a kvio_record.json of "
                                "the reference kvio tooling");
    auto* ev = sub->add_option(
        "--events", o->ev.events,
        "Captured device commands, kvio.events/1 JSONL or a kvio.events.bin/1 capture from `kvio trace --events`");
    auto* io =
        sub->add_option("--io-trace", o->io.io_trace,
                        "MLPerf KV-cache io-trace-log CSV (Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase; .zst "
                        "accepted): each Write stores its Key's object, each Read loads back what was stored");
    rec->excludes(ev);
    io->excludes(rec)->excludes(ev);
    sub->add_option(
        "--tiers", o->tiers,
        "--io-trace: tiers whose rows are executed, a comma list of 0 (GPU), 1 (CPU), 2 (storage), 3 (kvio's remote "
        "tier); default 2");
    sub->add_option("--max-io", o->max_io,
                    "--io-trace: transfer cap in bytes (default: the target's max_sectors_kb / max_segments limit)");
    sub->add_option(
        "--target", o->rec.target,
        "Where to replay: --record: block device, /dev/ngXnY, regular file (grown as needed) or directory (files "
        "layout); --events: block device or regular file for the capture's only device; --io-trace: block "
        "device, regular file (slots) or directory (one file per key). --record and --io-trace create a missing "
        "path in an existing directory (a regular file sized to what the replay needs; --record's files layout: "
        "a directory), never under /dev/");
    sub->add_option(
           "--engine", o->rec.engine,
           "--record: posix, io_uring or uring_cmd (default: the manifest's); --events: io_uring (default, keeps the "
           "captured overlap) or posix (one command at a time); --io-trace: posix (default), io_uring or uring_cmd")
        ->check(CLI::IsMember({"posix", "io_uring", "uring_cmd", "cufile"}));
    sub->add_option("--iters", o->rec.iters,
                    "--record: rebuild the pattern with N iterations (default: the stream as recorded)")
        ->check(positive_integer());
    sub->add_option("--qd", o->rec.qd,
                    "--record: transfers in flight (default: the manifest's qd); --events: cap on commands in flight "
                    "(default 64); "
                    "--io-trace: transfers in flight (default 1; above 1 ops of different keys overlap)")
        ->check(CLI::Range(1, 4096));
    sub->add_option("--semantic", o->rec.semantic_path,
                    "--record, --io-trace: write the replay's kvio.semantic/1 JSONL (for kvio validate) to FILE");
    sub->add_option(
        "--timing", o->timing,
        "--events, --io-trace: asis (recorded inter-arrival times), afap or fast (no waiting; --events: as fast as "
        "the captured overlap allows) or scale=F (recorded gaps × F, e.g. scale=0.5 runs twice as fast); default asis");
    sub->add_option(
        "--map-dev", o->maps,
        "--events: replay source device MAJ:MIN (or disk name) on PATH: MAJ:MIN=PATH; repeatable; when given, "
        "only mapped devices are replayed");
    sub->add_flag("--force", o->rec.force,
                  "Write even where the target holds data (first MiB, slots, or where replayed writes land); never a "
                  "mounted device");
    sub->add_flag("-q,--quiet", o->quiet, "No progress lines on stderr");
    sub->callback([o] {
        if (!o->io.io_trace.empty()) return run_io_trace(*o);
        if (!o->tiers.empty() || o->max_io) throw UsageError("--tiers and --max-io apply to --io-trace replays");
        if (!o->ev.events.empty()) return run_events(*o);
        run_record(*o);
    });
}

}  // namespace kvio::cli
