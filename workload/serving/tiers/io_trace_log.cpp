#include "workload/serving/tiers/io_trace_log.h"

#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/error.h"

namespace kvio::serving {

IoTraceLog::IoTraceLog(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) throw Error("--io-trace-log " + path + ": " + std::strerror(errno));
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".zst") == 0) {
        zc_ = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(zc_, ZSTD_c_compressionLevel, 3);
        zout_.resize(ZSTD_CStreamOutSize());
    }
    std::lock_guard<std::mutex> g(mu_);
    put("Timestamp,Operation,Object_Size_Bytes,Tier,Key,Phase\n");
}

IoTraceLog::~IoTraceLog() {
    try {
        close();
    } catch (...) {}
}

void IoTraceLog::put(const std::string& s) {
    if (!f_) return;
    if (!zc_) {
        // Line-buffered like the benchmark's file: each row reaches the file when it is written.
        if (std::fwrite(s.data(), 1, s.size(), f_) != s.size() || std::fflush(f_) != 0)
            throw Error("--io-trace-log " + path_ + ": write failed: " + std::strerror(errno));
        return;
    }
    ZSTD_inBuffer in{s.data(), s.size(), 0};
    while (in.pos < in.size) {
        ZSTD_outBuffer out{zout_.data(), zout_.size(), 0};
        size_t r = ZSTD_compressStream2(zc_, &out, &in, ZSTD_e_continue);
        if (ZSTD_isError(r)) throw Error("--io-trace-log " + path_ + ": zstd: " + ZSTD_getErrorName(r));
        if (std::fwrite(zout_.data(), 1, out.pos, f_) != out.pos)
            throw Error("--io-trace-log " + path_ + ": write failed: " + std::strerror(errno));
    }
}

void IoTraceLog::row(const char* op, uint64_t bytes, int tier, const std::string& key, const char* phase) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char head[96];
    int n = std::snprintf(head, sizeof head, "%lld.%06ld,%s,%llu,Tier-%d,", (long long)ts.tv_sec, ts.tv_nsec / 1000, op,
                          (unsigned long long)bytes, tier);
    std::string line(head, size_t(n));
    line += key;
    line += ',';
    line += phase;
    line += '\n';
    std::lock_guard<std::mutex> g(mu_);
    put(line);
    ++rows_;
}

void IoTraceLog::close() {
    std::lock_guard<std::mutex> g(mu_);
    if (!f_) return;
    bool ok = true;
    if (zc_) {
        ZSTD_inBuffer in{nullptr, 0, 0};
        size_t left;
        do {
            ZSTD_outBuffer out{zout_.data(), zout_.size(), 0};
            left = ZSTD_compressStream2(zc_, &out, &in, ZSTD_e_end);
            if (ZSTD_isError(left)) {
                ok = false;
                break;
            }
            ok = ok && std::fwrite(zout_.data(), 1, out.pos, f_) == out.pos;
        } while (left != 0);
        ZSTD_freeCCtx(zc_);
        zc_ = nullptr;
    }
    ok = (std::fclose(f_) == 0) && ok;
    f_ = nullptr;
    if (!ok) throw Error("--io-trace-log " + path_ + ": could not finish the file");
}

uint64_t IoTraceLog::rows() const {
    std::lock_guard<std::mutex> g(mu_);
    return rows_;
}

}  // namespace kvio::serving
