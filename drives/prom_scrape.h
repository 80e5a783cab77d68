// Device-side figures of a remote run: `kvio trace --listen` on the remote host, scraped before and after the run;
// the difference of the two scrapes is the run's (the exporter's histograms are never cleared, README "Prometheus").
#pragma once
#include <map>
#include <string>

#include "drives/figures.h"

namespace kvio::drives {

/// One scrape: every sample line of the text exposition, "name{labels}" (as written) → value.
using PromScrape = std::map<std::string, double>;

/// GET http://HOST:PORT/metrics (HTTP/1.0, `timeout_s` for connect and each read). Throws kvio::Error naming the
/// address on failure or a status other than 200.
PromScrape scrape_metrics(const std::string& host, int port, double timeout_s);

/// Parses the Prometheus text format's sample lines (comments and blank lines skipped).
PromScrape parse_prom_text(const std::string& text);

/// The run's figures on `device` (a kernel disk name; empty: the device that moved the most bytes between the
/// scrapes) from kvio_d2c_seconds, kvio_q2d_seconds and kvio_queue_depth histograms and kvio_device_*_total
/// counters: `after` − `before`. Percentiles interpolated linearly inside the cumulative bucket that holds them, in
/// ns. `present` false when the device is not in the scrape.
DeviceFigures device_figures_between(const PromScrape& before, const PromScrape& after, const std::string& device);

}  // namespace kvio::drives
