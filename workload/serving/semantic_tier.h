// A storage tier that also writes kvio.semantic/1 (semantic_log.h): wraps a backend whose entries are whole files
// `<dir>/<key>.npy`, written from offset 0 and read back whole (the benchmark's buffered pattern, spec §5.8), and
// records each op with the file's size and FIEMAP extents. Used under --enable-latency-tracing.
#pragma once
#include <memory>
#include <string>

#include "workload/serving/tiers.h"

namespace kvio::serving {

/// Wraps `inner` (make_storage_dir_tier(dir)): every write/read is timed (CLOCK_MONOTONIC ns around the inner op)
/// and recorded to a SemanticLog at `semantic_path` (meta: layout files, engine posix, buffered as given, no
/// header: the op moves the whole file). A failed op is recorded with its error and rethrown. Throws kvio::Error
/// when `dir` is not on a block device.
std::unique_ptr<TierBackend> make_semantic_tier(std::unique_ptr<TierBackend> inner, const std::string& dir,
                                                const std::string& semantic_path, const std::string& model,
                                                bool buffered);

}  // namespace kvio::serving
