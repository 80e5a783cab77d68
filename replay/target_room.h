// The steps before an object-level replay (--record, --io-trace) writes its first byte: room on the target for
// the layout, the slots about to be written empty (or kvio's own), and a regular-file target grown to size.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "workload/record.h"
#include "workload/target.h"

namespace kvio::replay {

/// For target `t` (already through workload::check_device_safe) and a layout that needs `need` bytes
/// (slots: the end of the last slot; files: the object bytes) for `nobj` objects (`what` names them in errors,
/// e.g. "the recorded 4 objects"): refuses a block device or directory without room and a regular file whose
/// filesystem cannot hold the growth; unless `force`, checks that every slot in `slots` ({offset, bytes}) is zero
/// or starts with kvio's slot magic (check_zero); then grows a regular file with fallocate (t.capacity_bytes
/// updated, a note pushed). Returns the bytes checked. Throws kvio::Error before any byte is written.
uint64_t prepare_object_target(workload::TargetInfo& t, workload::Layout layout, uint64_t need, uint64_t nobj,
                               std::vector<std::pair<uint64_t, uint64_t>> slots, bool force, const std::string& what,
                               std::vector<std::string>& notes);

}  // namespace kvio::replay
