#include "workload/serving/tiers/storage_common.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <cstring>

#include "common/error.h"
#include "workload/serving/tiers/waterfall.h"

namespace kvio::serving {

std::string errno_text(const std::string& what, const std::string& path) {
    return what + " " + path + ": " + std::strerror(errno);
}

void delete_npy_files(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw Error(errno_text("cannot open cache directory", dir));
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0) ::unlinkat(::dirfd(d), n.c_str(), 0);
    }
    ::closedir(d);
}

std::string make_temp_cache_dir(const std::string& parent) {
    std::string tmpl = parent + "/kv_cache_" + std::to_string(::getpid()) + "_XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw Error(errno_text("cannot create the temporary cache directory", tmpl));
    return tmpl;
}

std::vector<std::string> remove_dead_temp_cache_dirs(const std::string& parent) {
    std::vector<std::string> removed;
    DIR* d = ::opendir(parent.c_str());
    if (!d) return removed;
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
    for (const std::string& n : names) {
        const std::string prefix = "kv_cache_";
        if (n.rfind(prefix, 0) != 0) continue;
        const size_t end = n.find('_', prefix.size());
        if (end == std::string::npos || end == prefix.size()) continue;
        const std::string digits = n.substr(prefix.size(), end - prefix.size());
        if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
        const pid_t pid = pid_t(std::stol(digits));
        if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge (EPERM)
        const std::string path = parent + "/" + n;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
        if (!ec) removed.push_back(path);
    }
    return removed;
}

std::optional<FsRoom> dir_room(const std::string& dir) {
    struct statvfs v {};
    if (::statvfs(dir.c_str(), &v) != 0) return std::nullopt;
    return FsRoom{uint64_t(v.f_frsize), uint64_t(v.f_bavail)};
}

uint64_t shared_auto_capacity(const FsRoom& room, int clients) {
    const uint64_t usable_blocks = uint64_t(double(room.avail_blocks) * 0.95);  // rounded down: whole blocks
    return usable_blocks / uint64_t(std::max(clients, 1)) * room.block;
}

uint64_t dir_auto_capacity(const std::string& dir) {
    const std::optional<FsRoom> r = dir_room(dir);
    return r ? shared_auto_capacity(*r, 1) : kUnlimited;
}

std::vector<std::pair<uint64_t, uint64_t>> merge_adjacent(const std::vector<std::pair<uint64_t, uint64_t>>& e) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const auto& x : e) {
        if (!out.empty() && out.back().first + out.back().second == x.first)
            out.back().second += x.second;
        else
            out.push_back(x);
    }
    return out;
}

uint64_t dir_block_bytes(const std::string& dir) {
    struct statvfs v;
    if (::statvfs(dir.c_str(), &v) != 0 || v.f_frsize == 0) return 4096;
    return v.f_frsize;
}

std::unique_ptr<StorageSemanticLog> open_semantic_log(const StorageOptions& o, const workload::TargetInfo* t,
                                                      const std::string& engine, const std::string& layout,
                                                      bool buffered, uint64_t header_bytes, uint64_t max_io_bytes) {
    if (o.semantic_path.empty()) return nullptr;
    if (!t)
        throw Error("semantic records of the storage tier: " + o.path +
                    " is not on a block device (tmpfs?), so its bytes have no device offsets");
    workload::check_offset_mappable(*t);
    return std::make_unique<StorageSemanticLog>(o.semantic_path, *t, engine, layout, buffered, header_bytes,
                                                max_io_bytes, o.qd);
}

std::unique_ptr<StorageTier> make_storage_tier(const StorageOptions& o) {
    if (o.io != "buffered" && o.io != "direct" && o.io != "io_uring")
        throw Error("--storage-io '" + o.io + "': expected buffered, direct or io_uring");
    struct stat st;
    if (::stat(o.path.c_str(), &st) != 0) throw Error(errno_text("--cache-dir", o.path));
    if (S_ISBLK(st.st_mode)) {
        if (o.io == "buffered")
            throw Error("--cache-dir " + o.path + " is a block device: use --storage-io direct or io_uring (O_DIRECT)");
        return make_block_tier(o);
    }
    if (!S_ISDIR(st.st_mode)) throw Error("--cache-dir " + o.path + ": not a directory or block device");
    return o.io == "buffered" ? make_buffered_dir_tier(o) : make_direct_dir_tier(o);
}

}  // namespace kvio::serving
