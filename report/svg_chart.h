// Small inline-SVG charts for report.html: bar charts of histogram buckets, a 2-D heatmap, a lane timeline.
// Every function returns one self-contained <svg> element; all text passes through html_escape().
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/histogram.h"

namespace kvio::report {

/// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(const std::string& s);
/// A duration in ns as "750 ns", "12.5 µs", "3.2 ms", "1.50 s".
std::string human_ns(double ns);

/// The buckets of a kvio.trace/1 histogram object ({"buckets": [[lo, hi, count], ...]}, docs/formats.md) sorted by
/// lower bound; none when `h` is not an object or holds no "buckets".
std::vector<Bucket> buckets_of(const nlohmann::json& h);

/// One bar per non-empty bucket (categorical x axis: log2 buckets have unequal widths), y = count.
/// `tick(lo, hi)` labels a bucket. An empty `buckets` draws the frame with "no samples" and `empty_note`.
std::string bar_chart(const std::vector<Bucket>& buckets, const std::string& title, const std::string& xlabel,
                      const std::string& ylabel, const std::function<std::string(uint64_t, uint64_t)>& tick,
                      const std::string& empty_note = "");

/// A time × address grid: cell (col, row) holds read and write bytes; row 0 is the lowest address.
struct HeatGrid {
    size_t cols = 0, rows = 0;
    std::vector<double> read, write;  ///< cols × rows, index row * cols + col
    double x0 = 0, x1 = 1;            ///< x range (axis units)
    double y0 = 0, y1 = 1;            ///< y range (axis units)
    std::string title, xlabel, ylabel;
};
/// Cells coloured blue (reads) / red (writes), opacity by log of the bytes in the cell.
std::string heatmap(const HeatGrid& g);

/// A bar on a timeline lane, in axis units.
struct Span {
    double t0 = 0, t1 = 0;
    size_t lane = 0;
    std::string color;  ///< CSS colour
    std::string label;  ///< drawn inside when wide enough; also the tooltip (<title>) when `tooltip`
    bool tooltip = false;
};
/// Lanes top to bottom, x axis [x0, x1] labelled `xlabel`.
std::string timeline(const std::vector<std::string>& lanes, const std::vector<Span>& spans, double x0, double x1,
                     const std::string& title, const std::string& xlabel);

}  // namespace kvio::report
