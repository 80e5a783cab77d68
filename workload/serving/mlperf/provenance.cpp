#include "workload/serving/mlperf/provenance.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/devinfo.h"
#include "common/sha256.h"

namespace kvio::serving {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string first_line(const fs::path& p) {
    std::ifstream in(p);
    std::string s;
    if (in) std::getline(in, s);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
    return s;
}

/// The nearest existing path at or above `path`.
fs::path existing(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::absolute(path, ec);
    while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
    return fs::weakly_canonical(p, ec);
}

/// mountinfo's octal escapes (\040 for a space) undone.
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
            out += char(std::stoi(s.substr(i + 1, 3), nullptr, 8));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

void add_line(Json& j, const char* key, const fs::path& p) {
    const std::string v = first_line(p);
    if (!v.empty()) j[key] = v;
}

}  // namespace

std::string path_st_dev(const std::string& path) {
    struct stat st {};
    const fs::path p = existing(path);
    if (p.empty() || ::stat(p.c_str(), &st) != 0) return "";
    return std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
}

Json block_device_provenance(const std::string& majmin) {
    Json j;
    const auto d = parse_dev_string(majmin);
    if (!d || !fs::exists(fs::path("/sys/dev/block") / majmin)) return j;
    const BlockDevInfo info = block_dev_info(*d);
    const fs::path disk = fs::path("/sys/block") / info.whole_disk_name;
    j["name"] = info.name;
    j["whole_disk"] = info.whole_disk_name;
    add_line(j, "model", disk / "device/model");
    add_line(j, "vendor", disk / "device/vendor");
    add_line(j, "firmware_rev", disk / "device/firmware_rev");
    add_line(j, "rev", disk / "device/rev");
    j["size_bytes"] = info.size_bytes;
    j["logical_block_size"] = info.logical_block_size;
    j["physical_block_size"] = info.physical_block_size;
    j["max_sectors_kb"] = info.max_sectors_kb;
    j["max_hw_sectors_kb"] = info.max_hw_sectors_kb;
    j["max_segments"] = info.max_segments;
    j["nr_requests"] = info.nr_requests;
    add_line(j, "rotational", disk / "queue/rotational");
    add_line(j, "scheduler", disk / "queue/scheduler");
    add_line(j, "write_cache", disk / "queue/write_cache");
    add_line(j, "backing_file", disk / "loop/backing_file");
    return j;
}

namespace {
Json filesystem_provenance_at(const std::string& path, int depth);
}  // namespace

Json filesystem_provenance(const std::string& path) { return filesystem_provenance_at(path, 0); }

namespace {
/// filesystem_provenance, `depth` loop devices down.
Json filesystem_provenance_at(const std::string& path, int depth) {
    Json j;
    j["path"] = path;
    const std::string dev = path_st_dev(path);
    j["st_dev"] = dev;
    const std::string real = existing(path).string();
    std::ifstream in("/proc/self/mountinfo");
    std::string line, best_mnt;
    Json best;
    while (std::getline(in, line)) {
        // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS"
        std::istringstream ls(line);
        std::string id, parent, majmin, root, mnt, opts, w;
        ls >> id >> parent >> majmin >> root >> mnt >> opts;
        while (ls >> w && w != "-") {}
        std::string fstype, source, super_opts;
        ls >> fstype >> source >> super_opts;
        mnt = unescape(mnt);
        const bool prefix = real == mnt || real.rfind(mnt == "/" ? mnt : mnt + "/", 0) == 0;
        if (majmin != dev || !prefix || mnt.size() < best_mnt.size()) continue;
        best_mnt = mnt;
        best = Json{{"mount_point", mnt},
                    {"fstype", fstype},
                    {"source", unescape(source)},
                    {"mount_options", opts},
                    {"super_options", super_opts}};
    }
    for (auto& [k, v] : best.items()) j[k] = v;
    Json device = block_device_provenance(dev);
    if (device.contains("backing_file") && depth < 4)
        device["backing_filesystem"] = filesystem_provenance_at(device["backing_file"].get<std::string>(), depth + 1);
    if (!device.empty()) j["device"] = device;
    return j;
}

/// "zram" or "brd" when `disk` (a /sys/block name) is a RAM block device, "" otherwise: the kernel names them
/// zram<N> and ram<N>.
std::string ram_disk_kind(const std::string& disk) {
    auto numbered = [&](const std::string& prefix) {
        return disk.size() > prefix.size() && disk.rfind(prefix, 0) == 0 &&
               std::all_of(disk.begin() + long(prefix.size()), disk.end(),
                           [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    return numbered("zram") ? "a compressed RAM disk" : numbered("ram") ? "a brd RAM disk" : "";
}
}  // namespace

std::string memory_backing(const Json& fs) {
    if (!fs.is_object()) return "";
    const std::string type = fs.value("fstype", std::string());
    if (type == "tmpfs" || type == "ramfs") return type;
    const Json device = fs.value("device", Json::object());
    if (!device.is_object()) return "";
    const std::string disk = device.value("whole_disk", device.value("name", std::string()));
    const std::string on = (type.empty() ? "a filesystem" : type) + " on " + device.value("name", disk);
    if (const std::string kind = ram_disk_kind(disk); !kind.empty()) return on + " (" + kind + ")";
    if (!device.contains("backing_file")) return "";
    const std::string below = memory_backing(device.value("backing_filesystem", Json::object()));
    if (below.empty()) return "";
    return on + " over " + device["backing_file"].get<std::string>() + ", on " + below;
}

Json host_provenance(const std::string& version) {
    Json j;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    Json k;
    k["version"] = version;
    k["binary"] = exe.string();
    try {
        k["binary_sha256"] = sha256_file_hex("/proc/self/exe");
    } catch (const std::exception& e) {
        k["binary_sha256"] = nullptr;
        k["binary_sha256_error"] = e.what();
    }
    j["kvio"] = k;
    struct utsname u {};
    if (::uname(&u) == 0)
        j["kernel"] = {{"sysname", u.sysname}, {"release", u.release}, {"version", u.version}, {"machine", u.machine}};
    std::ifstream cpu("/proc/cpuinfo");
    std::string line, model;
    while (model.empty() && std::getline(cpu, line))
        if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
            model = line.substr(line.find(':') + 2);
    j["cpu"] = {{"model", model}, {"online", ::sysconf(_SC_NPROCESSORS_ONLN)}};
    j["memory"] = {{"total_bytes", uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGE_SIZE))}};
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    j["hostname"] = host;
    return j;
}

}  // namespace kvio::serving
