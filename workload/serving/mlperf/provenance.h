// Where a CLOSED run ran (docs/mlperf-benchmark.md, "Running a CLOSED submission with kvio"): the kvio binary and
// its SHA-256, the kernel, the CPU, the memory, and for each directory its filesystem (mount point, type, source,
// mount options) and the block device under it (model, firmware, queue limits from sysfs).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::serving {

/// A directory's filesystem, from stat(2) and /proc/self/mountinfo: {path, st_dev "MAJ:MIN", mount_point,
/// fstype, source, mount_options, super_options} (the mount whose device is st_dev and whose mount point is the
/// longest prefix of the path), plus "device": the block device under it (block_device_provenance) when st_dev is
/// a block device. A path that does not exist is described by its nearest existing parent. A loop device's
/// backing_file is followed: device.backing_filesystem is that file's own filesystem_provenance (nested loops up to
/// 4 deep), so that memory_backing can tell a loop over a file in /dev/shm.
nlohmann::ordered_json filesystem_provenance(const std::string& path);

/// What memory backs a filesystem as filesystem_provenance recorded it (`fs`), "" when nothing does: its fstype tmpfs
/// or ramfs ("tmpfs"), a zram or brd RAM disk under it ("ext4 on zram0 (a compressed RAM disk)", "... on ram0 (a brd
/// RAM disk)"), or a loop device whose backing file is on such a filesystem, followed down
/// ("ext4 on loop3 over /dev/shm/x.img, on tmpfs"). Used by the CLOSED run's refusal and the checker (rule
/// kvioCacheOnMemory, docs/mlperf-benchmark.md, "Running a CLOSED submission with kvio").
std::string memory_backing(const nlohmann::ordered_json& fs);

/// A block device's identity and limits from /sys/block/<disk>: {name, whole_disk, model, vendor, firmware_rev,
/// size_bytes, logical_block_size, physical_block_size, max_sectors_kb, max_hw_sectors_kb, max_segments,
/// nr_requests, rotational, scheduler, write_cache}; a loop device adds its backing_file. A file sysfs does not
/// have is left out.
nlohmann::ordered_json block_device_provenance(const std::string& majmin);

/// The host and binary: {kvio: {version, binary, binary_sha256}, kernel: {sysname, release, version, machine},
/// cpu: {model, online}, memory: {total_bytes}, hostname}. `version` is the caller's (`kvio --version`'s text).
nlohmann::ordered_json host_provenance(const std::string& version);

/// The st_dev of `path` (or of its nearest existing parent) as "MAJ:MIN"; "" when nothing on the way exists.
std::string path_st_dev(const std::string& path);

}  // namespace kvio::serving
