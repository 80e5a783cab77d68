// Child processes of `kvio drives`: fio, and `kvio trace -- fio`, with their output in a log, ended with the run.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace kvio::drives {

/// Forks and execs `argv` with stdout and stderr to `log` (truncated), stdin /dev/null, in its own process group and
/// a guard process (trace/command_guard.h, released when wait_child or child_ended reaps it) that kills it and every
/// process below it should kvio drives die without reaping it (SIGKILL). Returns the pid.
/// Throws kvio::Error when fork fails.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log);

/// Waits for `pid` (retrying on EINTR); `timeout_s` > 0: after that long SIGTERM to its group, 5 s later SIGKILL,
/// and `timed_out` set. Returns the wait status.
int wait_child(pid_t pid, double timeout_s, bool* timed_out);

/// True (and the wait status in `status`) when `pid` has ended; it is reaped then. False while it runs.
bool child_ended(pid_t pid, int* status);

/// "exit status N" / "killed by signal N" for a wait status.
std::string describe_status(int status);

/// While it lives, SIGINT/SIGTERM/SIGHUP are passed to every process group spawn_logged started and not yet reaped
/// (kvio trace ends fio and flushes), instead of ending kvio with them still running.
class ChildStop {
public:
    ChildStop();
    ~ChildStop();
    ChildStop(const ChildStop&) = delete;
    ChildStop& operator=(const ChildStop&) = delete;
    /// The first stop signal seen, 0 for none.
    int signo() const;
};

/// Runs `argv` to the end (spawn_logged + wait_child) and returns the wait status.
int run_logged(const std::vector<std::string>& argv, const std::string& log, double timeout_s = 0);

/// What a failed child said in `log`: its lines that start with "fio:" or "kvio", or name an error or a bad
/// option (fio's parse errors, a refused connection, kvio simulate's message), at most `max_lines`, joined by "; ";
/// the log's last non-empty line when none does; "" for an empty or missing log.
std::string error_lines_of(const std::string& log, size_t max_lines = 3);

/// The first line `argv` prints on stdout (e.g. `fio --version`), empty when it cannot run.
std::string first_line_of(const std::vector<std::string>& argv);

}  // namespace kvio::drives
