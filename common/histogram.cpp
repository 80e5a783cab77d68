#include "common/histogram.h"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace kvio {

Histogram::Histogram(HistKind kind, std::string unit, size_t nslots, uint64_t width)
    : kind_(kind), unit_(std::move(unit)), width_(width ? width : 1), slots_(nslots, 0) {}

void Histogram::add(uint64_t value, uint64_t n) {
    size_t s;
    if (kind_ == HistKind::Log2)
        s = log2_slot(value);
    else
        s = kvio_linear_slot(value, width_);
    if (s >= slots_.size()) s = slots_.size() - 1;
    slots_[s] += n;
    count_ += n;
    sum_ += value * n;
}

void Histogram::add_slots(const uint64_t* slots, size_t n, uint64_t sum) {
    for (size_t i = 0; i < n && i < slots_.size(); ++i) {
        slots_[i] += slots[i];
        count_ += slots[i];
    }
    sum_ += sum;
}

void Histogram::merge(const Histogram& other) {
    if (other.kind_ != kind_ || other.width_ != width_ || other.slots_.size() != slots_.size())
        throw std::invalid_argument("Histogram::merge: different slot rules");
    add_slots(other.slots_.data(), other.slots_.size(), other.sum_);
}

uint64_t Histogram::slot_lo(size_t i) const {
    if (kind_ == HistKind::Linear) return uint64_t(i) * width_;
    return i == 0 ? 0 : (uint64_t(1) << (i - 1));
}

uint64_t Histogram::slot_hi(size_t i) const {
    if (kind_ == HistKind::Linear) return uint64_t(i + 1) * width_;
    return i >= 64 ? UINT64_MAX : (uint64_t(1) << i);
}

std::vector<Bucket> Histogram::buckets() const {
    std::vector<Bucket> out;
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i]) out.push_back({slot_lo(i), slot_hi(i), slots_[i]});
    return out;
}

double Histogram::quantile(double q) const { return quantile_estimate(q).value; }

QuantileEstimate Histogram::quantile_estimate(double q) const {
    if (!count_) return {};
    q = std::clamp(q, 0.0, 1.0);
    double target = q * double(count_);
    double seen = 0;
    size_t last = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
        if (!slots_[i]) continue;
        last = i;
        if (seen + double(slots_[i]) >= target) {
            double frac = (target - seen) / double(slots_[i]);
            return {double(slot_lo(i)) + frac * double(slot_hi(i) - slot_lo(i)), slot_lo(i), slot_hi(i)};
        }
        seen += double(slots_[i]);
    }
    return {double(slot_hi(last)), slot_lo(last), slot_hi(last)};  // rounding left target above the total
}

nlohmann::json Histogram::percentiles_json() const {
    nlohmann::json j = nlohmann::json::object();
    if (!count_) return j;
    for (const auto& [name, q] : kReportedQuantiles) {
        auto e = quantile_estimate(q);
        j[name] = {{"value", e.value}, {"bucket", {e.lo, e.hi}}};
    }
    return j;
}

Histogram Histogram::minus(const Histogram& earlier) const {
    if (earlier.kind_ != kind_ || earlier.width_ != width_ || earlier.slots_.size() != slots_.size())
        throw std::invalid_argument("Histogram::minus: different slot rules");
    Histogram d = *this;
    d.count_ = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
        d.slots_[i] = slots_[i] >= earlier.slots_[i] ? slots_[i] - earlier.slots_[i] : 0;
        d.count_ += d.slots_[i];
    }
    d.sum_ = sum_ >= earlier.sum_ ? sum_ - earlier.sum_ : 0;
    return d;
}

nlohmann::json Histogram::to_json() const {
    nlohmann::json b = nlohmann::json::array();
    for (const auto& x : buckets()) b.push_back({x.lo, x.hi, x.count});
    return {{"unit", unit_}, {"count", count_}, {"sum", sum_}, {"buckets", b}};
}

Histogram Histogram::from_json(const nlohmann::json& j, HistKind kind, size_t nslots, uint64_t width) {
    Histogram h(kind, j.value("unit", ""), nslots, width);
    for (const auto& b : j.at("buckets")) {
        uint64_t lo = b.at(0).get<uint64_t>(), cnt = b.at(2).get<uint64_t>();
        size_t s = kind == HistKind::Log2 ? log2_slot(lo) : size_t(lo / h.width_);
        if (s >= nslots) s = nslots - 1;
        h.slots_[s] += cnt;
        h.count_ += cnt;
    }
    h.sum_ = j.value("sum", uint64_t(0));
    return h;
}

std::string human_bytes(uint64_t b) {
    static const char* units[] = {"", "k", "m", "g", "t"};
    int u = 0;
    while (u < 4 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        ++u;
    }
    return std::to_string(b) + units[u];
}

void Histogram::print(std::ostream& os, const std::string& title) const {
    os << title << " (" << count_ << " values";
    if (count_) os << ", mean " << std::fixed << std::setprecision(1) << double(sum_) / double(count_) << " " << unit_;
    os << ")\n";
    auto bs = buckets();
    if (bs.empty()) {
        os << "     (empty)\n";
        return;
    }
    uint64_t maxc = 0;
    for (const auto& b : bs) maxc = std::max(maxc, b.count);
    size_t first = 0, last = 0;
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i]) {
            if (!last && !first && !slots_[first]) first = i;
            last = i;
        }
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i]) {
            first = i;
            break;
        }
    os << std::setw(22) << unit_ << "          : count    distribution\n";
    for (size_t i = first; i <= last; ++i) {
        std::ostringstream lo, hi;
        lo << slot_lo(i);
        if (kind_ == HistKind::Linear && i + 1 == slots_.size())
            hi << "inf";
        else
            hi << slot_hi(i) - 1;
        int stars = int(double(slots_[i]) * 40.0 / double(maxc));
        os << std::setw(20) << lo.str() << " -> " << std::left << std::setw(20) << hi.str() << std::right << ": "
           << std::setw(8) << slots_[i] << " |" << std::string(stars, '*') << std::string(40 - stars, ' ') << "|\n";
    }
}

}  // namespace kvio
