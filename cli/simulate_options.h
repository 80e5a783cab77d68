// `kvio simulate`'s command line: every flag of serving::flag_table() (the MLPerf KV benchmark's 40 flags with the
// same names, defaults and choices, then kvio's) as CLI11 options bound to a SimConfig.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/argparse_compat.h"

#include "workload/serving/config.h"

namespace kvio::cli {

/// Adds every flag of serving::flag_table() to `sub`, bound to the members of `c`: "flag" rows are CLI11 flags,
/// "choice" rows check the benchmark's choice lists, --seed stays unset unless given. --help shows the table's
/// text and the benchmark's default ("None", "benchmark_results_<YYYYmmdd_HHMMSS>.json", ...).
void add_simulate_options(CLI::App* sub, serving::SimConfig& c);

/// serving::flag_table() as argparse sees it, for argparse_check (cli/argparse_compat.h).
std::vector<ArgparseOption> simulate_argparse_options();

/// After parsing, in kv-cache.py's order: validate_config (docs/mlperf-benchmark.md, "Command line and validation"),
/// then --config into c.yaml, then the model name (resolve_model). Warnings (TP not a power of two) go to `warn`, one
/// "kvio simulate: warning: ..." line each. Throws kvio::Error holding every refusal, one per line ("invalid
/// arguments:\n  ..."), or the config file's or the unknown model's error.
void finish_simulate_options(serving::SimConfig& c, std::ostream& warn);

/// One "kvio simulate: warning: --X given N times: the last (V) is used" line on `warn` per option of `sub` given
/// more than once: the benchmark's argparse keeps the last silently, and a repeated --num-clients or --cache-dir is
/// more often a pasted command line than a choice.
void warn_repeated_options(const CLI::App& sub, std::ostream& warn);

/// Checks a `kvio simulate` command line (`args`: what follows "simulate") as simulate itself would — argparse_check,
/// CLI11 over add_simulate_options, finish_simulate_options — without running anything, so a caller (`kvio run
/// --sim-arg`) refuses it before it sets anything up. Its warnings are dropped (simulate prints them when it runs).
/// Throws kvio::Error with simulate's own message ("kvio simulate: error: unrecognized arguments: --bogus", or
/// "invalid arguments:\n  ...").
void check_simulate_args(const std::vector<std::string>& args);

}  // namespace kvio::cli
