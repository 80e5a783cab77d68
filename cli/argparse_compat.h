// kv-cache.py's command-line conventions that CLI11 does not share, applied before CLI11 parses `kvio simulate`:
// argparse's unique-prefix abbreviations of long options (`--num-u 5` is `--num-users 5`), and its errors —
// the first bad argument as argparse words it, exit status 2 — so scripts written against the benchmark see
// the same behaviour.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace kvio::cli {

/// One long option as argparse sees it. type: "int" | "float" | "str" | "choice" (take one value) or "flag".
struct ArgparseOption {
    std::string name;  ///< "--num-users"
    std::string type;
    std::vector<std::string> choices;  ///< "choice" options
    /// kvio's own option (not kv-cache.py's): only its full name is accepted, never an abbreviation, so that a kvio
    /// flag typed short is an error rather than a guess (docs/mlperf-benchmark.md, "Running a CLOSED submission with
    /// kvio").
    bool exact = false;
};

/// An argparse-style usage error: what() is the text after "error: ".
struct ArgparseError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Checks `args` (the arguments after the subcommand) as argparse would against `options` and returns them
/// with every abbreviated option name expanded (`--num-u=5` -> `--num-users=5`; values stay where they were).
/// An exact name wins over prefixes; an `exact` option is matched by its full name only (never a prefix of it,
/// nor listed among an ambiguous prefix's candidates); "-h"/"--help" and their prefixes pass through. Throws
/// ArgparseError with argparse's message for the first of: "ambiguous option: --num could match --num-users,
/// --num-gpus", "argument --x: expected one argument", "argument --x: invalid int value: 'v'" (float likewise),
/// "argument --x: invalid choice: 'v' (choose from 'a', 'b')", "argument --x: ignored explicit argument 'v'";
/// then "unrecognized arguments: ..." for every unknown option or stray value, in order, followed by
/// " (kvio's own flags take their full name: --trial-seconds)" when an unknown option abbreviates `exact` ones.
std::vector<std::string> argparse_check(const std::vector<std::string>& args,
                                        const std::vector<ArgparseOption>& options);

/// The two lines argparse prints to stderr on a usage error for `prog` ("kvio simulate").
std::string argparse_error_text(const std::string& prog, const std::string& message);

}  // namespace kvio::cli
