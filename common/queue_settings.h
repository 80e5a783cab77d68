// The block queue settings that shape the commands the page cache sends a device (docs/distill.md, "Queue settings
// the file level copies"): read from sysfs, recorded in a trace, copied onto another device and restored.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio {

/// Setting name (a file under /sys/block/DISK/queue) -> its value as sysfs spells it ("2000", "mq-deadline"; the
/// scheduler is the active one, without brackets). A setting the device does not have is absent.
using QueueSettings = std::map<std::string, std::string>;

/// The settings copied, in the order they are written: the scheduler first (switching it resets nr_requests),
/// then nr_requests, max_sectors_kb, read_ahead_kb, wbt_lat_usec.
const std::vector<std::string>& page_cache_queue_settings();

/// The disk whose queue directory governs block device `name`: `name` itself, or for a partition ("vda1",
/// "loop3p1", which have no queue directory of their own) its parent disk ("vda", "loop3").
std::string queue_disk(const std::string& name);

/// Reads the settings of page_cache_queue_settings() from /sys/block/`disk`/queue (a partition: its
/// disk's, queue_disk()); empty when the disk has none. Values stay strings as sysfs spells them, so odd ones
/// (virtio-blk's max_hw_sectors_kb 2147483647) pass through unparsed.
QueueSettings read_queue_settings(const std::string& disk);

/// {"scheduler": "none", "wbt_lat_usec": "2000", ...}; and back (keys outside the list and non-strings skipped).
nlohmann::json queue_settings_json(const QueueSettings& s);
QueueSettings queue_settings_from_json(const nlohmann::json& j);

/// Writes `want` onto /sys/block/`disk`/queue at construction, in the order of page_cache_queue_settings(), and
/// writes back every original that differs at destruction (so also when an exception or a stop signal unwinds).
/// A setting already equal is not written. Throws kvio::Error naming the setting when a write fails (what it had
/// changed restored first); max_sectors_kb above the target's max_hw_sectors_kb is such a failure.
class QueueSettingsOverride {
public:
    QueueSettingsOverride(std::string disk, const QueueSettings& want);
    ~QueueSettingsOverride();
    QueueSettingsOverride(const QueueSettingsOverride&) = delete;
    QueueSettingsOverride& operator=(const QueueSettingsOverride&) = delete;
    /// Setting -> {target's original, value written}, for what was changed.
    const std::vector<std::pair<std::string, std::pair<std::string, std::string>>>& changed() const { return changed_; }

private:
    void restore() noexcept;
    std::string disk_;
    QueueSettings original_;
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> changed_;
};

}  // namespace kvio
