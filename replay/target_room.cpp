#include "replay/target_room.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "replay/safety.h"
#include "workload/gen.h"

namespace kvio::replay {

uint64_t prepare_object_target(workload::TargetInfo& t, workload::Layout layout, uint64_t need, uint64_t nobj,
                               std::vector<std::pair<uint64_t, uint64_t>> slots, bool force, const std::string& what,
                               std::vector<std::string>& notes) {
    // Room first, before any byte of the target is read or written (a plan may ask for more than any device).
    if (t.kind == workload::TargetKind::RegularFile && need > t.capacity_bytes) {
        struct statvfs fs {};
        const std::string dir = std::filesystem::path(t.path).parent_path().string();
        if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0 &&
            need - t.capacity_bytes > uint64_t(fs.f_bavail) * fs.f_frsize)
            throw Error(t.path + " would have to grow from " + std::to_string(t.capacity_bytes) + " to " +
                        std::to_string(need) + " bytes for " + what + "; its filesystem has " +
                        std::to_string(uint64_t(fs.f_bavail) * fs.f_frsize) + " bytes free");
    } else if (need > t.capacity_bytes) {
        throw Error(t.path + " has room for " + std::to_string(t.capacity_bytes) + " bytes but " + what + " need " +
                    std::to_string(need));
    }
    uint64_t checked = 0;
    if (layout == workload::Layout::Slots && !force) {
        // Every slot about to be written must be empty, or one kvio wrote before (its header magic).
        std::sort(slots.begin(), slots.end());
        checked = check_zero(t.path, slots, "KVIOSLT1");
    }
    if (t.kind == workload::TargetKind::RegularFile && t.capacity_bytes < need) {
        workload::preallocate(t.path, need);
        notes.push_back("target file size " + std::to_string(t.capacity_bytes) + " -> " + std::to_string(need) +
                        " (grown with fallocate)");
        t.capacity_bytes = need;
    }
    const uint64_t room = layout == workload::Layout::Files ? workload::files_layout_room(t, nobj) : t.capacity_bytes;
    if (need > room)
        throw Error(t.path + " has room for " + std::to_string(room) + " bytes but " + what + " need " +
                    std::to_string(need));
    return checked;
}

}  // namespace kvio::replay
