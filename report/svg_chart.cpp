#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace kvio::report {

std::string html_escape(const std::string& s) {
    std::string o;
    o.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                o += "&amp;";
                break;
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '"':
                o += "&quot;";
                break;
            case '\'':
                o += "&#39;";
                break;
            default:
                o += c;
        }
    }
    return o;
}

std::string human_ns(double ns) {
    char b[32];
    if (ns < 1e3)
        std::snprintf(b, sizeof b, "%.0f ns", ns);
    else if (ns < 1e6)
        std::snprintf(b, sizeof b, "%.3g µs", ns / 1e3);
    else if (ns < 1e9)
        std::snprintf(b, sizeof b, "%.3g ms", ns / 1e6);
    else
        std::snprintf(b, sizeof b, "%.3g s", ns / 1e9);
    return b;
}

std::vector<Bucket> buckets_of(const nlohmann::json& h) {
    std::vector<Bucket> out;
    if (!h.is_object() || !h.contains("buckets")) return out;
    for (const auto& b : h["buckets"])
        out.push_back({b[0].get<uint64_t>(), b[1].get<uint64_t>(), b[2].get<uint64_t>()});
    std::sort(out.begin(), out.end(), [](const Bucket& a, const Bucket& b) { return a.lo < b.lo; });
    return out;
}

namespace {

constexpr int W = 560, H = 270, ML = 64, MR = 16, MT = 28, MB = 78;

std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return b;
}

/// "Nice" tick step (1, 2 or 5 × 10^k) giving about `n` ticks over `span`.
double nice_step(double span, int n) {
    if (span <= 0) return 1;
    double raw = span / n, p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= raw) return m * p;
    return 10 * p;
}

std::string fmt_tick(double v) {
    char b[32];
    if (std::fabs(v - std::round(v)) < 1e-9)
        std::snprintf(b, sizeof b, "%.0f", v);
    else
        std::snprintf(b, sizeof b, "%.3g", v);
    return b;
}

std::string text(double x, double y, const std::string& s, const std::string& attrs = "") {
    return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" " + attrs + ">" + html_escape(s) + "</text>";
}

std::string open_svg(int w, int h, const std::string& title) {
    std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" + std::to_string(w) +
                    "\" height=\"" + std::to_string(h) + "\" viewBox=\"0 0 " + std::to_string(w) + " " +
                    std::to_string(h) + "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" aria-label=\"" +
                    html_escape(title) + "\">";
    s += text(w / 2.0, 16, title, "text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\"");
    return s;
}

/// Y axis with nice ticks over [0, ymax] inside the plot box; returns the scaled max.
std::string y_axis(double ymax, int x, int top, int bottom, const std::string& label, double* scaled_max) {
    double step = nice_step(ymax, 5);
    double top_v = std::max(step, std::ceil(ymax / step) * step);
    *scaled_max = top_v;
    std::string s;
    for (double v = 0; v <= top_v + step / 2; v += step) {
        double y = bottom - (bottom - top) * v / top_v;
        s += "<line x1=\"" + num(x) + "\" x2=\"" + num(x - 4) + "\" y1=\"" + num(y) + "\" y2=\"" + num(y) +
             "\" stroke=\"#333\"/>";
        s += "<line x1=\"" + num(x) + "\" x2=\"" + num(W - MR) + "\" y1=\"" + num(y) + "\" y2=\"" + num(y) +
             "\" stroke=\"#eee\"/>";
        s += text(x - 6, y + 4, fmt_tick(v), "text-anchor=\"end\"");
    }
    s += text(14, (top + bottom) / 2.0, label,
              "text-anchor=\"middle\" transform=\"rotate(-90 14 " + num((top + bottom) / 2.0) + ")\"");
    return s;
}

/// Numeric x axis over [x0, x1] mapped to [left, right] at `y`.
std::string x_axis(double x0, double x1, int left, int right, int y, const std::string& label, int w) {
    std::string s = "<line x1=\"" + num(left) + "\" x2=\"" + num(right) + "\" y1=\"" + num(y) + "\" y2=\"" + num(y) +
                    "\" stroke=\"#333\"/>";
    double step = nice_step(x1 - x0, 6);
    for (double v = std::ceil(x0 / step) * step; v <= x1 + step * 1e-6; v += step) {
        double x = left + (right - left) * (v - x0) / (x1 - x0);
        s += "<line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(y) + "\" y2=\"" + num(y + 4) +
             "\" stroke=\"#333\"/>";
        s += text(x, y + 16, fmt_tick(v), "text-anchor=\"middle\"");
    }
    s += text(w / 2.0, y + 34, label, "text-anchor=\"middle\"");
    return s;
}

}  // namespace

