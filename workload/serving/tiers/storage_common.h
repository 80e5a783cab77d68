// Helpers the storage tier backends share (directory housekeeping, errors, the semantic log's setup).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workload/serving/tiers/storage_semantic.h"
#include "workload/serving/tiers/tiers.h"
#include "workload/target.h"

namespace kvio::serving {

/// "<what> <path>: <strerror(errno)>".
std::string errno_text(const std::string& what, const std::string& path);
/// Deletes every `*.npy` in `dir` (the benchmark does so at start). Throws kvio::Error if `dir` cannot be read.
void delete_npy_files(const std::string& dir);
/// What statvfs(3) says of a filesystem's room: its allocation unit (f_frsize, bytes) and the units an unprivileged
/// writer may still allocate (f_bavail: the root-reserved blocks and the filesystem's own metadata reserve left out).
struct FsRoom {
    uint64_t block = 0;         ///< f_frsize, bytes
    uint64_t avail_blocks = 0;  ///< f_bavail, units of `block`
};
/// statvfs of `dir`; nullopt when it fails.
std::optional<FsRoom> dir_room(const std::string& dir);
/// The storage tier's automatic limit of one of `clients` clients whose cache directories share one filesystem
/// (docs/mlperf-benchmark.md, "Tiers and the waterfall", and "Each rank's share of a shared cache filesystem"): 95 % of
/// f_bavail, whole blocks, split into `clients` whole-block shares, so the shares together never pass 95 % of what
/// statvfs says is free. Bytes; `clients` < 1 counts as 1.
uint64_t shared_auto_capacity(const FsRoom& room, int clients);
/// shared_auto_capacity(dir_room(dir), 1), or kUnlimited when statvfs fails.
uint64_t dir_auto_capacity(const std::string& dir);
/// `e` ({dev_off, len} in order) with physically adjacent pieces joined: FIEMAP may list one contiguous run as
/// several extents (ext4 splits its extent records, e.g. where unwritten blocks were converted), but the block
/// layer sees one range, so a transfer across the seam is one command.
std::vector<std::pair<uint64_t, uint64_t>> merge_adjacent(const std::vector<std::pair<uint64_t, uint64_t>>& e);
/// The allocation unit of the filesystem holding `dir` (statvfs f_frsize; 4096 when unknown): file sizes on
/// disk are whole units (ext4 on a small device uses 1 KiB blocks).
uint64_t dir_block_bytes(const std::string& dir);
/// The temporary cache directory of a run without --cache-dir: `<parent>/kv_cache_<pid>_XXXXXX` (mkdtemp), the pid
/// of the run that owns it, so a later run can tell a dead owner's (remove_dead_temp_cache_dirs). Throws
/// kvio::Error naming the path when it cannot be created.
std::string make_temp_cache_dir(const std::string& parent);
/// Removes every `<parent>/kv_cache_<pid>_*` directory whose <pid> no longer runs (a run killed by SIGKILL could not
/// remove its own); a live process's are kept. Returns the paths removed.
std::vector<std::string> remove_dead_temp_cache_dirs(const std::string& parent);
/// `<dir>/<key>.npy`.
inline std::string npy_path(const std::string& dir, const std::string& key) { return dir + "/" + key + ".npy"; }

/// The semantic log for a directory or device target when o.semantic_path is set (else null): refuses a
/// target whose offsets FIEMAP cannot map to a disk (tmpfs, btrfs, device-mapper).
std::unique_ptr<StorageSemanticLog> open_semantic_log(const StorageOptions& o, const workload::TargetInfo* t,
                                                      const std::string& engine, const std::string& layout,
                                                      bool buffered, uint64_t header_bytes, uint64_t max_io_bytes);

/// The buffered and O_DIRECT directory backends and the block-device backend.
std::unique_ptr<StorageTier> make_buffered_dir_tier(const StorageOptions& o);
std::unique_ptr<StorageTier> make_direct_dir_tier(const StorageOptions& o);
std::unique_ptr<StorageTier> make_block_tier(const StorageOptions& o);

}  // namespace kvio::serving
