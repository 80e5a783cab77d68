// `kvio import`: other tools' traces as kvio.events/1 (blktrace per-CPU files, fio iologs), so distill, compare,
// replay and report read them like a `kvio trace` capture. Logic in importer/.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "common/error.h"
#include "common/output_file.h"
#include "importer/blktrace.h"
#include "importer/fio_iolog.h"
#include "cli/commands.h"

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

}  // namespace

void add_import_command(CLI::App& app) {
    struct Opts {
        std::string input, out, dev;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "import",
        "Turn another tool's trace into kvio.events/1 device commands (as `kvio trace --events` writes them), so "
        "distill, compare and replay --events read it. Formats: docs/formats.md#kvio-import");
    // Not require_subcommand(1): CLI11's "A subcommand is required" names no format; the callback below does.
    sub->require_subcommand(0, 1);
    sub->allow_extras();
    sub->callback([sub] {
        if (!sub->get_subcommands().empty()) return;
        const auto left = sub->remaining();
        throw CLI::ValidationError(
            (left.empty() ? std::string("which format?") : "unknown format '" + left.front() + "':") +
            " give a subcommand, blktrace or fio-iolog");  // main: a usage error
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
}

}  // namespace kvio::cli
