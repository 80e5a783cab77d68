#include "common/stop_signal.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace kvio {

namespace {

// The innermost StopSignal alive: the one the handler gives a signal to (nullptr: none, the signal is dropped —
// only possible in the moment between a destructor's unlinking and its restoring the old dispositions).
std::atomic<StopSignal*> g_current{nullptr};
static_assert(std::atomic<StopSignal*>::is_always_lock_free, "g_current is read from a signal handler");

}  // namespace

sigset_t stop_signal_set() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : kStopSignals) sigaddset(&s, sig);
    return s;
}

void default_stop_signals() {
    for (int sig : kStopSignals) ::signal(sig, SIG_DFL);
}

StopSignal::StopSignal(Options options) : options_(options), outer_(g_current.load()) {
    g_current.store(this);  // before the handlers: a signal right after sigaction() finds this instance
    struct sigaction sa {};
    sa.sa_handler = handle;
    sa.sa_flags = options_.restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &sa, &old_[i]);
}

StopSignal::~StopSignal() {
    g_current.store(outer_);
    for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
}

void StopSignal::handle(int sig) {
    const int saved_errno = errno;  // the interrupted code may be about to read it
    if (StopSignal* s = g_current.load()) {
        timespec ts{};
        clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe (POSIX.1-2008)
        const int64_t now = int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
        int none = 0;
        if (s->signo_.compare_exchange_strong(none, sig)) {  // the first signal names the stop
            s->first_ns_.store(now);
            s->flag_ = sig;
            if (const char* m = s->options_.first_message) {
                ssize_t w = ::write(STDERR_FILENO, m, std::strlen(m));
                (void)w;
            }
        } else if (!s->insist_ && now - s->first_ns_.load() >= kInsistNs) {
            s->insist_ = sig;
        }
        if (s->options_.on_signal) s->options_.on_signal(sig);
    }
    errno = saved_errno;
}

}  // namespace kvio
