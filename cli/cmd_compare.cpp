// `kvio compare A.jsonl B.jsonl`: the replay referee — a capture and its replay side by side.
#include <iostream>
#include <memory>

#include "common/jsonl.h"
#include "report/compare_scored.h"
#include "cli/commands.h"

namespace kvio::cli {

void add_compare_command(CLI::App& app) {
    struct Opts {
        std::string a, b, dev_a, dev_b, json_out;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "compare",
        "Compare two captured command streams (kvio.events/1, e.g. a capture and its `kvio replay --events`): "
        "commands, "
        "reads, writes, bytes, mean size, size mix, duration and D2C p50/p99, with B's difference from A in %, and how "
        "many commands sit at the same position in issue order; then B scored against A as `kvio distill --verify` "
        "scores "
        "a replay (size and depth TV, read share, worst window, phases): two traces of one workload give the noise "
        "floor of those scores");
    sub->add_option("A", o->a, "Reference stream: kvio.events/1 JSONL or a kvio.events.bin/1 capture")->required();
    sub->add_option("B", o->b, "Compared stream: kvio.events/1 JSONL or a kvio.events.bin/1 capture")->required();
    sub->add_option("--dev-a", o->dev_a, "Device of A to use, MAJ:MIN or disk name (default: A's only device)");
    sub->add_option("--dev-b", o->dev_b, "Device of B to use, MAJ:MIN or disk name (default: B's only device)");
    sub->add_option("--json", o->json_out, "Also write the comparison (kvio.compare/1) to this file");
    sub->callback([o] {
        replay::Comparison c = report::compare_scored(o->a, o->dev_a, o->b, o->dev_b);
        replay::print_comparison(std::cout, c);
        if (!o->json_out.empty()) write_json_file(o->json_out, json(replay::comparison_json(c)));
    });
}

}  // namespace kvio::cli
