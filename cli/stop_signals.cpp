#include "cli/stop_signals.h"

namespace kvio::cli {

namespace {

volatile sig_atomic_t g_stop = 0;
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

void on_stop(int sig) {
    if (!g_stop) g_stop = sig;
}

}  // namespace

StopOnSignal::StopOnSignal() {
    g_stop = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART;  // pread/pwrite and io_uring waits resume; the flag is polled between transfers
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
}

StopOnSignal::~StopOnSignal() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

const volatile sig_atomic_t* StopOnSignal::flag() { return &g_stop; }

}  // namespace kvio::cli
