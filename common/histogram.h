// The one histogram type of kvio: log2 or linear slots, as the BPF side fills them
// (bpf/kvio_trace.h defines the slot rules), with bounds, JSON and a biolatency-style printer.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bpf/kvio_trace.h"

namespace kvio {

/// Slot rules. Log2: slot 0 holds value 0, slot k>=1 holds [2^(k-1), 2^k).
/// Linear: slot k holds [k*width, (k+1)*width); the last slot also holds everything above.
enum class HistKind { Log2, Linear };

/// Slot index of `v` under the log2 rule: the BPF programs' own (kvio_log2_slot in bpf/kvio_trace.h).
constexpr unsigned log2_slot(uint64_t v) { return kvio_log2_slot(v); }

struct Bucket {
    uint64_t lo, hi, count;  ///< counts values lo <= v < hi
};

/// An estimated quantile and the bucket [lo, hi) it was interpolated in (the estimate's error bound).
struct QuantileEstimate {
    double value = 0;
    uint64_t lo = 0, hi = 0;
};

/// The quantiles every latency histogram reports (JSON keys "p50" .. "p99.9").
inline constexpr std::pair<const char*, double> kReportedQuantiles[] = {
    {"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p99.9", 0.999}};

class Histogram {
public:
    Histogram() = default;
    /// `unit`: "ns", "bytes", "cmds". `width` is used only by linear histograms (bytes per slot for LBA maps).
    Histogram(HistKind kind, std::string unit, size_t nslots, uint64_t width = 1);

    void add(uint64_t value, uint64_t n = 1);
    /// Adds every value of `other` (same slot rules; throws std::invalid_argument otherwise).
    void merge(const Histogram& other);
    /// Adds raw slot counts (from a BPF map); `sum` is the exact sum of values.
    void add_slots(const uint64_t* slots, size_t n, uint64_t sum);

    HistKind kind() const { return kind_; }
    const std::string& unit() const { return unit_; }
    uint64_t count() const { return count_; }
    uint64_t sum() const { return sum_; }
    size_t nslots() const { return slots_.size(); }
    uint64_t slot(size_t i) const { return slots_[i]; }
    uint64_t width() const { return width_; }
    /// Lower and upper (exclusive) bound of slot i.
    uint64_t slot_lo(size_t i) const;
    uint64_t slot_hi(size_t i) const;
    /// Non-empty buckets in slot order.
    std::vector<Bucket> buckets() const;
    /// Estimated value at quantile q in [0,1], interpolated linearly inside its bucket; 0 when empty.
    double quantile(double q) const;
    /// quantile(q) with the bounds of the bucket it fell in ({0,0,0} when empty).
    QuantileEstimate quantile_estimate(double q) const;
    /// {"p50":{"value":v,"bucket":[lo,hi]}, "p90":..., "p99":..., "p99.9":...} in this histogram's unit,
    /// interpolated linearly inside the bucket holding the quantile (lo <= value <= hi); {} when empty.
    nlohmann::json percentiles_json() const;
    /// The values added since `earlier` (a copy of this histogram taken before): slot-wise difference.
    /// Throws std::invalid_argument when the two have different slot rules.
    Histogram minus(const Histogram& earlier) const;

    /// {"unit","count","sum","buckets":[[lo,hi,count],...]} (kvio.trace/1).
    nlohmann::json to_json() const;
    /// Inverse of to_json(): rebuilds buckets from [lo,hi,count] triples (any order).
    static Histogram from_json(const nlohmann::json& j, HistKind kind, size_t nslots, uint64_t width = 1);

    /// Prints `     lo -> hi       : count    |*****     |` rows like bcc's biolatency.
    void print(std::ostream& os, const std::string& title) const;

private:
    HistKind kind_ = HistKind::Log2;
    std::string unit_;
    uint64_t width_ = 1;
    std::vector<uint64_t> slots_;
    uint64_t count_ = 0, sum_ = 0;
};

/// "4096" -> "4K", "1048576" -> "1M"; non-multiples print in bytes. Used by printers and fio bssplit.
std::string human_bytes(uint64_t bytes);

}  // namespace kvio