std::string bar_chart(const std::vector<Bucket>& buckets, const std::string& title, const std::string& xlabel,
                      const std::string& ylabel, const std::function<std::string(uint64_t, uint64_t)>& tick,
                      const std::string& empty_note) {
    std::string s = open_svg(W, H, title);
    const int left = ML, right = W - MR, top = MT, bottom = H - MB;
    s += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(right - left) + "\" height=\"" +
         num(bottom - top) + "\" fill=\"none\" stroke=\"#ccc\"/>";
    if (buckets.empty()) {
        s += text((left + right) / 2.0, (top + bottom) / 2.0, "no samples",
                  "text-anchor=\"middle\" font-size=\"14\" fill=\"#888\"");
        if (!empty_note.empty())
            s += text((left + right) / 2.0, (top + bottom) / 2.0 + 18, empty_note,
                      "text-anchor=\"middle\" fill=\"#888\"");
        s += text(W / 2.0, H - 10, xlabel, "text-anchor=\"middle\"");
        return s + "</svg>";
    }
    uint64_t maxc = 0, total = 0;
    for (const auto& b : buckets) maxc = std::max(maxc, b.count), total += b.count;
    double ymax = 0;
    s += y_axis(double(maxc), left, top, bottom, ylabel, &ymax);
    double slot = double(right - left) / double(buckets.size());
    double bw = std::max(1.0, slot * 0.8);
    for (size_t i = 0; i < buckets.size(); ++i) {
        const auto& b = buckets[i];
        double h = (bottom - top) * double(b.count) / ymax;
        double x = left + slot * double(i) + (slot - bw) / 2;
        std::string t = tick(b.lo, b.hi);
        s += "<rect x=\"" + num(x) + "\" y=\"" + num(bottom - h) + "\" width=\"" + num(bw) + "\" height=\"" + num(h) +
             "\" fill=\"#4a7ab5\"><title>" +
             html_escape(t + ": " + std::to_string(b.count) + " (" + fmt_tick(100.0 * double(b.count) / double(total)) +
                         " %)") +
             "</title></rect>";
        // Label every bucket when they fit, else every k-th.
        size_t every = std::max<size_t>(1, size_t(std::ceil(16.0 / std::max(1.0, slot))));
        if (i % every == 0) {
            double cx = x + bw / 2;
            s += text(cx, bottom + 12, t,
                      "text-anchor=\"end\" transform=\"rotate(-40 " + num(cx) + " " + num(bottom + 12) + ")\"");
        }
    }
    s += "<line x1=\"" + num(left) + "\" x2=\"" + num(right) + "\" y1=\"" + num(bottom) + "\" y2=\"" + num(bottom) +
         "\" stroke=\"#333\"/>";
    s += text(W / 2.0, H - 8, xlabel, "text-anchor=\"middle\"");
    return s + "</svg>";
}

