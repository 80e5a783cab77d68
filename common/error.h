// Error type used across kvio libraries: one sentence a user can act on.
#pragma once
#include <stdexcept>
#include <string>

namespace kvio {

/// A user-facing failure (bad input, missing privilege, unusable device). The CLI prints
/// `kvio: <what()>` and exits non-zero. Messages name the file, line and field when there is one.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A command line that parsed but cannot run as given: options that conflict or need one another, a value no parse-time
/// check caught (an unknown --model). The CLI prints `kvio CMD: <what()>` and the hint to its --help, and exits 2 as
/// for CLI11's own usage errors (README "Exit status"). Messages name the option(s), not the command.
struct UsageError : Error {
    using Error::Error;
};

/// A run that SIGINT, SIGTERM or SIGHUP ended before its end, after it wrote what it had. The CLI prints
/// `kvio: <what()>` and exits 128 + signo, as a shell reports a job that signal ended (README "Exit status").
struct Stopped : Error {
    Stopped(int sig, const std::string& what) : Error(what), signo(sig) {}
    int signo;
};

}  // namespace kvio
