// Subcommand registration: each `kvio X` lives in cli/cmd_X.cpp as add_X_command().
#pragma once
#include <CLI/CLI.hpp>

namespace kvio::cli {

/// Exit status of a command line that cannot be parsed (unknown option, bad value, missing argument), for every
/// subcommand: 2, as argparse (kv-cache.py, `kvio simulate`) and POSIX utilities use. Errors of a run are 1.
inline constexpr int kUsageError = 2;

/// Option check: a whole number >= 1 (CLI11's PositiveNumber prints its double range in the error).
/// Error text: "must be a whole number >= 1, got V".
inline CLI::Validator positive_integer() {
    return CLI::Validator(
        [](std::string& v) {
            size_t used = 0;
            unsigned long long n = 0;
            try {
                n = std::stoull(v, &used);
            } catch (const std::exception&) {}
            return n >= 1 && used == v.size() && v[0] != '-' ? std::string() : "must be a whole number >= 1, got " + v;
        },
        "N>=1");
}

/// Each function adds one subcommand to `app`, with its options and a callback that runs it.
/// A callback reports failure by throwing kvio::Error (main prints it and exits 1) or by
/// throwing CLI::RuntimeError(code) for a chosen exit status.
void add_trace_command(CLI::App& app);
void add_geometry_command(CLI::App& app);
void add_gen_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_distill_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_dump_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_audit_command(CLI::App& app);
void add_drives_command(CLI::App& app);
void add_mlperf_check_command(CLI::App& app);
void add_report_command(CLI::App& app);

}  // namespace kvio::cli
