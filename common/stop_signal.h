// Ctrl-C, SIGTERM and SIGHUP as a request to stop: the one place kvio installs handlers for them. Every command that
// stops cleanly (writes what it has, ends what it started, exits 128 + the signal) holds a StopSignal while it works
// and polls stopped(); a command that must pass the stop on (to a traced command, a stage's process group, a replay
// under trace) gives it a callback that does so from the handler.
#pragma once
#include <csignal>

#include <atomic>
#include <cstdint>

namespace kvio {

/// The stop signals, in the order kvio installs them: SIGINT (Ctrl-C), SIGTERM, SIGHUP (a closed terminal or SSH
/// session stops and flushes like SIGTERM).
inline constexpr int kStopSignals[3] = {SIGINT, SIGTERM, SIGHUP};

/// A signal set holding kStopSignals: block them around fork() so a child starts with them blocked until it has
/// reset or installed its own dispositions.
sigset_t stop_signal_set();

/// Sets every stop signal back to its default action. For a child between fork() and exec() (async-signal-safe):
/// a handler's disposition survives fork, and exec turns a handler into SIG_DFL but keeps SIG_IGN.
void default_stop_signals();

/// While alive, SIGINT, SIGTERM and SIGHUP set stopped() and remember the first one's number in signo() (a later
/// one changes nothing: `kvio trace -- CMD` and `kvio run` pass a stop on more than once); the dispositions they
/// had before come back at destruction.
///
/// Install it before anything that takes a while or that a stop must clean up, and before starting children: a
/// signal that comes earlier takes its old disposition, and a shell starts a background job (`cmd &`) with SIGINT
/// ignored, so a SIGINT during set-up would vanish and the work would run on until a second signal. Children
/// started while it is alive inherit the handler until exec; call default_stop_signals() in them.
///
/// Instances nest (destroyed in reverse order of construction, on one thread): the innermost one alive receives
/// the signals, as its handler replaced the outer one's; after it is gone the outer one receives them again. Each
/// starts with signo() 0. stopped(), signo() and flag() may be read from any thread.
class StopSignal {
public:
    /// Called from the signal handler with every stop signal (not only the first), after signo() is set: it must
    /// be async-signal-safe (kill(2), write(2), lock-free atomics; no allocation, no locks, no iostreams).
    using OnSignal = void (*)(int signo);

    struct Options {
        /// SA_RESTART: a read, write or wait the signal interrupts resumes instead of failing with EINTR (for work
        /// that polls stopped() between transfers).
        bool restart = false;
        /// Passes the stop on (to a child, a process group); nullptr: nothing but remembering it.
        OnSignal on_signal = nullptr;
        /// Written to stderr (write(2)) when the first stop signal arrives: what the command does now and how to
        /// make it stop sooner. nullptr: nothing.
        const char* first_message = nullptr;
    };

    StopSignal() : StopSignal(Options{}) {}
    explicit StopSignal(Options options);
    ~StopSignal();
    StopSignal(const StopSignal&) = delete;
    StopSignal& operator=(const StopSignal&) = delete;

    /// True once a stop signal arrived.
    bool stopped() const { return signo_.load() != 0; }
    /// The first stop signal's number (SIGINT 2, SIGTERM 15, SIGHUP 1), 0 until one arrived.
    int signo() const { return signo_.load(); }
    /// signo() as a flag for work that polls `const volatile sig_atomic_t*` (workload::GenOptions::stop, the
    /// replays' stop, load_events): 0, then the first stop signal's number. Valid while this object lives.
    const volatile sig_atomic_t* flag() const { return &flag_; }
    /// True once a stop signal came again at least kInsistNs after the first: the user asks a second time (a
    /// stop passed on by a parent or a terminal's process group arrives within microseconds of the first and does
    /// not count). Work that finishes what it started on the first signal gives up on it here.
    bool insisted() const { return insist_ != 0; }
    /// insisted() as a flag (0, then the later signal's number), like flag(). Valid while this object lives.
    const volatile sig_atomic_t* insist_flag() const { return &insist_; }

    /// How long after the first stop signal another one counts as the user insisting: 0.5 s, well above the
    /// microseconds a forwarded copy takes and below a person's second Ctrl-C.
    static constexpr int64_t kInsistNs = 500'000'000;

private:
    static void handle(int sig);

    Options options_;
    std::atomic<int> signo_{0};
    volatile sig_atomic_t flag_ = 0;
    volatile sig_atomic_t insist_ = 0;
    std::atomic<int64_t> first_ns_{0};  ///< CLOCK_MONOTONIC of the first stop signal
    StopSignal* outer_ = nullptr;       ///< the instance that received the signals before this one
    struct sigaction old_[3]{};         ///< the dispositions of kStopSignals before this one
    static_assert(std::atomic<int>::is_always_lock_free, "signo_ is written from a signal handler");
};

}  // namespace kvio
