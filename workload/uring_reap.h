// The completion loop both io_uring engines share; each maps its own CQE to an IoCompletion.
#pragma once
#include <liburing.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "workload/engine.h"

namespace kvio::workload {

/// Reaps completions from `ring`: waits until at least `min` arrived, then takes what else is ready.
/// `to_completion(const io_uring_cqe&)` turns one CQE into an IoCompletion. Returns how many were
/// appended to `out`. Throws kvio::Error when waiting fails (other than EINTR).
template <typename ToCompletion>
size_t reap_cqes(io_uring& ring, size_t min, std::vector<IoCompletion>& out, ToCompletion to_completion) {
    size_t n = 0;
    while (true) {
        io_uring_cqe* cqe = nullptr;
        int r = n < min ? io_uring_wait_cqe(&ring, &cqe) : io_uring_peek_cqe(&ring, &cqe);
        if (r == -EAGAIN || (r == 0 && !cqe)) break;
        if (r == -EINTR) continue;
        if (r < 0) throw Error(std::string("io_uring_wait_cqe failed: ") + std::strerror(-r));
        out.push_back(to_completion(*cqe));
        io_uring_cqe_seen(&ring, cqe);
        ++n;
    }
    return n;
}

}  // namespace kvio::workload
