// What a device-level job needs from its target to reissue the traced commands whole: the queue limits that would
// split them, and the physically contiguous (huge-page) buffers that fio needs for commands larger than
// max_segments x 4 KiB. Rules and measurements: docs/distill.md "Sizes the target must not split".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distiller/fio_job.h"
#include "distiller/profile.h"

namespace kvio::distiller {

/// A page of a buffer that is not physically contiguous (x86-64 base page), bytes.
constexpr uint64_t kBasePage = 4096;
/// The huge page fio's iomem=shmhuge takes (x86-64 default, /proc/meminfo Hugepagesize), bytes.
constexpr uint64_t kHugePage = 2ull << 20;
/// Segments per request when the target is unknown: Linux's BLK_MAX_SEGMENTS, also a loop device's max_segments.
constexpr uint32_t kDefaultMaxSegments = 128;

/// A block device's request limits, from /sys/class/block/NAME/queue (all 0 when unknown).
struct QueueLimits {
    uint32_t max_segments = 0;        ///< segments (physically contiguous pieces) per request
    uint64_t max_segment_size = 0;    ///< bytes per segment
    uint64_t max_sectors_kb = 0;      ///< KiB per request (the soft limit the kernel splits at)
    uint64_t logical_block_size = 0;  ///< bytes
    std::string source;               ///< the sysfs directory read, "" when none
};

/// The limits of the block device (or partition's disk) at `path`; all 0 when it is not one or sysfs is unreadable.
QueueLimits queue_limits(const std::string& path);

/// The largest command a direct-I/O buffer of scattered 4 KiB pages can make on a target of `q`: max_segments x
/// 4 KiB (kDefaultMaxSegments when unknown), and at most max_sectors_kb when known. Bytes.
uint64_t scattered_limit(const QueueLimits& q);

/// Huge pages one fio job with iomem=shmhuge needs free: iodepth x the largest block size plus one 4 KiB alignment
/// page, rounded up to whole huge pages, plus one (the fewest fio 3.33 started with, measured: 1 x 1 MiB: 2, 2 x 1 MiB:
/// 3, 8 x 1 MiB: 6, 4 x 512 KiB: 3, 4 x 1280 KiB: 4), per clone.
uint64_t huge_pages_for(uint64_t iodepth, uint64_t max_bs, uint64_t numjobs);

/// The huge pages a job needs at once: a one-section job's own; a phased job's, per group of sections that run
/// together (a `stonewall` starts a group), summed over the group, the largest group's.
uint64_t huge_pages_needed(const FioJob& job);

/// The header lines of a device-level job: the level and why, what it needs from a target (max_sectors_kb,
/// max_segments x max_segment_size, logical block size, huge pages) for the commands of `whole`, and what a target
/// with smaller limits will not reproduce and what to set there.
std::vector<std::string> device_level_lines(const Profile& whole, const FioJob& job, const JobOptions& opt);

/// Raises vm.nr_hugepages so that `pages` huge pages are free for a replay (the job's iomem=shmhuge sections), and
/// gives the added ones back at destruction. Nothing when `pages` are free already. Throws kvio::Error when the
/// kernel grants fewer (memory too fragmented), naming what it got.
class HugePageReserve {
public:
    explicit HugePageReserve(uint64_t pages);
    ~HugePageReserve();
    HugePageReserve(const HugePageReserve&) = delete;
    HugePageReserve& operator=(const HugePageReserve&) = delete;

private:
    long old_ = -1;  // vm.nr_hugepages before, -1 when not changed
};

}  // namespace kvio::distiller
