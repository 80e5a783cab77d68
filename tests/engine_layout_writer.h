// A small writer of engines' KV file directories as docs/engine_layouts.md describes them: vLLM's offloading
// filesystem tier (llm-d fs backend) and LMCache's local disk backend. Names and sizes only; the bytes are a pattern
// (the engines write raw tensor bytes with no header, so any bytes of the right length are a faithful file).
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace kvio::test {

/// The 16 lowercase hex digits vLLM's fs tier names a block by (the hash's low 64 bits).
inline std::string hex16(uint64_t h) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", (unsigned long long)h);
    return b;
}

/// vLLM fs tier: MODEL/block_size_B_blocks_per_file_N/tp_T_pp_size_1_pcp_size_1/rank_R/DTYPE/hhh/hh/HASH.bin.
inline std::string vllm_fs_rel(const std::string& model, uint32_t block_size, uint32_t blocks_per_file, uint32_t tp,
                               uint32_t rank, const std::string& dtype, uint64_t hash) {
    const std::string h = hex16(hash);
    return model + "/block_size_" + std::to_string(block_size) + "_blocks_per_file_" + std::to_string(blocks_per_file) +
           "/tp_" + std::to_string(tp) + "_pp_size_1_pcp_size_1/rank_" + std::to_string(rank) + "/" + dtype + "/" +
           h.substr(0, 3) + "/" + h.substr(3, 2) + "/" + h + ".bin";
}

/// LMCache local disk: FMT@MODEL@WORLD@WORKER@HASH@DTYPE.pt, '/' in the model name written as '-'.
inline std::string lmcache_disk_rel(std::string model, uint32_t world, uint32_t worker, uint64_t hash,
                                    const std::string& dtype) {
    for (char& c : model)
        if (c == '/') c = '-';
    char h[17];
    std::snprintf(h, sizeof h, "%llx", (unsigned long long)hash);
    return "vllm@" + model + "@" + std::to_string(world) + "@" + std::to_string(worker) + "@" + h + "@" + dtype + ".pt";
}

/// Creates DIR/REL (and its directories) holding `size` bytes: sparse (ftruncate) when `sparse`, else written
/// in one write of a pattern buffer (O_DIRECT when `direct`: the buffer is page-aligned, `size` must be a
/// multiple of 4096) and fsynced.
inline void write_kv_file(const std::string& dir, const std::string& rel, uint64_t size, bool sparse,
                          bool direct = false) {
    const std::filesystem::path p = std::filesystem::path(dir) / rel;
    std::filesystem::create_directories(p.parent_path());
    const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
    if (fd < 0) throw std::runtime_error(p.string() + ": " + std::strerror(errno));
    bool ok = true;
    if (sparse) {
        ok = ftruncate(fd, off_t(size)) == 0;
    } else {
        void* buf = nullptr;
        if (posix_memalign(&buf, 4096, size ? size : 4096) != 0) throw std::runtime_error("posix_memalign");
        for (uint64_t i = 0; i < size; i++) static_cast<unsigned char*>(buf)[i] = uint8_t(i * 131 + 7);
        ok = write(fd, buf, size) == ssize_t(size) && fsync(fd) == 0;
        free(buf);
    }
    close(fd);
    if (!ok) throw std::runtime_error(p.string() + ": write failed: " + std::strerror(errno));
}

}  // namespace kvio::test
