// Whether the cache filesystem of a CLOSED run is large enough for each Option (docs/mlperf-benchmark.md, "Sizing
// the cache filesystem per rank"): each rank's storage tier is its share of the filesystem (shared_auto_capacity),
// and an entry larger than every tier is refused unwritten (a capacity refusal). The largest entry a rank can write is
// its largest user's context times the model's KV bytes per token, so it is known before the run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "workload/serving/config.h"
#include "workload/serving/mlperf/closed_rules.h"

namespace kvio::serving {

/// One Option's need per rank against the share each rank gets of the cache filesystem.
struct OptionSizing {
    int option = 0;
    const char* model = "";
    uint64_t share_bytes = 0;      ///< each rank's storage tier: shared_auto_capacity over the clients on the host
    uint64_t cpu_tier_bytes = 0;   ///< the Option's CPU tier (--cpu-mem-gb GiB), where a larger entry may still go
    uint64_t need_bytes = 0;       ///< the largest entry a rank can write, as its file takes the disk
    int need_rank = 0;             ///< the rank whose user has that context
    int64_t need_tokens = 0;       ///< that user's context_length, tokens
    uint64_t bytes_per_token = 0;  ///< the model's KV bytes per token (config.h bytes_per_token)
    /// Whether an entry of the Option can be larger than every tier of a rank: capacity refusals are possible.
    bool short_of_need() const { return need_bytes > share_bytes && need_bytes > cpu_tier_bytes; }
};

/// The sizing of each Option in `options` for ranks `ranks` (seed 42 + rank, their user tables drawn as the run
/// draws them: generate_users with the Option's --num-users) whose caches share the filesystem of `cache_dir` with
/// `clients_on_host` clients: need = max over the ranks of (128-byte header + largest user context x bytes per
/// token), rounded up to the filesystem's block; share = shared_auto_capacity of its statvfs. Throws kvio::Error when
/// statvfs of `cache_dir` fails.
std::vector<OptionSizing> closed_sizing(const SimConfig& base, const std::vector<ClosedOption>& options,
                                        const std::string& cache_dir, int clients_on_host,
                                        const std::vector<int>& ranks);

/// The ranks that share rank `rank`'s cache filesystem in an MPI run, ascending (docs/mlperf-benchmark.md, "Sizing
/// the cache filesystem per rank"): those whose key equals its own. `keys` holds every rank's key in rank order, each
/// naming its cache filesystem as "HOST ST_DEV" (its host, MPI_Get_processor_name, and the st_dev of its --cache-dir:
/// one filesystem of one host). The first is the rank that warns for them. Throws kvio::Error when `rank` is not an
/// index of `keys`.
std::vector<int> ranks_sharing(const std::vector<std::string>& keys, int rank);

/// The console warning for an Option short of its need: "mlperf-closed: WARNING: option 3 (MODEL): each rank's
/// share of the cache filesystem is S GB, below the N GB its largest entry takes (rank R: a user of T tokens x B
/// bytes per token): ..."; "" when the share holds it.
std::string sizing_warning(const OptionSizing& s, int clients_on_host);

}  // namespace kvio::serving
