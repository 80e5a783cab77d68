// Reader of the NVMe io_uring_cmd monitor JSONL (docs/formats.md): `nvme_cmd` (one per submitted command),
// `nvme_cmp`, `cq_overflow`, `clock_anchor` and a final `drops` record, in three variants: io_uring_cmd
// (user_data, pid, rdev), the NVMe KV command set (key_hex, key_len, value_len; op_name store|retrieve|list|delete|
// exist) and the driver tracepoints (disk, hwq, cid; no user_data; `status` on completions).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/jsonl.h"
#include "validate/commands.h"

namespace kvio::validate {

class MonitorReader : public CommandReader {
public:
    /// Opens `path` (common/input_file.h: .zst and pipes too). Throws kvio::Error when it cannot be read.
    explicit MonitorReader(const std::string& path);

    /// The next `nvme_cmd` as a command (src nvme; issue time `ts`, ns; offset slba × bytes/nlb; KV: the key
    /// decoded from key_hex, bytes value_len, store = write, retrieve = read, the rest non-data). The device is
    /// `rdev` (a userspace dev_t number or "MAJ:MIN"), else `disk` looked up in sysfs, else 0 (unknown).
    /// Other records are checked and counted. Throws "FILE:LINE: field 'F': ..." on a malformed record.
    bool next(Command& c) override;
    uint64_t summary_dropped() const override { return dropped_; }
    bool saw_summary() const override { return saw_drops_; }
    std::vector<std::string> warnings() const override;
    const char* format() const override { return "nvme-monitor"; }

private:
    void completion(const json& j, const JsonSource& src);
    uint32_t dev_of(const json& j, const JsonSource& src);
    JsonlReader r_;
    json j_;
    uint64_t dropped_ = 0, cq_overflows_ = 0, failed_cmds_ = 0;
    bool saw_drops_ = false;
    std::unordered_map<std::string, uint32_t> disks_;  // disk name -> kernel dev_t (0: not on this machine)
};

}  // namespace kvio::validate
