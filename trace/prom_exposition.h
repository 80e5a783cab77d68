// The tracer's histograms and counters as Prometheus metrics: the text exposition format 0.0.4 and OpenMetrics 1.0
// (`kvio trace --listen`, `--prom-textfile`). Names follow Prometheus conventions: base units (_seconds, _bytes),
// _total for counters, classic histograms with cumulative `le` buckets; labels device (the disk name), op and, for
// NVMe queues, queue. The metric list is in docs/formats.md ("Prometheus metrics").
#pragma once
#include <string>

#include "trace/trace_snapshot.h"

namespace kvio::trace {

enum class ExpositionFormat {
    Text,         ///< text/plain; version=0.0.4
    OpenMetrics,  ///< application/openmetrics-text; version=1.0.0 (ends with "# EOF")
};

/// OpenMetrics when the Accept header names application/openmetrics-text (Prometheus >= 2.5 asks so), else text.
ExpositionFormat negotiate_format(const std::string& accept);
/// The Content-Type header of a format.
const char* content_type(ExpositionFormat f);

/// Every metric of the snapshot. Log2 slot k (values [2^(k-1), 2^k)) becomes the bucket le = 2^k - 1 in the base
/// unit (ns -> seconds: x 1e-9), exact for the integer ns and bytes the kernel counts; buckets are emitted for a fixed
/// range (latency 1 us .. 68.7 s, sizes 511 B .. 256 MiB, queue depth 1 .. 126) so each series keeps the same `le`
/// set from scrape to scrape, plus +Inf.
std::string render_metrics(const TraceSnapshot& s, ExpositionFormat f);

/// Writes `text` to `path` atomically for node_exporter's textfile collector: a temporary file in the same directory,
/// then rename(2). Throws kvio::Error naming the path.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace kvio::trace
