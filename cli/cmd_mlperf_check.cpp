// `kvio mlperf-check DIR`: a KV-cache CLOSED results directory checked against the rules (docs/mlperf-benchmark.md,
// "Checking a results directory: kvio mlperf-check"). One line per problem on stdout; exit kCheckClean (0),
// kCheckProblems (1) or kUsageError (2), as --help lists them.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "workload/serving/mlperf/check.h"

namespace kvio::cli {

void add_mlperf_check_command(CLI::App& app) {
    struct Args {
        std::string dir;
        serving::CheckOptions opts;
        bool notes = false;
    };
    auto a = std::make_shared<Args>();
    auto* sub = app.add_subcommand(
        "mlperf-check",
        "Check an MLPerf KV-cache CLOSED results directory (kvio simulate --mlperf-closed, or mlpstorage over the "
        "Python benchmark): missing rank or trial files, parameters, seeds, filesystems, the summary's aggregates");
    sub->add_option("DIR", a->dir, "The results directory (holds option_<O>/ and kvcache_run_summary_*.json)")
        ->required();
    sub->add_flag("--allow-shortened", a->opts.allow_shortened,
                  "Accept a run kvio marked as not a CLOSED submission (--trial-seconds, --pause-seconds, one Option) "
                  "and check it against its recorded trial length and Options");
    sub->add_flag("--notes", a->notes, "Also print what could not be checked (e.g. rank files without parameters)");
    sub->footer("Exit status:\n  " + std::to_string(serving::kCheckClean) +
                "  clean: a CLOSED run, no problem found\n  " + std::to_string(serving::kCheckProblems) +
                "  problems: one line each on stdout, PATH: what (rule NAME); also a directory holding no CLOSED "
                "run\n  " +
                std::to_string(kUsageError) +
                "  usage: no DIR, DIR missing or not a directory, an unknown option\n"
                "docs/mlperf-benchmark.md, \"Checking a results directory: kvio mlperf-check\".");
    sub->callback([a] {
        const serving::CheckReport r = serving::check_results_dir(a->dir, a->opts);
        for (const auto& p : r.problems) std::cout << p << "\n";
        if (a->notes)
            for (const auto& n : r.notes) std::cerr << "note: " << n << "\n";
        std::cout.flush();
        if (r.no_run) throw CLI::RuntimeError(serving::kCheckProblems);  // the one problem says there is no CLOSED run
        std::cerr
            << "mlperf-check: " << a->dir << ": " << r.options_found << " of " << r.options
            << " Options found, expected " << r.trials << " trial(s) x " << r.ranks << " rank(s) each, " << r.rank_files
            << " of " << r.options * r.trials * r.ranks << " rank file(s) read: "
            << (r.problems.empty() ? std::string("clean") : std::to_string(r.problems.size()) + " problem(s)")
            << (r.stopped
                    ? "; STOPPED: the run was stopped before its end (a stop signal, or killed), it is not submittable"
                    : "")
            << "\n";
        if (!r.problems.empty()) throw CLI::RuntimeError(serving::kCheckProblems);
    });
}

}  // namespace kvio::cli
