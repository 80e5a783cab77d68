#include "trace/trace_devices.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/devinfo.h"

namespace kvio::trace {
namespace fs = std::filesystem;

namespace {
/// Kernel dev_t of the device whose sysfs directory is `dir` (its `dev` file, "MAJ:MIN"); 0 when unreadable.
uint32_t dev_of_sysfs_dir(const fs::path& dir) {
    std::ifstream in(dir / "dev");
    std::string s;
    if (!(in >> s)) return 0;
    auto d = parse_dev_string(s);
    return d ? kernel_dev(*d) : 0;
}
}  // namespace

std::vector<uint32_t> present_disks(size_t max) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/sys/block", ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::vector<uint32_t> out;
    for (const auto& n : names) {
        if (out.size() >= max) break;
        if (uint32_t d = dev_of_sysfs_dir(fs::path("/sys/block") / n)) out.push_back(d);
    }
    return out;
}

std::vector<uint32_t> storage_devices(const std::vector<uint32_t>& disks) {
    std::vector<uint32_t> out;
    std::vector<fs::path> todo;
    auto add = [&](const fs::path& dir) {
        uint32_t d = dev_of_sysfs_dir(dir);
        if (!d || std::find(out.begin(), out.end(), d) != out.end()) return;
        out.push_back(d);
        todo.push_back(dir);
    };
    for (uint32_t d : disks) add(fs::path("/sys/dev/block") / dev_string(decode_kernel_dev(d)));
    std::error_code ec;
    for (size_t i = 0; i < todo.size(); ++i) {
        fs::path dir = fs::canonical(todo[i], ec);
        if (ec) continue;
        for (const auto& e : fs::directory_iterator(dir, ec))  // partitions: subdirectories with a `partition` file
            if (e.is_directory() && fs::exists(e.path() / "partition")) add(e.path());
        for (const auto& e : fs::directory_iterator(dir / "holders", ec)) add(e.path());
    }
    return out;
}

}  // namespace kvio::trace
