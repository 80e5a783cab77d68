#include "common/queue_settings.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"

namespace kvio {

std::string queue_disk(const std::string& name) {
    // A partition's /sys/class/block entry resolves into its disk's directory and holds a "partition" file
    // (docs/distill.md, "Queue settings the file level copies").
    std::error_code ec;
    const auto dir = std::filesystem::canonical("/sys/class/block/" + name, ec);
    if (ec || !std::filesystem::exists(dir / "partition", ec)) return name;
    return dir.parent_path().filename().string();
}

namespace {

std::string queue_file(const std::string& disk, const std::string& key) {
    return "/sys/block/" + queue_disk(disk) + "/queue/" + key;
}

// The value as page_cache_queue_settings() spells it; "" when the file is absent or unreadable.
std::string read_setting(const std::string& disk, const std::string& key) {
    std::ifstream in(queue_file(disk, key));
    std::string line;
    if (!in || !std::getline(in, line)) return "";
    if (key != "scheduler") return line.substr(0, line.find_last_not_of(" \n") + 1);
    const size_t open = line.find('['), close = line.find(']');  // "none [mq-deadline] kyber"
    if (open == std::string::npos || close == std::string::npos || close < open) return line;
    return line.substr(open + 1, close - open - 1);
}

// Writes one setting; the errno of a refused write (EINVAL above max_hw_sectors_kb), 0 when written.
int write_setting(const std::string& disk, const std::string& key, const std::string& value) {
    std::ofstream out(queue_file(disk, key));
    if (!out) return errno ? errno : EACCES;
    out << value << '\n';
    out.flush();
    return out ? 0 : (errno ? errno : EINVAL);
}

}  // namespace

const std::vector<std::string>& page_cache_queue_settings() {
    static const std::vector<std::string> keys = {"scheduler", "nr_requests", "max_sectors_kb", "read_ahead_kb",
                                                  "wbt_lat_usec"};
    return keys;
}

QueueSettings read_queue_settings(const std::string& disk) {
    QueueSettings s;
    for (const auto& k : page_cache_queue_settings())
        if (auto v = read_setting(disk, k); !v.empty()) s[k] = v;
    return s;
}

nlohmann::json queue_settings_json(const QueueSettings& s) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : s) j[k] = v;
    return j;
}

QueueSettings queue_settings_from_json(const nlohmann::json& j) {
    QueueSettings s;
    if (!j.is_object()) return s;
    for (const auto& k : page_cache_queue_settings())
        if (auto it = j.find(k); it != j.end() && it->is_string()) s[k] = it->get<std::string>();
    return s;
}

QueueSettingsOverride::QueueSettingsOverride(std::string disk, const QueueSettings& want)
    : disk_(std::move(disk)), original_(read_queue_settings(disk_)) {
    for (const auto& k : page_cache_queue_settings()) {
        auto w = want.find(k);
        auto o = original_.find(k);
        if (w == want.end() || o == original_.end()) continue;  // not recorded, or the target has no such setting
        if (read_setting(disk_, k) == w->second) continue;
        int e = write_setting(disk_, k, w->second);
        const std::string now = e ? "" : read_setting(disk_, k);  // a write sysfs took but did not apply
        if (e || now != w->second) {
            restore();
            throw Error("distill --verify: cannot set " + queue_file(disk_, k) + " to " + w->second + " (the traced " +
                        "device's; the target has " + o->second +
                        "): " + (e ? std::string(std::strerror(e)) : "it reads back " + now));
        }
        changed_.push_back({k, {o->second, w->second}});
    }
}

QueueSettingsOverride::~QueueSettingsOverride() { restore(); }

void QueueSettingsOverride::restore() noexcept {
    // In the order written: the scheduler's original first, as switching it resets nr_requests.
    for (const auto& k : page_cache_queue_settings()) {
        auto o = original_.find(k);
        if (o != original_.end() && read_setting(disk_, k) != o->second) write_setting(disk_, k, o->second);
    }
}

}  // namespace kvio
