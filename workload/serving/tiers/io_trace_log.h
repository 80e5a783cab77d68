// --io-trace-log PATH (docs/mlperf-benchmark.md, "Trace replay and special modes", the benchmark's tracer.py:IOTracer):
// one CSV row per cache operation, `Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase`. Timestamp = CLOCK_REALTIME
// epoch seconds with 6 decimals; Operation Read|Write; size = the TP-adjusted object bytes; Tier Tier-0|1|2|3 =
// gpu|cpu|storage|remote (kvio's own tier); Phase Prefill|Decode|Evict. A path ending in ".zst" is compressed with
// libzstd streaming at level 3 (the benchmark's level) and finished with a proper end frame on close().
#pragma once
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

struct ZSTD_CCtx_s;

namespace kvio::serving {

class IoTraceLog {
public:
    /// Creates `path` and writes the header. Throws kvio::Error naming the path when it cannot.
    explicit IoTraceLog(const std::string& path);
    ~IoTraceLog();
    IoTraceLog(const IoTraceLog&) = delete;
    IoTraceLog& operator=(const IoTraceLog&) = delete;

    /// Appends one row (thread-safe). `op` "Read"|"Write", `tier` 0..2, `phase` "Prefill"|"Decode"|"Evict".
    void row(const char* op, uint64_t bytes, int tier, const std::string& key, const char* phase);
    /// Flushes and finishes the file (the zstd frame end). Idempotent; the destructor calls it.
    void close();
    uint64_t rows() const;
    const std::string& path() const { return path_; }

private:
    void put(const std::string& s);  // mu_ held
    std::string path_;
    mutable std::mutex mu_;
    FILE* f_ = nullptr;
    ZSTD_CCtx_s* zc_ = nullptr;
    std::vector<char> zout_;
    uint64_t rows_ = 0;
};

}  // namespace kvio::serving
