// `kvio report`: report.html from any kvio trace summary (or a `kvio run` directory).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "common/error.h"
#include "common/jsonl.h"
#include "cli/commands.h"
#include "diagnose/diagnose.h"
#include "report/report_html.h"

namespace kvio::cli {

namespace {
/// The default output: DIR/report.html for a run directory, TRACE with .json replaced by .html for a file.
std::string default_out(const std::string& input, bool dir) {
    if (dir) return input + "/report.html";
    std::filesystem::path p(input);
    if (p.extension() == ".json") p.replace_extension();
    return p.string() + ".html";
}
}  // namespace

void add_report_command(CLI::App& app) {
    struct Opts {
        std::string input, out, events, diagnosis_json;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "report",
        "Render report.html from a kvio trace summary (kvio trace --json, kvio.trace/1) or a kvio run directory:\n"
        "latency stack, command sizes, queue depth, the block breakdown when traced with --breakdown, and a\n"
        "diagnosis (docs/diagnose.md), also printed.\n"
        "Example: kvio report trace.json -o trace.html          kvio report kvio-run-20261204-120000");
    sub->add_option("INPUT", o->input, "A kvio.trace/1 JSON file, or a kvio run output directory")
        ->required()
        ->check(CLI::ExistingPath);
    sub->add_option("-o,--output", o->out, "The HTML file (default: TRACE.html beside TRACE.json; DIR/report.html)");
    sub->add_option("--events", o->events,
                    "The same trace's --events file (kvio.events/1, .zst or a kvio.events.bin/1 capture): the "
                    "diagnosis' queue-depth, split-run and (with --syscalls records) page-cache rules need it")
        ->check(CLI::ExistingFile);
    sub->add_option("--diagnosis-json", o->diagnosis_json, "Also write the diagnosis as JSON (kvio.diagnosis/1)");
    sub->callback([o] {
        const bool dir = std::filesystem::is_directory(o->input);
        const std::string out = o->out.empty() ? default_out(o->input, dir) : o->out;
        if (dir) {
            if (!o->events.empty() || !o->diagnosis_json.empty())
                throw UsageError("--events and --diagnosis-json are for a trace summary, not a run directory");
            report::write_report(o->input, out);
            std::printf("report: %s\n", out.c_str());
            return;
        }
        const auto findings = report::write_trace_report({o->input, out, o->events});
        if (!o->diagnosis_json.empty()) write_json_file(o->diagnosis_json, diagnose::to_json(findings));
        std::printf("%sreport: %s\n", diagnose::to_text(findings).c_str(), out.c_str());
    });
}

}  // namespace kvio::cli
