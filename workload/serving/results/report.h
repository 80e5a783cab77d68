// The console report of `kvio simulate`: the benchmark's sections (banner, user table summary, results, cache
// statistics, QoS, STORAGE PERFORMANCE ASSESSMENT), printed from the run's settings and its results document.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/cache.h"
#include "workload/serving/config.h"
#include "workload/serving/arrivals/users.h"

namespace kvio::serving {

/// Before the run: banner with model, users, duration, tier budgets and which tiers really run, generation mode,
/// features, the per-block latency note, and the user table summary.
void print_banner(std::ostream& os, const SimConfig& c, const workload::ModelConfig& model, uint64_t bytes_per_token,
                  const std::vector<UserProfile>& users, const MultiTierCache& cache, uint64_t seed_used);

/// After the run: results, cache statistics, QoS and the storage assessment, read from `results`
/// (docs/mlperf-benchmark.md, "Metrics and the results JSON" keys); a run a signal stopped says so first (stop_note).
void print_report(std::ostream& os, const nlohmann::ordered_json& results);
/// "Stopped by signal N after X s of Y s: figures cover the part that ran\n" when kvio.stop.signal (or, merged, a
/// client's kvio.clients[].stop.signal) is set: X = stop_requested_at_s, Y = kvio.config.flags.duration; else "".
std::string stop_note(const nlohmann::ordered_json& results);
/// The failed storage writes of kvio.cache `kc`, their two kinds apart (docs/mlperf-benchmark.md, "Running a CLOSED
/// submission with kvio"): "F storage writes failed: R capacity refusal(s) (B bytes in all, no tier could hold them,
/// refused unwritten; first: ...), E I/O error(s) (first: ...)", each kind's first error (first_capacity_refusal,
/// first_write_error) given only when that kind happened. A file without capacity_refusals (an older kvio) counts
/// every failed write as an I/O error. "" when no write failed. Without a storage tier (kvio.cache.storage "absent
/// ...": the remote tier is last) the phrase says "remote-tier write(s)" instead of "storage write(s)".
std::string failed_writes_phrase(const nlohmann::ordered_json& kc);
/// One STORAGE PERFORMANCE ASSESSMENT criterion as the benchmark prints it (benchmark.py): unit "ratio" as
/// percentages with one decimal ("name: 97.3% (target: 95.0%)"), numbers with two decimals and the unit appended
/// ("name: 12.35ms (target: 500.00ms)"), anything else as JSON text.
std::string format_criterion(const nlohmann::ordered_json& criterion);

}  // namespace kvio::serving
