#include "common/queue_settings.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

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
    errno = 0;
    std::ofstream out(queue_file(disk, key));
    if (!out) return errno ? errno : EACCES;
    out << value << '\n';
    out.flush();
    return out ? 0 : (errno ? errno : EINVAL);
}

// A decimal value as sysfs prints it; nothing for another spelling.
std::optional<uint64_t> number(const std::string& s) {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

uint64_t number_file(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) return 0;
    return number(line.substr(0, line.find_last_not_of(" \n") + 1)).value_or(0);
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
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

QueueTarget read_queue_target(const std::string& disk) {
    QueueTarget t;
    t.current = read_queue_settings(disk);
    const std::string q = "/sys/block/" + queue_disk(disk);
    std::ifstream in(q + "/queue/scheduler");  // "none [mq-deadline] kyber"
    std::string word;
    while (in >> word) t.schedulers.push_back(word.front() == '[' ? word.substr(1, word.size() - 2) : word);
    t.max_hw_sectors_kb = number_file(q + "/queue/max_hw_sectors_kb");
    t.nr_tags = number_file(q + "/mq/0/nr_tags");
    return t;
}

std::string queue_setting_consequence(const std::string& name) {
    if (name == "scheduler")
        return "the replay's requests are merged and ordered by another scheduler: command sizes, queue depth and D2C "
               "compare the schedulers too";
    if (name == "nr_requests")
        return "the target admits another number of requests at once: the queue-depth score compares that limit too";
    if (name == "max_sectors_kb")
        return "the target splits commands above its value: the size TV counts those splits, not the job";
    if (name == "read_ahead_kb")
        return "readahead commands take the target's size: the read size TV compares readahead settings too";
    if (name == "wbt_lat_usec")
        return "background writeback is throttled otherwise: the write depth compares writeback throttles too";
    return "the replay ran with the target's own value";
}

QueueSettingResult plan_queue_setting(const std::string& name, const QueueSettings& traced, const QueueSettings& before,
                                      const QueueTarget& t) {
    QueueSettingResult r;
    r.name = name;
    r.traced = traced.at(name);
    const auto b = before.find(name), now = t.current.find(name);
    r.target_before = b == before.end() ? "" : b->second;
    if (now == t.current.end()) {
        r.error = "the target has no queue/" + name + ": " + queue_setting_consequence(name);
        return r;
    }
    r.applied = now->second;
    r.write = r.traced;
    const auto want = number(r.traced);
    std::string limit;  // the target's limit that caps the write, said in `error`
    if (name == "max_sectors_kb" && want && t.max_hw_sectors_kb && *want > t.max_hw_sectors_kb) {
        r.write = std::to_string(t.max_hw_sectors_kb);
        limit = "its max_hw_sectors_kb";
    }
    const auto sched = t.current.find("scheduler");
    if (name == "nr_requests" && want && t.nr_tags && *want > t.nr_tags && sched != t.current.end() &&
        sched->second == "none") {
        r.write = std::to_string(t.nr_tags);
        limit = "its nr_tags (the most without a scheduler)";
    }
    if (!limit.empty()) r.error = "set to " + r.write + ", " + limit + ": " + queue_setting_consequence(name);
    if (r.write == r.applied) r.write.clear();  // already in force
    return r;
}

void settle_queue_setting(QueueSettingResult& r, int err, const std::string& read_back, const QueueTarget& t) {
    r.applied = read_back;
    if (err) {
        std::string why = std::strerror(err);
        if (r.name == "scheduler" && !t.schedulers.empty()) why += "; the target offers " + joined(t.schedulers);
        r.error = "writing " + r.write + " failed (" + why + "), left at " + read_back + ": " +
                  queue_setting_consequence(r.name);
    } else if (read_back != r.write) {
        r.error =
            "wrote " + r.write + ", the target reads back " + read_back + ": " + queue_setting_consequence(r.name);
    }
}

QueueSettingsOverride::QueueSettingsOverride(std::string disk, const QueueSettings& want)
    : disk_(std::move(disk)), original_(read_queue_settings(disk_)) {
    QueueTarget t = read_queue_target(disk_);
    for (const auto& k : page_cache_queue_settings()) {
        if (!want.count(k)) continue;  // not recorded in the trace
        QueueSettingResult r = plan_queue_setting(k, want, original_, t);
        if (!r.write.empty()) {
            const int e = write_setting(disk_, k, r.write);
            settle_queue_setting(r, e, read_setting(disk_, k), t);
        }
        t.current = read_queue_settings(disk_);  // switching the scheduler resets nr_requests
        results_.push_back(std::move(r));
    }
}

QueueSettingsOverride::~QueueSettingsOverride() { restore(); }

void QueueSettingsOverride::check_held() {
    for (auto& r : results_) {
        r.after_replay = read_setting(disk_, r.name);
        if (r.after_replay != r.applied && r.error.empty())
            r.error = "changed to " + r.after_replay + " during the replay: " + queue_setting_consequence(r.name);
    }
}

void QueueSettingsOverride::restore() noexcept {
    // In the order written: the scheduler's original first, as switching it resets nr_requests.
    for (const auto& k : page_cache_queue_settings()) {
        auto o = original_.find(k);
        if (o != original_.end() && read_setting(disk_, k) != o->second) write_setting(disk_, k, o->second);
    }
}

}  // namespace kvio
