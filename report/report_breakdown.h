// The block-layer breakdown of report.html: blktrace/btt's stage table (Q2G, G2I, I2D, G2D, D2C, Q2C), the stage
// histograms and the merge/split/requeue counts of a `kvio trace --breakdown` summary (docs/formats.md,
// "Block breakdown").
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::report {

/// The stages of the table, in btt's order, as the suffix of their kvio.trace/1 histograms (`bt_<stage>_<dir>`).
inline constexpr const char* kBreakdownStages[] = {"q2g", "g2i", "i2d", "g2d", "d2c", "q2c"};

/// A `<section id="breakdown">` for the kvio.trace/1 document `trace`: per device and direction with staged
/// requests, a table with one row per stage — requests (the histogram's count), mean (sum / count), p50 and p99
/// (interpolated in their log2 bucket) and the stage's share of Q2C time (stage sum / Q2C sum, %, btt's "Device
/// Overhead") — its histograms, and the block_events counts of that device. "" when the trace has no breakdown (no
/// bt_* histogram with a request and no block_events), so a report without --breakdown shows no empty section.
std::string breakdown_section(const nlohmann::json& trace);

/// The share cell of a stage: 100 * stage_sum / q2c_sum with 2 decimals ("37.25 %"), "n/a" when q2c_sum is 0.
std::string stage_share(uint64_t stage_sum, uint64_t q2c_sum);

}  // namespace kvio::report
