// The processes `kvio run` starts (its stages and the losetup helpers): their output reaches a log file and a copy
// in memory through a pipe, so a stage's error is known even when its log cannot be written (a full filesystem),
// and a helper's answer (losetup --show, -j) never needs a file. SIGINT/SIGTERM/SIGHUP are remembered and
// forwarded to the stages that asked for it.
#pragma once
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/stop_signal.h"

namespace kvio::run {

/// Holds the run's kvio::StopSignal (SIGINT/SIGTERM/SIGHUP, the previous handlers come back after): a signal is
/// remembered (signal_received()) and forwarded to the process group of every StageProcess started with `forward`
/// that is still forwarding. One at a time.
class SignalGuard {
public:
    SignalGuard();
    ~SignalGuard();
    SignalGuard(const SignalGuard&) = delete;
    SignalGuard& operator=(const SignalGuard&) = delete;

private:
    std::optional<StopSignal> stop_;  ///< set once the forwarding table is cleared
};

/// The first signal the SignalGuard alive (else the last one) caught, 0 when none.
int signal_received();

/// Called in the parent with the pid of every forwarding StageProcess right after its fork (`running` true: it leads
/// its own process group with that id) and once it was reaped (`running` false: the id may be reused): the run's
/// guard (run/run_guard.h) kills the groups still running when the run is SIGKILLed. One observer at a time;
/// an empty function removes it.
void set_stage_observer(std::function<void(pid_t, bool running)> observer);

/// One child process: argv (PATH searched) with stdin from /dev/null and stdout+stderr through a pipe to
/// `log` (appended; "" = memory only) and to output(). `forward`: the child leads its own process group, dies
/// with us (PR_SET_PDEATHSIG), and the run's signals reach its group; such a child is not started once a signal
/// was received (kvio::run::Interrupted is thrown). Without `forward` (helpers) it runs to completion whatever
/// signal arrives (cleanup needs losetup after a signal) unless its parent dies (PR_SET_PDEATHSIG SIGKILL: the run's
/// guard then redoes the cleanup). Throws kvio::Error when it cannot fork.
class StageProcess {
public:
    StageProcess(const std::vector<std::string>& argv, const std::string& log, bool forward);
    ~StageProcess();  ///< a child still running is killed (SIGKILL to its group when it has one) and reaped
    StageProcess(const StageProcess&) = delete;
    StageProcess& operator=(const StageProcess&) = delete;

    pid_t pid() const { return pid_; }
    /// Waits for the exit; returns the exit status (128 + signal when killed). Later calls return the same.
    int wait();
    /// True once the child exited (reaps it then), without waiting.
    bool exited();
    /// Sends `sig` to the child's process group (forward) or to the child.
    void signal(int sig) const;
    /// Signals of the run no longer reach this child: the caller stops it itself (the tracer while its command ends).
    void stop_forwarding();
    /// What it printed so far (the last MiB at most).
    std::string output() const;
    /// "" or why `log` could not be written ("cannot write LOG: No space left on device").
    std::string log_error() const;

private:
    struct Pump;
    pid_t pid_ = -1;
    bool forward_ = false, reaped_ = false;
    int status_ = 0;
    std::unique_ptr<Pump> pump_;
};

/// Runs argv to completion (StageProcess without forwarding, no log file); returns {exit status, output}.
std::pair<int, std::string> run_helper(const std::vector<std::string>& argv);

/// ": REASON" from the last "kvio: REASON" line of `output`, "" when there is none.
std::string last_error_line(const std::string& output);

}  // namespace kvio::run
