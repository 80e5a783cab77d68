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

/// How one child of wait_children ended.
struct ChildEnd {
    int status = 0;          ///< its wait status
    bool timed_out = false;  ///< ended by wait_children's timeout
    int stop_signo = 0;      ///< the stop signal (ChildStop) that had arrived before it ended; 0: it ended on its own
    double seconds = 0;      ///< from the call to its end, measured (steady clock)
};

/// Waits for every pid at once (polled every 50 ms), so each is reaped when it ends, in whatever order.
/// `timeout_s` > 0: a child still running after that long gets SIGTERM to its group and, `kill_after_s` later,
/// SIGKILL. `stop_grace_s` >= 0: once a stop signal arrived (ChildStop, which passes it on to the child), a child
/// still running `stop_grace_s` after it is SIGKILLed (a fio client whose server hangs ignores SIGTERM); < 0 waits
/// for it. One ChildEnd per pid, in the order of `pids`.
std::vector<ChildEnd> wait_children(const std::vector<pid_t>& pids, double timeout_s, double kill_after_s,
                                    double stop_grace_s);

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

/// After a stop signal, how long a child gets to end (it has the signal) before it is SIGKILLed, s: a fio client
/// whose server hangs never ends by itself.
inline constexpr double kStopGraceS = 2;
/// After a remote timeout, how long a fio client gets between SIGTERM and SIGKILL, s: a client whose server hangs
/// ignores the SIGTERM, and the timeout is to hold.
inline constexpr double kRemoteKillAfterS = 0.5;

/// The stop signal the live ChildStop has seen, 0 for none (or no ChildStop).
int stop_signal_seen();

/// Runs `argv` to the end (spawn_logged + wait_children: `timeout_s` > 0 ends it that long after its start,
/// SIGKILL kRemoteKillAfterS after the SIGTERM; `stop_grace_s` >= 0 SIGKILLs it that long after a stop signal, < 0
/// waits for it to end: a local child flushes what it has) and returns the wait status.
int run_logged(const std::vector<std::string>& argv, const std::string& log, double timeout_s = 0,
               double stop_grace_s = -1);

/// What a failed child said in `log`: its lines that start with "fio:" or "kvio", or name an error or a bad
/// option (fio's parse errors, a refused connection, kvio simulate's message), at most `max_lines`, joined by "; ";
/// the log's last non-empty line when none does; "" for an empty or missing log.
std::string error_lines_of(const std::string& log, size_t max_lines = 3);

/// The first line `argv` prints on stdout (e.g. `fio --version`), empty when it cannot run.
std::string first_line_of(const std::vector<std::string>& argv);

}  // namespace kvio::drives
