#include "userspace/event_format.h"

#include "common/devinfo.h"

namespace kvio::trace {

std::string rwbs_from_opf(uint32_t opf) {
    std::string s;
    if (opf & KVIO_F_PREFLUSH) s += 'F';
    switch (opf & KVIO_OP_MASK) {
        case KVIO_OP_WRITE: s += 'W'; break;
        case KVIO_OP_DISCARD: s += 'D'; break;
        case KVIO_OP_SECURE_ERASE: s += "DE"; break;
        case KVIO_OP_FLUSH: s += 'F'; break;
        case KVIO_OP_READ: s += 'R'; break;
        default: s += 'N'; break;
    }
    if (opf & KVIO_F_FUA) s += 'F';
    if (opf & KVIO_F_RAHEAD) s += 'A';
    if (opf & KVIO_F_SYNC) s += 'S';
    if (opf & KVIO_F_META) s += 'M';
    return s;
}

const char* op_name_from_opf(uint32_t opf) {
    switch (opf & KVIO_OP_MASK) {
        case KVIO_OP_READ: return "read";
        case KVIO_OP_WRITE: return "write";
        case KVIO_OP_FLUSH: return "flush";
        case KVIO_OP_DISCARD:
        case KVIO_OP_SECURE_ERASE: return "discard";
        default: return "other";
    }
}

const char* op_name_from_nvme_opcode(uint8_t opcode) {
    switch (opcode) {
        case 0x00: return "flush";
        case 0x01: return "write";
        case 0x02: return "read";
        case 0x09: return "discard";
        default: return "other";
    }
}

const char* syscall_name(uint32_t nr) {
    static const char* names[KVIO_SYSCALLS] = {"read",    "write",   "pread64",   "pwrite64", "readv",
                                               "writev",  "preadv",  "pwritev",   "preadv2",  "pwritev2",
                                               "fsync",   "fdatasync", "fadvise64", "io_uring_enter"};
    return nr < KVIO_SYSCALLS ? names[nr] : "?";
}

const DevCache::Entry& DevCache::get(uint32_t kdev) {
    auto it = cache_.find(kdev);
    if (it != cache_.end()) return it->second;
    Entry e;
    DevId id = decode_kernel_dev(kdev);
    e.majmin = dev_string(id);
    try {
        auto info = block_dev_info(id);
        e.disk = info.name;
        e.lba_bytes = info.logical_block_size;
    } catch (const std::exception&) {
        e.disk = "?";
    }
    return cache_.emplace(kdev, e).first->second;
}

static std::string comm_string(const char* c) { return std::string(c, strnlen(c, KVIO_COMM_LEN)); }

nlohmann::json cmd_event_json(const kvio_cmd_event& e, DevCache& devs) {
    const auto& d = devs.get(e.dev);
    bool nvme = e.src == KVIO_SRC_NVME;
    uint64_t bytes = nvme ? uint64_t(e.nlb) * d.lba_bytes : e.bytes;
    uint64_t sector = nvme ? e.slba * (d.lba_bytes / 512) : e.sector;
    nlohmann::json j = {
        {"type", "cmd"},
        {"src", nvme ? "nvme" : "block"},
        {"dev", d.majmin},
        {"disk", d.disk},
        {"op", nvme ? op_name_from_nvme_opcode(e.opcode) : op_name_from_opf(e.opf)},
        {"rwbs", rwbs_from_opf(e.opf)},
        {"sector", sector},
        {"bytes", bytes},
        {"ts_issue", e.ts_issue},
    };
    if (e.complete_lost) {
        j["complete_lost"] = true;  // no program saw its completion: no ts_complete, no D2C
    } else {
        j["ts_complete"] = e.ts_complete;
        j["d2c_ns"] = e.ts_complete - e.ts_issue;
    }
    if (e.has_insert) {
        j["ts_insert"] = e.ts_insert;
        j["q2d_ns"] = e.ts_issue - e.ts_insert;
    }
    j["qd"] = e.qd;
    j["pid"] = e.owner.pid;
    j["tid"] = e.owner.tid;
    j["comm"] = comm_string(e.owner.comm);
    if (e.has_user_data) j["user_data"] = e.owner.user_data;
    if (e.error) j["error"] = e.error;
    if (nvme) {
        j["qid"] = e.qid;
        j["cid"] = e.cid;
        j["nsid"] = e.nsid;
        j["opcode"] = e.opcode;
        j["slba"] = e.slba;
        j["nlb"] = e.nlb;
        j["status"] = e.error;
    }
    return j;
}

nlohmann::json syscall_event_json(const kvio_syscall_event& e) {
    nlohmann::json j = {
        {"type", "syscall"},   {"name", syscall_name(e.nr)}, {"pid", e.pid},           {"tid", e.tid},
        {"comm", comm_string(e.comm)}, {"fd", e.fd},         {"ts_enter", e.ts_enter}, {"ts_exit", e.ts_exit},
        {"lat_ns", e.ts_exit - e.ts_enter}, {"ret", e.ret},
    };
    switch (e.nr) {
        case KVIO_SYS_PREAD64: case KVIO_SYS_PWRITE64: case KVIO_SYS_PREADV: case KVIO_SYS_PWRITEV:
        case KVIO_SYS_PREADV2: case KVIO_SYS_PWRITEV2: case KVIO_SYS_FADVISE64:
            j["offset"] = e.offset;
            break;
        default: break;
    }
    if (e.nr != KVIO_SYS_FSYNC && e.nr != KVIO_SYS_FDATASYNC && e.nr != KVIO_SYS_IO_URING_ENTER) j["count"] = e.count;
    return j;
}

}  // namespace kvio::trace
