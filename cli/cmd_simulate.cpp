// `kvio simulate`: the MLPerf Storage KV Cache Benchmark v3.0 serving workload run natively (docs/simulate.md).
#include <cstdlib>
#include <iostream>
#include <memory>

#include "common/error.h"
#include "cli/commands.h"
#include "cli/simulate_options.h"
#include "run/latency_tracing.h"
#include "workload/serving/cluster/mpi_client.h"
#include "workload/serving/cluster/multi_client.h"
#include "workload/serving/simulate.h"

namespace kvio::cli {

void add_simulate_command(CLI::App& app) {
    auto c = std::make_shared<serving::SimConfig>();
    auto* sub = app.add_subcommand(
        "simulate",
        "Run the MLPerf Storage KV-cache benchmark's serving workload natively: users, priority queue, workers, "
        "GPU/CPU/storage tiers; writes the benchmark's results JSON");
    add_simulate_options(sub, *c);
    sub->footer(
        std::string("Many clients: --num-clients N (processes on this host) or mpirun -np N kvio simulate --mpi "
                    "(one client per rank); docs/simulate.md says how results are merged.\n") +
        serving::mpi_build_status());
    sub->callback([c] {
        finish_simulate_options(*c, std::cerr);
        if (!c->mpi) {  // `mpirun -np N kvio simulate` without --mpi: N writers on one directory, refused
            const std::string refusal = serving::mpi_launch_without_mpi([](const char* n) { return std::getenv(n); });
            if (!refusal.empty()) throw UsageError(refusal);
        }
        std::ostream* console = c->quiet ? nullptr : &std::cout;
        serving::SimResult r =
            c->mpi ? serving::run_mpi_client(*c, console, &std::cerr)
            : c->num_clients > 1
                ? serving::run_clients(*c, console, &std::cerr)
                : serving::run_simulation(*c, console, &std::cerr, {.start_tracing = run::start_latency_tracing});
        if (!r.output_path.empty()) std::cerr << "simulate: results written to " << r.output_path << "\n";
        if (r.exit_code != 0) throw CLI::RuntimeError(r.exit_code);
    });
}

}  // namespace kvio::cli
