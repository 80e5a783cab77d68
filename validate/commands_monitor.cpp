#include "validate/commands_monitor.h"

#include <sys/sysmacros.h>

#include "common/devinfo.h"
#include "validate/foreign_fields.h"

namespace kvio::validate {

namespace {

int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

std::string key_of(const json& j, const JsonSource& src) {
    const std::string hex = get_string(j, "key_hex", src);
    if (hex.size() % 2) src.fail("key_hex", "expected an even number of hex digits, got " + std::to_string(hex.size()));
    std::string key;
    for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0) src.fail("key_hex", "expected hex digits, got \"" + hex + "\"");
        key.push_back(char(hi << 4 | lo));
    }
    if (j.contains("key_len")) {
        const uint64_t n = get_u64(j, "key_len", src);
        if (n > key.size())
            src.fail("key_len",
                     std::to_string(n) + " is longer than key_hex's " + std::to_string(key.size()) + " bytes");
        key.resize(n);
    }
    return key;
}

}  // namespace

MonitorReader::MonitorReader(const std::string& path) : r_(path) {}

uint32_t MonitorReader::dev_of(const json& j, const JsonSource& src) {
    auto it = j.find("rdev");
    if (it != j.end()) {
        if (it->is_string()) {
            auto d = parse_dev_string(it->get<std::string>());
            if (!d) src.fail("rdev", "expected a device number or \"MAJ:MIN\", got " + it->dump());
            return kernel_dev(*d);
        }
        const uint64_t v = get_u64(j, "rdev", src);
        return kernel_dev({::major(v), ::minor(v)});
    }
    if (!j.contains("disk")) return 0;
    const std::string disk = get_string(j, "disk", src);
    auto [d, fresh] = disks_.emplace(disk, 0);
    if (fresh) {
        auto b = find_block_dev(disk);
        if (b) d->second = kernel_dev(b->whole_disk);
    }
    return d->second;
}

void MonitorReader::completion(const json& j, const JsonSource& src) {
    (void)get_u64(j, "ts", src);
    if (j.contains("user_data")) (void)get_u64_lenient(j, "user_data", src);
    for (const char* f : {"lat_ns", "hwq", "cid"}) check_u64_opt(j, f, src);
    const char* status = j.contains("err") ? "err" : j.contains("status") ? "status" : nullptr;
    if (status && get_i64(j, status, src) != 0) ++failed_cmds_;
}

bool MonitorReader::next(Command& c) {
    while (r_.next(j_)) {
        const JsonSource& src = r_.source();
        if (!j_.contains("event_type"))
            src.fail("event_type",
                     "missing (every monitor record has one; a kvio.events/1 file? --commands-format kvio)");
        const std::string type = get_string(j_, "event_type", src);
        if (type == "nvme_cmp") {
            completion(j_, src);
            continue;
        }
        if (type == "cq_overflow") {
            ++cq_overflows_;
            continue;
        }
        if (type == "clock_anchor") {
            (void)get_u64(j_, "monotonic_ns", src);
            (void)get_u64(j_, "realtime_ns", src);
            continue;
        }
        if (type == "drops") {
            dropped_ += get_u64(j_, "dropped", src);
            saw_drops_ = true;
            continue;
        }
        if (type != "nvme_cmd")
            src.fail("event_type",
                     "expected nvme_cmd, nvme_cmp, cq_overflow, clock_anchor or drops, got \"" + type + "\"");
        c = Command{};
        c.nvme = true;
        c.ts_issue = get_u64(j_, "ts", src);
        c.dev = dev_of(j_, src);
        if (j_.contains("user_data")) c.user_data = get_u64_lenient(j_, "user_data", src), c.has_user_data = true;
        for (const char* f : {"pid", "tid", "nsid", "hwq", "cid"}) check_u64_opt(j_, f, src);
        for (const char* f : {"comm", "cmd_op", "disk"}) check_string_opt(j_, f, src);
        if (j_.contains("nvme_opcode") && get_u64(j_, "nvme_opcode", src) > 255)
            src.fail("nvme_opcode", "expected an NVMe opcode (0 to 255), got " + j_["nvme_opcode"].dump());
        const std::string op = get_string(j_, "op_name", src);
        if (j_.contains("key_hex")) {  // NVMe KV command set
            c.key = key_of(j_, src);
            const uint64_t value = get_u64_or(j_, "value_len", 0, src);
            if (op == "store" || op == "retrieve") {
                c.op = op == "store" ? CmdOp::Write : CmdOp::Read;
                c.bytes = value;
                if (!j_.contains("value_len")) src.fail("value_len", "missing (a KV " + op + " moves value_len bytes)");
            } else if (op == "list" || op == "delete" || op == "exist") {
                c.op = CmdOp::Other;
            } else {
                src.fail("op_name",
                         "expected store, retrieve, list, delete or exist (a KV command: it has key_hex), got \"" + op +
                             "\"");
            }
            if (c.bytes > UINT32_MAX)
                src.fail("value_len", std::to_string(c.bytes) + " is not a command size (at most 4 GiB)");
            return true;
        }
        c.op = op == "read"    ? CmdOp::Read
               : op == "write" ? CmdOp::Write
               : op == "flush" ? CmdOp::Flush
               : op == "other"
                   ? CmdOp::Other
                   : (src.fail("op_name", "expected read, write, flush or other, got \"" + op + "\""), CmdOp::Other);
        const bool data = c.op == CmdOp::Read || c.op == CmdOp::Write;
        const char* bytes_field = j_.contains("bytes") ? "bytes" : "data_len";
        c.bytes = data || j_.contains(bytes_field) ? get_u64(j_, bytes_field, src) : 0;
        if (j_.contains("bytes")) check_u64_opt(j_, "data_len", src);
        const uint64_t slba = data ? get_u64(j_, "slba", src) : get_u64_or(j_, "slba", 0, src);
        const uint64_t nlb = data ? get_u64(j_, "nlb", src) : get_u64_or(j_, "nlb", 0, src);
        if (data) {
            if (nlb == 0) src.fail("nlb", "0 blocks in a " + op + " (nlb counts from 1)");
            if (c.bytes > UINT32_MAX)
                src.fail(bytes_field, std::to_string(c.bytes) + " is not a command size (at most 4 GiB)");
            if (c.bytes % nlb)
                src.fail(bytes_field, std::to_string(c.bytes) + " is not a multiple of nlb " + std::to_string(nlb));
            const uint64_t lba = c.bytes / nlb;
            if (lba && slba > UINT64_MAX / lba)
                src.fail("slba", std::to_string(slba) + " × " + std::to_string(lba) + " bytes is beyond any device");
            c.offset = slba * lba;
        }
        return true;
    }
    return false;
}

std::vector<std::string> MonitorReader::warnings() const {
    std::vector<std::string> w;
    if (cq_overflows_)
        w.push_back(r_.source().file + ": " + std::to_string(cq_overflows_) +
                    " cq_overflow records: io_uring lost completions while monitored");
    if (failed_cmds_)
        w.push_back(r_.source().file + ": " + std::to_string(failed_cmds_) + " commands completed with an error");
    return w;
}

}  // namespace kvio::validate
