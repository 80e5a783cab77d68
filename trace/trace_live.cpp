#include "trace/trace_live.h"

#include <time.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "common/error.h"
#include "trace/prom_exposition.h"

namespace kvio::trace {

namespace {

/// Histogram `name` of a device's map, nullptr when absent.
const Histogram* find(const std::map<std::string, Histogram>& m, const char* name) {
    auto it = m.find(name);
    return it == m.end() ? nullptr : &it->second;
}

/// Both directions' D2C in one histogram.
Histogram d2c_both(const std::map<std::string, Histogram>& m) {
    Histogram h = make_dev_hist(KVIO_H_D2C_READ, 1);
    for (const char* name : {"d2c_read", "d2c_write"})
        if (const Histogram* x = find(m, name)) h.merge(*x);
    return h;
}

uint64_t count_of(const std::map<std::string, Histogram>& m, const char* name) {
    const Histogram* h = find(m, name);
    return h ? h->count() : 0;
}

uint64_t sum_of(const std::map<std::string, Histogram>& m, const char* name) {
    const Histogram* h = find(m, name);
    return h ? h->sum() : 0;
}

uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

std::string wall_clock() {
    time_t t = time(nullptr);
    tm lt{};
    localtime_r(&t, &lt);
    char buf[16];
    strftime(buf, sizeof buf, "%H:%M:%S", &lt);
    return buf;
}

const char* kIndexHtml =
    "<!DOCTYPE html>\n<html><head><title>kvio trace exporter</title></head><body>\n"
    "<h1>kvio trace</h1>\n<p>The storage latency stack of this host (D2C, Q2D, VFS, fsync, command sizes, queue "
    "depth), "
    "read from the in-kernel histograms at each scrape.</p>\n<p><a "
    "href=\"/metrics\">/metrics</a></p>\n</body></html>\n";

}  // namespace

void print_interval(std::ostream& os, const TraceReport& delta, double seconds) {
    const double s = seconds > 0 ? seconds : 1;
    os << "\n" << wall_clock() << "  interval " << std::fixed << std::setprecision(2) << seconds << " s\n";
    os << std::left << std::setw(12) << "DEVICE" << std::right << std::setw(10) << "r/s" << std::setw(10) << "w/s"
       << std::setw(10) << "rMB/s" << std::setw(10) << "wMB/s" << std::setw(11) << "D2C_p50" << std::setw(11)
       << "D2C_p99" << std::setw(11) << "D2C_p99.9" << std::setw(8) << "QD"
       << "\n";
    for (const auto& [kdev, hists] : delta.devices()) {
        uint64_t r = count_of(hists, "bssplit_read"), w = count_of(hists, "bssplit_write");
        Histogram d2c = d2c_both(hists);
        uint64_t qd_n = count_of(hists, "qd_read") + count_of(hists, "qd_write");
        double qd = qd_n ? double(sum_of(hists, "qd_read") + sum_of(hists, "qd_write")) / double(qd_n) : 0;
        os << std::left << std::setw(12) << disk_name(kdev) << std::right << std::setprecision(1) << std::setw(10)
           << double(r) / s << std::setw(10) << double(w) / s << std::setprecision(2) << std::setw(10)
           << double(sum_of(hists, "bssplit_read")) / s / 1e6 << std::setw(10)
           << double(sum_of(hists, "bssplit_write")) / s / 1e6 << std::setw(11)
           << (d2c.count() ? human_ns(d2c.quantile(0.5)) : "-") << std::setw(11)
           << (d2c.count() ? human_ns(d2c.quantile(0.99)) : "-") << std::setw(11)
           << (d2c.count() ? human_ns(d2c.quantile(0.999)) : "-") << std::setprecision(1) << std::setw(8) << qd << "\n";
    }
    for (const auto& [kdev, hists] : delta.devices())
        for (const char* name : {"d2c_read", "d2c_write"})
            if (const Histogram* h = find(hists, name); h && h->count()) {
                h->print(os, disk_name(kdev) + " " + name);
                print_percentiles(os, *h);
            }
    print_groups(os, delta, delta.group_by());
    os.flush();
}

LiveOutputs::LiveOutputs(const LiveOptions& opts, Snapshotter snap, std::ostream& human)
    : opts_(opts), snap_(std::move(snap)), human_(human) {
    if (!opts_.listen.empty())
        server_ = std::make_unique<HttpServer>(opts_.listen, [this](const HttpRequest& req) {
            if (req.path == "/metrics") {
                auto f = negotiate_format(req.accept);
                return HttpResponse{200, content_type(f), render_metrics(snap_(), f)};
            }
            if (req.path == "/") return HttpResponse{200, "text/html; charset=utf-8", kIndexHtml};
            return HttpResponse{404, "text/plain; charset=utf-8", "not found: try /metrics\n"};
        });
    uint64_t now = now_ns();
    if (opts_.interval_s > 0) {
        prev_.emplace(snap_());
        next_interval_ns_ = now + uint64_t(opts_.interval_s * 1e9);
    }
    if (!opts_.textfile.empty()) {
        write_textfile(snap_());  // a bad path fails now, not after the first interval
        double every = opts_.interval_s > 0 ? opts_.interval_s : opts_.textfile_every_s;
        next_textfile_ns_ = now + uint64_t(every * 1e9);
    }
}

void LiveOutputs::add_poll_fds(std::vector<pollfd>& fds) const {
    if (server_) server_->add_poll_fds(fds);
}

int LiveOutputs::timeout_ms(uint64_t now, int cap_ms) const {
    int64_t t = cap_ms;
    for (uint64_t due : {next_interval_ns_, next_textfile_ns_})
        if (due) t = std::min<int64_t>(t, due > now ? int64_t((due - now) / 1000000) + 1 : 0);
    return int(t);
}

void LiveOutputs::tick_interval(uint64_t now) {
    TraceSnapshot cur = snap_();
    print_interval(human_, cur.report.minus(prev_->report), double(cur.taken_ns - prev_->taken_ns) / 1e9);
    prev_.emplace(std::move(cur));
    ++printed_;
    // the next tick keeps to the INTERVAL grid (a late tick does not shift the ones after it)
    while (next_interval_ns_ <= now) next_interval_ns_ += uint64_t(opts_.interval_s * 1e9);
}

void LiveOutputs::write_textfile(const TraceSnapshot& s) {
    write_file_atomically(opts_.textfile, render_metrics(s, ExpositionFormat::Text));
}

void LiveOutputs::service(uint64_t now) {
    if (server_) server_->service(now);
    if (next_interval_ns_ && now >= next_interval_ns_ && !done()) tick_interval(now);
    if (next_textfile_ns_ && now >= next_textfile_ns_) {
        write_textfile(snap_());
        double every = opts_.interval_s > 0 ? opts_.interval_s : opts_.textfile_every_s;
        while (next_textfile_ns_ <= now) next_textfile_ns_ += uint64_t(every * 1e9);
    }
}

void LiveOutputs::finish(const TraceSnapshot& final_snapshot) {
    if (!opts_.textfile.empty()) write_textfile(final_snapshot);
}

}  // namespace kvio::trace
