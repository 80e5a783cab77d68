#include "workload/serving/mlperf/sizing.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "workload/serving/arrivals/users.h"
#include "workload/serving/pyrandom.h"
#include "workload/serving/tiers/storage_common.h"
#include "workload/serving/tiers/tiers.h"

namespace kvio::serving {

namespace {

/// The largest context_length among the users of a rank seeded `seed` with `users` users (the run's own draw).
int64_t largest_context(const SimConfig& c, int64_t seed, int64_t users) {
    PyRandom rng{seed};
    int64_t most = 0;
    for (const auto& u : generate_users(rng, users, c.yaml)) most = std::max(most, u.context_length);
    return most;
}

}  // namespace

std::vector<OptionSizing> closed_sizing(const SimConfig& base, const std::vector<ClosedOption>& options,
                                        const std::string& cache_dir, int clients_on_host,
                                        const std::vector<int>& ranks) {
    const std::optional<FsRoom> room = dir_room(cache_dir);
    if (!room) throw Error("mlperf-closed: statvfs " + cache_dir + ": " + std::strerror(errno));
    const uint64_t block = std::max<uint64_t>(room->block, 1);
    std::vector<OptionSizing> out;
    for (const ClosedOption& o : options) {
        const SimConfig c = closed_option_config(base, o, o.duration_s);
        OptionSizing s;
        s.option = o.option;
        s.model = o.model;
        s.share_bytes = shared_auto_capacity(*room, clients_on_host);
        s.cpu_tier_bytes = uint64_t(o.cpu_mem_gb * 1024.0 * 1024.0 * 1024.0);
        s.bytes_per_token = bytes_per_token(resolve_model(c));
        for (int r : ranks) {
            const int64_t tokens = largest_context(c, kClosedSeed + r, o.num_users);
            const uint64_t bytes = kBufferedNpyHeaderBytes + uint64_t(tokens) * s.bytes_per_token;
            const uint64_t on_disk = (bytes + block - 1) / block * block;
            if (on_disk > s.need_bytes) s.need_bytes = on_disk, s.need_rank = r, s.need_tokens = tokens;
        }
        out.push_back(s);
    }
    return out;
}

std::vector<int> ranks_sharing(const std::vector<std::string>& keys, int rank) {
    if (rank < 0 || size_t(rank) >= keys.size())
        throw Error("mlperf-closed: rank " + std::to_string(rank) + " of " + std::to_string(keys.size()) +
                    " ranks: no key of its cache filesystem");
    std::vector<int> out;
    for (size_t r = 0; r < keys.size(); ++r)
        if (keys[r] == keys[size_t(rank)]) out.push_back(int(r));
    return out;
}

std::string sizing_warning(const OptionSizing& s, int clients_on_host) {
    if (!s.short_of_need()) return "";
    char b[640];
    std::snprintf(b, sizeof b,
                  "mlperf-closed: WARNING: option %d (%s): each rank's share of the cache filesystem is %.2f GB (95 %% "
                  "of its free space over %d client(s)), below the %.2f GB its largest entry takes (rank %d: a user "
                  "of %lld tokens x %llu bytes per token): such entries are refused unwritten (capacity refusals), and "
                  "a trial whose refusals pass 1 %% of its write bytes is no valid trial (rule kvioCapacityRefusals); "
                  "give each rank %.2f GB or more\n",
                  s.option, s.model, double(s.share_bytes) / 1e9, clients_on_host, double(s.need_bytes) / 1e9,
                  s.need_rank, static_cast<long long>(s.need_tokens),
                  static_cast<unsigned long long>(s.bytes_per_token), double(s.need_bytes) / 1e9);
    return b;
}

}  // namespace kvio::serving
