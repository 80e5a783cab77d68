// --files with --events: joins the kernel's file parts of a block command (kvio_parts_event, bpf/file_attr.h) to
// the command's "cmd" record, so that each line of the stream names every file of a merged command with its bytes
// (docs/formats.md, "files" of a cmd record). The kernel writes a command's parts records before its cmd record, in
// the same program run: they are read from the ring buffer before it, with at most a few records of other CPUs (or of
// a nested completion on the same CPU) between them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bpf/file_attr.h"

namespace kvio::trace {

/// Holds parts until their command's record comes; the join key is the command's device, sector and completion time
/// (ns), which the kernel copies into each of its parts records.
class PartsJoin {
public:
    /// Parts records held while their command's record has not come: more are the parts of commands whose records the
    /// ring buffer dropped, counted in orphaned() as they are let go (oldest first).
    static constexpr size_t kMaxPending = 256;

    /// Holds the parts of one kvio_parts_event (its first `n`, at most KVIO_PARTS_PER_EVENT).
    void add(const kvio_parts_event& p);
    /// The parts of command `e` in `out` (cleared first), each file once with its bytes summed over the records, in
    /// the order the kernel met them; the parts are let go. False, `out` empty: `e` has none (nparts 0), or fewer
    /// arrived than it says (the ring buffer dropped some: counted in incomplete()).
    bool take(const kvio_cmd_event& e, std::vector<kvio_file_part>& out);
    /// Lets every held part go (at the end of the trace), counting them in orphaned().
    void finish();

    /// Commands whose parts were all joined to them.
    uint64_t joined() const { return joined_; }
    /// Commands that said they had parts of which some never came (their record carries no "files").
    uint64_t incomplete() const { return incomplete_; }
    /// Parts let go without their command (its record was dropped).
    uint64_t orphaned() const { return orphaned_; }

private:
    struct Pending {
        uint32_t dev = 0;
        uint64_t sector = 0, ts = 0;
        std::vector<kvio_file_part> parts;
    };
    std::vector<Pending> pending_;  ///< oldest first; a handful at a time
    uint64_t joined_ = 0, incomplete_ = 0, orphaned_ = 0;
};

}  // namespace kvio::trace
