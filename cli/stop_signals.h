// Ctrl-C, SIGTERM and SIGHUP as a request to stop at the next safe point, for commands that write outputs as
// they go (`kvio gen`, `kvio replay --record`): the work polls flag() and ends cleanly, so nothing is lost.
#pragma once
#include <csignal>

namespace kvio::cli {

/// While alive, SIGINT, SIGTERM and SIGHUP only set flag() to the first signal's number (later ones change
/// nothing: `kvio trace -- CMD` and `kvio run` forward a stop more than once). The previous handlers are
/// restored at destruction. One instance at a time.
class StopOnSignal {
public:
    StopOnSignal();
    ~StopOnSignal();
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;
    /// 0 until a signal arrived, then its number.
    static const volatile sig_atomic_t* flag();

private:
    struct sigaction old_[3]{};
};

}  // namespace kvio::cli
