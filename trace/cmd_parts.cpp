#include "trace/cmd_parts.h"

#include <algorithm>

namespace kvio::trace {

void PartsJoin::add(const kvio_parts_event& p) {
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& q) {
        return q.dev == p.dev && q.sector == p.sector && q.ts == p.ts_complete;
    });
    if (it == pending_.end()) {
        if (pending_.size() >= kMaxPending) {
            orphaned_ += pending_.front().parts.size();
            pending_.erase(pending_.begin());
        }
        pending_.push_back(Pending{p.dev, p.sector, p.ts_complete, {}});
        it = pending_.end() - 1;
    }
    const size_t n = std::min<size_t>(p.n, KVIO_PARTS_PER_EVENT);
    it->parts.insert(it->parts.end(), p.part, p.part + n);
}

bool PartsJoin::take(const kvio_cmd_event& e, std::vector<kvio_file_part>& out) {
    out.clear();
    if (!e.nparts || e.src != KVIO_SRC_BLOCK) return false;
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& q) {
        return q.dev == e.dev && q.sector == e.sector && q.ts == e.ts_complete;
    });
    if (it == pending_.end() || it->parts.size() != e.nparts) {
        ++incomplete_;
        if (it != pending_.end()) pending_.erase(it);
        return false;
    }
    for (const kvio_file_part& p : it->parts) {  // a file in two rounds of the kernel's walk: one part
        auto same = std::find_if(out.begin(), out.end(), [&](const kvio_file_part& q) {
            return q.ino == p.ino && q.fs_dev == p.fs_dev && q.gen == p.gen;
        });
        if (same == out.end())
            out.push_back(p);
        else
            same->bytes += p.bytes;
    }
    pending_.erase(it);
    ++joined_;
    return true;
}

void PartsJoin::finish() {
    for (const Pending& p : pending_) orphaned_ += p.parts.size();
    pending_.clear();
}

}  // namespace kvio::trace
