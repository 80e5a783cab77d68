#include "workload/serving/semantic_log.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/devinfo.h"
#include "common/error.h"
#include "workload/fiemap.h"

namespace kvio::serving {

namespace {
uint64_t round_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }
}  // namespace

SemanticLog::SemanticLog(const std::string& path, const Meta& meta) : path_(path), meta_(meta) {
    struct stat st{};
    if (::stat(meta.dir.c_str(), &st) != 0) throw Error(meta.dir + ": " + std::strerror(errno));
    BlockDevInfo info;
    try {
        info = block_dev_info_for_path(meta.dir);
    } catch (const Error&) {
        throw Error("--enable-latency-tracing: the storage tier " + meta.dir +
                    " is not on a block device (tmpfs?): there are no device commands to join; put --cache-dir on a "
                    "disk or a loop device");
    }
    const BlockDevInfo disk = info.is_partition ? block_dev_info(info.whole_disk) : info;
    dev_str_ = dev_string(disk.dev);
    kdev_ = kernel_dev(disk.dev);
    part_start_ = info.start_sector * 512;
    // The unit validate pads a payload to: O_DIRECT on a filesystem writes whole filesystem blocks (ext4 turns a
    // 512-byte-aligned tail of an unwritten block into a write of the whole 4 KiB block), so the storage tier pads
    // its payload I/O to block_align, never less than the disk's logical block.
    lba_bytes_ = std::max<uint64_t>(disk.logical_block_size ? disk.logical_block_size : 512, meta.block_align);
    out_.open(path, std::ios::trunc);
    if (!out_) throw Error(path + ": cannot write: " + std::strerror(errno));
    nlohmann::ordered_json m = {{"type", "meta"},
                                {"schema", "kvio.semantic/1"},
                                {"source", "kvio simulate"},
                                {"model", meta.model},
                                {"engine", meta.engine},
                                {"layout", "files"},
                                {"target", meta.dir},
                                {"target_kind", "directory"},
                                {"dev", dev_str_},
                                {"disk", disk.name},
                                {"part_start_bytes", part_start_},
                                {"lba_bytes", lba_bytes_},
                                {"mdts_bytes", uint64_t(disk.max_hw_sectors_kb) * 1024},
                                {"max_io_bytes", meta.max_io_bytes},
                                {"block_align", meta.block_align},
                                {"header_bytes", meta.header_bytes},
                                {"max_sectors_kb", disk.max_sectors_kb},
                                {"buffered", meta.buffered},
                                {"clock", "CLOCK_MONOTONIC"}};
    out_ << m.dump() << '\n';
}

SemanticLog::~SemanticLog() {
    try {
        close();
    } catch (const Error&) {
    }
}

void SemanticLog::record(bool store, const std::string& key, int fd, uint64_t payload_bytes, uint64_t ts_start_ns,
                         uint64_t ts_ns, uint32_t transfers, const std::string& error) {
    const uint64_t hdr = meta_.header_bytes ? round_up(meta_.header_bytes, meta_.block_align) : 0;
    const uint64_t payload_io = round_up(payload_bytes, lba_bytes_);
    const uint64_t off = store ? 0 : hdr, len = store ? hdr + payload_io : payload_io;
    nlohmann::ordered_json ext = nlohmann::ordered_json::array();
    std::string err = error;
    if (err.empty()) {
        try {
            for (const auto& e : workload::file_extents(fd, off, len, key))
                ext.push_back({e.physical + part_start_, e.length});
        } catch (const Error& e) {
            err = std::string("FIEMAP: ") + e.what();
        }
    }
    std::lock_guard lk(mu_);
    auto [it, fresh] = ids_.try_emplace(key, ids_.size());
    nlohmann::ordered_json r = {{"op", store ? "store" : "load"},
                                {"object_id", it->second},
                                {"trace_id", ++seq_},
                                {"key", key},
                                {"bytes", len},
                                {"payload_bytes", payload_bytes},
                                {"dev", dev_str_},
                                {"dev_off", ext.empty() ? uint64_t(0) : ext[0][0].get<uint64_t>()},
                                {"extents", std::move(ext)},
                                {"ts_start", ts_start_ns},
                                {"ts", ts_ns},
                                {"engine", meta_.engine},
                                {"transfers", transfers}};
    if (!err.empty()) r["error"] = err;
    out_ << r.dump() << '\n';
    out_.flush();  // one line per KV entry op (KiB to GiB of I/O): validate may read the file while the tier lives
}

uint64_t SemanticLog::records() const {
    std::lock_guard lk(mu_);
    return seq_;
}

void SemanticLog::close() {
    std::lock_guard lk(mu_);
    if (!out_.is_open()) return;
    out_.flush();
    const bool ok = bool(out_);
    out_.close();
    if (!ok) throw Error(path_ + ": cannot write the semantic records: " + std::strerror(errno));
}

}  // namespace kvio::serving
