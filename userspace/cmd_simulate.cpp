// `kvio simulate`: the MLPerf Storage KV Cache Benchmark v3.0 serving workload run natively (docs/simulate.md).
#include <iostream>
#include <memory>

#include "userspace/commands.h"
#include "userspace/simulate_options.h"
#include "workload/serving/simulate.h"

namespace kvio::cli {

void add_simulate_command(CLI::App& app) {
    auto c = std::make_shared<serving::SimConfig>();
    auto* sub = app.add_subcommand(
        "simulate",
        "Run the MLPerf Storage KV-cache benchmark's serving workload natively: users, priority queue, workers, "
        "GPU/CPU/storage tiers; writes the benchmark's results JSON");
    add_simulate_options(sub, *c);
    sub->callback([c] {
        finish_simulate_options(*c, std::cerr);
        serving::SimResult r = serving::run_simulation(*c, c->quiet ? nullptr : &std::cout, &std::cerr);
        std::cerr << "simulate: results written to " << r.output_path << "\n";
        if (r.exit_code != 0) throw CLI::RuntimeError(r.exit_code);
    });
}

}  // namespace kvio::cli
