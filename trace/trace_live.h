// What a running `kvio trace` shows before it stops: a line per device and histograms each INTERVAL
// (biolatency/iostat habit), the Prometheus endpoint (--listen) and the node_exporter textfile (--prom-textfile).
// Everything is read from the in-kernel maps when it is due (a tick or a scrape): no cost per traced event.
#pragma once
#include <poll.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trace/http_server.h"
#include "trace/trace_snapshot.h"

namespace kvio::trace {

struct LiveOptions {
    double interval_s = 0;         ///< INTERVAL: print every this many seconds; 0 = no interval output
    uint64_t count = 0;            ///< COUNT: stop after this many intervals; 0 = until stopped
    std::string listen;            ///< --listen ADDR:PORT, "" = none
    std::string textfile;          ///< --prom-textfile FILE, "" = none
    double textfile_every_s = 10;  ///< how often FILE is rewritten without INTERVAL
};

/// Prints one interval: a line per device that saw commands (r/s, w/s, rMB/s, wMB/s, D2C p50/p99/p99.9 over both
/// directions, mean queue depth at dispatch), then the non-empty D2C histograms with their percentiles, then the
/// --per-process/--per-cgroup table. `delta` holds what the interval added; `seconds` is its length.
void print_interval(std::ostream& os, const TraceReport& delta, double seconds);

class LiveOutputs {
public:
    using Snapshotter = std::function<TraceSnapshot()>;
    /// Opens the listening socket (throws kvio::Error for a bad or busy address) and takes the first snapshot.
    LiveOutputs(const LiveOptions& opts, Snapshotter snap, std::ostream& human);

    /// The address --listen bound ("" without it), with the real port when 0 was asked.
    std::string bound() const { return server_ ? server_->bound() : ""; }
    /// Appends the HTTP server's fds to wait on.
    void add_poll_fds(std::vector<pollfd>& fds) const;
    /// Milliseconds until the next tick is due, at most `cap_ms`.
    int timeout_ms(uint64_t now_ns, int cap_ms) const;
    /// Answers scrapes and runs the ticks that are due (interval print, textfile).
    void service(uint64_t now_ns);
    /// COUNT intervals were printed.
    bool done() const { return opts_.count && printed_ >= opts_.count; }
    /// At stop: the textfile once more, from `final_snapshot`.
    void finish(const TraceSnapshot& final_snapshot);

private:
    void tick_interval(uint64_t now_ns);
    void write_textfile(const TraceSnapshot& s);

    LiveOptions opts_;
    Snapshotter snap_;
    std::ostream& human_;
    std::unique_ptr<HttpServer> server_;
    std::optional<TraceSnapshot> prev_;  ///< the last interval's snapshot
    uint64_t next_interval_ns_ = 0, next_textfile_ns_ = 0;
    uint64_t printed_ = 0;
};

}  // namespace kvio::trace
