// report.html's #simulation section for `kvio run --workload simulate`: what the serving workload did, from
// kvio simulate's results (OUT/simulate.json, the benchmark's keys plus kvio's) and the traced device histograms.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::report {

/// The section's HTML: tables #sim-requests (completed, rate, tokens, offered load, stop), #sim-qos (per QoS class:
/// requests, latency percentiles, SLA target and whether it was met), #sim-tiers (per cache tier: backend, limit,
/// used, entries, bytes written and read, demotions in), #sim-hits (cache, multi-turn and prefix hit rates) and
/// #sim-layers (mean/p50/p95/p99 in ms of each latency layer, top down: end to end, generation, storage per request,
/// prefill, decode, storage op host and device time, and the traced D2C from `device_histograms`, the kvio.trace/1
/// histograms of the traced disk: interpolated inside log2 buckets). Missing keys show as "n/a".
std::string simulation_section(const nlohmann::json& sim, const nlohmann::json& device_histograms);

}  // namespace kvio::report
