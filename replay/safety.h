// Replay's own safety check, on top of workload::check_device_safe (mounted, in use, data in the first
// MiB): the bytes a replay would overwrite must be zero, unless --force.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvio::replay {

/// The comm (thread name) check_zero() reads under, so its reads can be told apart from the replay's in a trace.
inline constexpr const char* kCheckComm = "kvio-check";

/// Renames the calling thread to kCheckComm for its scope (prctl PR_SET_NAME), so the reads of the safety
/// checks (also workload::check_device_safe's first MiB) show up in a trace as `kvio-check`, and
/// `kvio trace -c kvio` sees only the replayed commands.
class CheckComm {
public:
    CheckComm();
    ~CheckComm();
    CheckComm(const CheckComm&) = delete;
    CheckComm& operator=(const CheckComm&) = delete;

private:
    char saved_[16] = {};
};

/// Sorts and merges byte ranges {off, len}; touching ranges merge.
std::vector<std::pair<uint64_t, uint64_t>> merge_ranges(std::vector<std::pair<uint64_t, uint64_t>> r);

/// Reads the merged `ranges` of `path` (a block device or regular file; bytes past its end are not read)
/// and throws kvio::Error "refusing PATH: it holds data at byte N where the replay would write ..." at
/// the first non-zero byte. `skip_if_prefix`: a range whose first bytes equal it (e.g. "KVIOSLT1", a
/// slot kvio wrote before) is accepted without reading the rest. The reads run under comm kCheckComm. Reads at most
/// `max_bytes` in total (ranges are checked in order; the rest is not), returns the bytes checked.
uint64_t check_zero(const std::string& path, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                    const std::string& skip_if_prefix = "", uint64_t max_bytes = uint64_t(1) << 30);

}  // namespace kvio::replay
