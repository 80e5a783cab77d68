// The block queue settings that shape the commands the page cache sends a device (docs/distill.md, "Queue settings
// the file level copies"): read from sysfs, recorded in a trace, copied onto another device and restored.
#pragma once
#include <cstdint>
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

/// What the target's queue takes besides its current values (plan_queue_setting's limits); 0 or empty: unknown.
struct QueueTarget {
    QueueSettings current;                ///< the target's settings now (read_queue_settings), as the writes go on
    std::vector<std::string> schedulers;  ///< the schedulers queue/scheduler lists ("none", "mq-deadline", ...)
    uint64_t max_hw_sectors_kb = 0;       ///< queue/max_hw_sectors_kb: max_sectors_kb's ceiling (KiB)
    uint64_t nr_tags = 0;                 ///< mq/0/nr_tags: nr_requests' ceiling while the scheduler is "none"
};

/// The target's QueueTarget read from /sys/block/`disk` (a partition: its disk's).
QueueTarget read_queue_target(const std::string& disk);

/// One setting copied from the traced device onto a target: the values as sysfs spells them.
struct QueueSettingResult {
    std::string name;           ///< a setting of page_cache_queue_settings()
    std::string traced;         ///< the traced device's value, as recorded in the trace
    std::string target_before;  ///< the target's own value ("": the target has no such setting)
    std::string write;          ///< the value written: traced, or the nearest the target takes ("": none written)
    std::string applied;        ///< read back after the write (the target's value when nothing was written)
    std::string after_replay;   ///< read back after the replay, before the restore ("": not read)
    std::string error;          ///< "": reproduced; else what was not and what it means for the comparison
    bool reproduced() const { return error.empty(); }
};

/// The write for setting `name` of `traced` onto target `t` (docs/distill.md, "Queue settings the file level
/// copies"): the traced value; the nearest the target takes where its limit is known (max_sectors_kb capped at
/// max_hw_sectors_kb; nr_requests at nr_tags while t.current's scheduler is "none"), with `error` saying so; nothing
/// when the value is already in force or the target has no such setting (then `error` says so). `target_before`
/// is `before`'s value. `name` must be in `traced`.
QueueSettingResult plan_queue_setting(const std::string& name, const QueueSettings& traced, const QueueSettings& before,
                                      const QueueTarget& t);

/// Completes `r` after its write: `err` the write's errno (0: sysfs took it), `read_back` the value read after it.
/// Sets `applied` and, when the traced value is not what the target now has, `error` (a refused write, a value the
/// target changed, a planned deviation), naming the schedulers `t` offers when a scheduler is refused.
void settle_queue_setting(QueueSettingResult& r, int err, const std::string& read_back, const QueueTarget& t);

/// What a setting that is not the traced device's means for a replay's scores, in a few words.
std::string queue_setting_consequence(const std::string& name);

/// Writes the traced settings `want` onto /sys/block/`disk`/queue at construction, in the order of
/// page_cache_queue_settings(), each as near as the target takes it (plan_queue_setting, settle_queue_setting; a
/// setting the target refuses is left at its own value and the rest go on), and writes back every original that
/// differs at destruction (so also when an exception or a stop signal unwinds). Never throws for a setting.
class QueueSettingsOverride {
public:
    QueueSettingsOverride(std::string disk, const QueueSettings& want);
    ~QueueSettingsOverride();
    QueueSettingsOverride(const QueueSettingsOverride&) = delete;
    QueueSettingsOverride& operator=(const QueueSettingsOverride&) = delete;
    /// One entry per setting `want` holds, in the order written.
    const std::vector<QueueSettingResult>& results() const { return results_; }
    /// Reads every setting back into `after_replay`; one that no longer reads as `applied` gets an `error`.
    void check_held();

private:
    void restore() noexcept;
    std::string disk_;
    QueueSettings original_;
    std::vector<QueueSettingResult> results_;
};

}  // namespace kvio
