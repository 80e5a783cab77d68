#include "common/devinfo.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace kvio {
namespace fs = std::filesystem;

std::string dev_string(DevId d) { return std::to_string(d.major) + ":" + std::to_string(d.minor); }

std::optional<DevId> parse_dev_string(const std::string& s) {
    auto colon = s.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return std::nullopt;
    try {
        size_t a = 0, b = 0;
        unsigned long maj = std::stoul(s.substr(0, colon), &a);
        unsigned long min = std::stoul(s.substr(colon + 1), &b);
        if (a != colon || b != s.size() - colon - 1 || maj > 0xfff || min > 0xfffff) return std::nullopt;
        return DevId{uint32_t(maj), uint32_t(min)};
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

static std::optional<std::string> read_line(const fs::path& p) {
    std::ifstream in(p);
    std::string s;
    if (!in || !std::getline(in, s)) return std::nullopt;
    return s;
}

static uint64_t read_u64(const fs::path& p, uint64_t dflt) {
    auto s = read_line(p);
    if (!s) return dflt;
    try {
        return std::stoull(*s);
    } catch (const std::exception&) {
        return dflt;
    }
}

std::optional<DiskStat> read_disk_stat(DevId dev) {
    auto line = read_line(fs::path("/sys/dev/block") / dev_string(dev) / "stat");
    if (!line) return std::nullopt;
    std::istringstream in(*line);
    uint64_t v[6] = {};
    for (auto& x : v)
        if (!(in >> x)) return std::nullopt;
    return DiskStat{v[0], v[1], v[4], v[5]};  // fields 1, 2, 5, 6: read I/Os, read merges, write I/Os, write merges
}

BlockDevInfo block_dev_info(DevId dev) {
    fs::path sys = fs::path("/sys/dev/block") / dev_string(dev);
    std::error_code ec;
    fs::path real = fs::canonical(sys, ec);
    if (ec) throw Error("block device " + dev_string(dev) + " does not exist (no " + sys.string() + ")");
    BlockDevInfo info;
    info.dev = dev;
    info.name = real.filename().string();
    info.is_partition = fs::exists(real / "partition");
    fs::path disk = info.is_partition ? real.parent_path() : real;
    info.whole_disk_name = disk.filename().string();
    info.whole_disk = dev;
    if (info.is_partition) {
        if (auto s = read_line(disk / "dev"); s) {
            if (auto d = parse_dev_string(*s)) info.whole_disk = *d;
        }
        info.start_sector = read_u64(real / "start", 0);
    }
    info.size_bytes = read_u64(real / "size", 0) * 512;
    read_queue_limits((disk / "queue").string(), info);
    return info;
}

void read_queue_limits(const std::string& queue_dir, BlockDevInfo& info) {
    const fs::path q(queue_dir);
    auto u32 = [&](const char* name, uint64_t dflt) {
        return uint32_t(std::min<uint64_t>(read_u64(q / name, dflt), UINT32_MAX));
    };
    auto kb = [&](const char* name) { return uint32_t(std::min<uint64_t>(read_u64(q / name, 0), kMaxCommandKb)); };
    info.logical_block_size = u32("logical_block_size", 512);
    info.physical_block_size = u32("physical_block_size", 512);
    info.max_sectors_kb = kb("max_sectors_kb");
    info.max_hw_sectors_kb = kb("max_hw_sectors_kb");
    info.max_segments = u32("max_segments", 0);
    info.max_segment_size = u32("max_segment_size", 0);
    info.nr_requests = u32("nr_requests", 0);
}

std::optional<BlockDevInfo> find_block_dev(const std::string& name) {
    if (auto d = parse_dev_string(name)) {
        if (fs::exists(fs::path("/sys/dev/block") / dev_string(*d))) return block_dev_info(*d);
        return std::nullopt;
    }
    std::string base = name.rfind("/dev/", 0) == 0 ? name.substr(5) : name;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/sys/class/block", ec)) {
        if (e.path().filename() != base) continue;
        auto s = read_line(e.path() / "dev");
        if (!s) return std::nullopt;
        if (auto d = parse_dev_string(*s)) return block_dev_info(*d);
    }
    return std::nullopt;
}

bool is_block_device(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode);
}

BlockDevInfo block_dev_info_for_path(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw Error(path + ": does not exist");
    dev_t d = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
    DevId id{major(d), minor(d)};
    if (!fs::exists(fs::path("/sys/dev/block") / dev_string(id)))
        throw Error(path + ": lives on device " + dev_string(id) +
                    ", which is not a block device (tmpfs, overlay or network filesystem?)");
    return block_dev_info(id);
}

std::string mount_point_of(DevId dev) {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string id, parent, majmin, root, mnt;
        ls >> id >> parent >> majmin >> root >> mnt;
        auto d = parse_dev_string(majmin);
        if (!d) continue;
        if (*d == dev) return mnt;
        // a partition of this disk mounted?
        std::error_code ec;
        fs::path p = fs::canonical(fs::path("/sys/dev/block") / majmin, ec);
        if (!ec && fs::exists(p / "partition")) {
            if (auto s = read_line(p.parent_path() / "dev"); s && parse_dev_string(*s) == dev) return mnt;
        }
    }
    return {};
}

}  // namespace kvio
