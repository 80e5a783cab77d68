// `kvio dump`: a binary capture (kvio.events.bin/1) as the kvio.events/1 JSONL the tracer would have written, or
// (--perfetto) a capture or JSONL file as a Perfetto / chrome://tracing timeline.
#include <cstdio>
#include <memory>

#include "common/error.h"
#include "cli/commands.h"
#include "trace/events_dump.h"
#include "report/perfetto_timeline.h"

namespace kvio::cli {

void add_dump_command(CLI::App& app) {
    struct Opts {
        std::string in, out;
        report::TimelineOptions tl;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "dump",
        "Print a binary events capture (`kvio trace --events F --events-format bin`, kvio.events.bin/1) as\n"
        "kvio.events/1 JSONL: the same records, byte for byte, that `--events-format jsonl` writes. Device names\n"
        "and LBA sizes come from the capture, so it can be dumped on another machine.\n"
        "With --perfetto FILE: write the capture (or a kvio.events/1 JSONL file) as a timeline instead (Chrome JSON\n"
        "trace events; open it in ui.perfetto.dev or chrome://tracing): a track per device or NVMe queue, a thread "
        "per\n"
        "submitter with its syscalls, and with --semantic the object ops with arrows to the commands validate joined "
        "to them.\n"
        "Example: kvio dump trace.kvb -o trace.jsonl; kvio dump trace.kvb --perfetto t.json --semantic sem.jsonl");
    sub->add_option("file", o->in, "The capture (kvio.events.bin/1); with --perfetto also kvio.events/1 JSONL")
        ->required();
    auto* out = sub->add_option("-o,--output", o->out, "Write here instead of stdout (- is stdout)");
    auto* pf = sub->add_option(
                      "--perfetto", o->tl.out,
                      "Write a timeline (Chrome JSON trace-event format) to this file instead of JSONL (a name ending "
                      "in .zst: zstd-compressed)")
                   ->excludes(out);
    sub->add_option("--semantic", o->tl.semantic,
                    "With --perfetto: kvio.semantic/1 of the traced ops: a track of object ops and "
                    "flow arrows to the commands the join attributed to each")
        ->needs(pf);
    sub->add_option("--record", o->tl.record,
                    "With --semantic: the record manifest (kvio gen --record), for the join's geometry")
        ->needs(pf);
    sub->add_option("--trace-json", o->tl.trace_json,
                    "With --semantic: the kvio.trace/1 summary, for the join's geometry")
        ->needs(pf);
    sub->callback([o] {
        if (o->tl.out.empty()) {
            trace::dump_capture(o->in, o->out);
            return;
        }
        o->tl.events = o->in;
        const report::TimelineStats s = report::write_perfetto(o->tl);
        std::fprintf(stderr,
                     "kvio dump: %s: %llu commands on %llu device tracks, %llu syscalls, %llu object ops, %llu flows\n",
                     o->tl.out.c_str(), (unsigned long long)s.commands, (unsigned long long)s.device_tracks,
                     (unsigned long long)s.syscalls, (unsigned long long)s.ops, (unsigned long long)s.flows);
        for (const auto& w : s.warnings) std::fprintf(stderr, "kvio dump: warning: %s\n", w.c_str());
    });
}

}  // namespace kvio::cli
