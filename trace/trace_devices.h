// Which devices a trace gives histogram slots to, and which count as "storage" for the syscall histograms.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvio::trace {

/// Kernel dev_t (kernel_dev()) of every whole disk in /sys/block, in name order, at most `max`.
std::vector<uint32_t> present_disks(size_t max);

/// The disks `disks` (kernel dev_t), their partitions, and the devices stacked on them (sysfs holders/:
/// dm, md, ... recursively): the devices whose block device nodes, or whose filesystems' files, are I/O to the
/// traced disks. Each once, in discovery order.
std::vector<uint32_t> storage_devices(const std::vector<uint32_t>& disks);

}  // namespace kvio::trace