std::string heatmap(const HeatGrid& g) {
    const int w = 1100, h = 380, left = 76, right = w - 110, top = MT, bottom = h - 54;
    std::string s = open_svg(w, h, g.title);
    double maxv = 0;
    for (size_t i = 0; i < g.cols * g.rows; ++i) maxv = std::max({maxv, g.read[i], g.write[i]});
    double cw = double(right - left) / double(std::max<size_t>(1, g.cols));
    double ch = double(bottom - top) / double(std::max<size_t>(1, g.rows));
    s += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(right - left) + "\" height=\"" +
         num(bottom - top) + "\" fill=\"#fafafa\" stroke=\"#ccc\"/>";
    auto alpha = [&](double v) { return maxv > 0 && v > 0 ? 0.15 + 0.85 * std::log1p(v) / std::log1p(maxv) : 0.0; };
    for (size_t r = 0; r < g.rows; ++r)
        for (size_t c = 0; c < g.cols; ++c) {
            double rv = g.read[r * g.cols + c], wv = g.write[r * g.cols + c];
            if (rv <= 0 && wv <= 0) continue;
            bool is_w = wv >= rv;
            double x = left + cw * double(c), y = bottom - ch * double(r + 1);
            s += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(cw + 0.3) + "\" height=\"" +
                 num(ch + 0.3) + "\" fill=\"" + (is_w ? "#c0392b" : "#2e6fb5") + "\" fill-opacity=\"" +
                 num(alpha(is_w ? wv : rv)) + "\"/>";
        }
    // y axis
    double step = nice_step(g.y1 - g.y0, 6);
    for (double v = std::ceil(g.y0 / step) * step; v <= g.y1 + step * 1e-6; v += step) {
        double y = bottom - (bottom - top) * (v - g.y0) / (g.y1 - g.y0);
        s += "<line x1=\"" + num(left) + "\" x2=\"" + num(left - 4) + "\" y1=\"" + num(y) + "\" y2=\"" + num(y) +
             "\" stroke=\"#333\"/>";
        s += text(left - 6, y + 4, fmt_tick(v), "text-anchor=\"end\"");
    }
    s += text(16, (top + bottom) / 2.0, g.ylabel,
              "text-anchor=\"middle\" transform=\"rotate(-90 16 " + num((top + bottom) / 2.0) + ")\"");
    s += x_axis(g.x0, g.x1, left, right, bottom, g.xlabel, left + right);
    // legend
    s += "<rect x=\"" + num(right + 14) + "\" y=\"" + num(top + 10) +
         "\" width=\"14\" height=\"14\" fill=\"#c0392b\"/>" + text(right + 32, top + 21, "write bytes");
    s += "<rect x=\"" + num(right + 14) + "\" y=\"" + num(top + 32) +
         "\" width=\"14\" height=\"14\" fill=\"#2e6fb5\"/>" + text(right + 32, top + 43, "read bytes");
    s += text(right + 14, top + 66, "darker = more") + text(right + 14, top + 80, "(log scale)");
    return s + "</svg>";
}

std::string timeline(const std::vector<std::string>& lanes, const std::vector<Span>& spans, double x0, double x1,
                     const std::string& title, const std::string& xlabel) {
    const int w = 1100, left = 150, right = w - 20, top = MT + 4, lane_h = 30;
    const int bottom = top + lane_h * int(lanes.size()), h = bottom + 50;
    std::string s = open_svg(w, h, title);
    if (x1 <= x0) x1 = x0 + 1;
    for (size_t i = 0; i < lanes.size(); ++i) {
        double y = top + lane_h * double(i);
        s += "<rect x=\"" + num(left) + "\" y=\"" + num(y) + "\" width=\"" + num(right - left) + "\" height=\"" +
             num(lane_h) + "\" fill=\"" + (i % 2 ? "#f6f6f6" : "#fdfdfd") + "\"/>";
        s += text(left - 8, y + lane_h / 2.0 + 4, lanes[i], "text-anchor=\"end\"");
    }
    auto X = [&](double t) { return left + (right - left) * (std::clamp(t, x0, x1) - x0) / (x1 - x0); };
    for (const auto& sp : spans) {
        if (sp.t1 < x0 || sp.t0 > x1 || sp.lane >= lanes.size()) continue;
        double xa = X(sp.t0), xb = std::max(X(sp.t1), xa + 0.6);
        double y = top + lane_h * double(sp.lane) + 4;
        s += "<rect x=\"" + num(xa) + "\" y=\"" + num(y) + "\" width=\"" + num(xb - xa) + "\" height=\"" +
             num(lane_h - 8) + "\" fill=\"" + html_escape(sp.color) + "\" stroke=\"#fff\" stroke-width=\"0.3\">";
        if (sp.tooltip) s += "<title>" + html_escape(sp.label) + "</title>";
        s += "</rect>";
        if (!sp.label.empty() && xb - xa > 7.0 * double(sp.label.size()))
            s += text((xa + xb) / 2, y + lane_h / 2.0, sp.label,
                      "text-anchor=\"middle\" fill=\"#fff\" font-size=\"10\"");
    }
    s += x_axis(x0, x1, left, right, bottom, xlabel, left + right);
    return s + "</svg>";
}

}  // namespace kvio::report
