#include "trace/event_format.h"

#include <cstdio>
#include <cstring>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/devinfo.h"

namespace kvio::trace {

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

/// The bytes of command `bytes` long that no part of `files` holds (0 if the parts hold more).
static uint64_t nofile_bytes(uint64_t bytes, std::span<const kvio_file_part> files) {
    uint64_t in_files = 0;
    for (const kvio_file_part& p : files) in_files += p.bytes;
    return bytes > in_files ? bytes - in_files : 0;
}

nlohmann::json cmd_event_json(const kvio_cmd_event& e, DevCache& devs, std::span<const kvio_file_part> files) {
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
        j["complete_lost"] = true;                        // no program saw its completion: no ts_complete, no D2C
        if (e.ts_complete) j["ts_lost"] = e.ts_complete;  // when the tracer found it lost
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
    if (!nvme && e.slba) {  // --files: a block record's NVMe words hold its file (bpf/file_attr.h)
        j["ino"] = e.slba;
        j["fs_dev"] = dev_string(decode_kernel_dev(e.nlb));
        j["gen"] = e.nsid;
    }
    if (!nvme && !files.empty()) {  // --files --events: each file's bytes of a command not all one file's
        nlohmann::json a = nlohmann::json::array();
        for (const kvio_file_part& p : files)
            a.push_back({{"ino", p.ino},
                         {"fs_dev", dev_string(decode_kernel_dev(p.fs_dev))},
                         {"gen", p.gen},
                         {"bytes", p.bytes}});
        j["files"] = std::move(a);
        j["nofile_bytes"] = nofile_bytes(bytes, files);
    }
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

static bool syscall_has_offset(const kvio_syscall_event& e) { return kvio_syscall_has_offset(e.nr, e.flags); }
static bool syscall_has_count(uint32_t nr) { return kvio_syscall_has_count(nr); }

nlohmann::json syscall_event_json(const kvio_syscall_event& e) {
    nlohmann::json j = {
        {"type", "syscall"},      {"name", syscall_name(e.nr)},  {"pid", e.pid},
        {"tid", e.tid},           {"comm", comm_string(e.comm)}, {"fd", e.fd},
        {"ts_enter", e.ts_enter}, {"ts_exit", e.ts_exit},        {"lat_ns", e.ts_exit - e.ts_enter},
        {"ret", e.ret},
    };
    if (syscall_has_offset(e)) j["offset"] = e.offset;
    if (syscall_has_count(e.nr)) j["count"] = e.count;
    if (e.flags & KVIO_SYSF_FILE) {
        j["ino"] = e.ino;
        j["fs_dev"] = dev_string(decode_kernel_dev(e.fs_dev));
        j["gen"] = e.gen;
        j["direct"] = (e.flags & KVIO_SYSF_DIRECT) != 0;
        j["file_size"] = e.file_size;
    }
    return j;
}

nlohmann::json stages_event_json(const kvio_stages_event& e, DevCache& devs) {
    const auto& d = devs.get(e.dev);
    nlohmann::json j = {
        {"type", "stages"},
        {"dev", d.majmin},
        {"disk", d.disk},
        {"op", op_name_from_opf(e.opf)},
        {"rwbs", rwbs_from_opf(e.opf)},
        {"sector", e.sector},
        {"bytes", e.bytes},
        {"ts_queue", e.ts_queue},
        {"ts_getrq", e.ts_getrq},
        {"ts_issue", e.ts_issue},
        {"ts_complete", e.ts_complete},
        {"q2g_ns", e.ts_getrq - e.ts_queue},
        {"d2c_ns", e.ts_complete - e.ts_issue},
        {"q2c_ns", e.ts_complete - e.ts_queue},
    };
    if (e.has_insert) {
        j["ts_insert"] = e.ts_insert;
        j["g2i_ns"] = e.ts_insert - e.ts_getrq;
        j["i2d_ns"] = e.ts_issue - e.ts_insert;
    } else {
        j["g2d_ns"] = e.ts_issue - e.ts_getrq;
    }
    return j;
}

struct EventEncoder::Impl {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};

    /// Starts a record: the Writer takes one root value per Reset.
    void begin() {
        w.Reset(buf);
        w.StartObject();
    }
    void end() {
        w.EndObject();
        buf.Put('\n');
    }
    template <size_t N>
    void key(const char (&k)[N]) {
        w.Key(k, N - 1);
    }
    /// RapidJSON escapes `"` and `\` as nlohmann does but control bytes as \u00XX (upper case) and passes
    /// invalid UTF-8 through; anything outside printable ASCII is therefore serialised by nlohmann itself.
    void str(const char* s, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            auto c = static_cast<unsigned char>(s[i]);
            if (c < 0x20 || c >= 0x80) {
                auto q =
                    nlohmann::json(std::string(s, n)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
                w.RawValue(q.data(), q.size(), rapidjson::kStringType);
                return;
            }
        }
        w.String(s, static_cast<rapidjson::SizeType>(n));
    }
    template <size_t N>
    void u(const char (&k)[N], uint64_t v) {
        key(k);
        w.Uint64(v);
    }
    template <size_t N>
    void i(const char (&k)[N], int64_t v) {
        key(k);
        w.Int64(v);
    }
    template <size_t N>
    void s(const char (&k)[N], const char* v, size_t n) {
        key(k);
        str(v, n);
    }
    template <size_t N>
    void s(const char (&k)[N], const std::string& v) {
        s(k, v.data(), v.size());
    }
    template <size_t N>
    void s(const char (&k)[N], const char* v) {
        s(k, v, std::strlen(v));
    }
};

EventEncoder::EventEncoder() : impl_(std::make_unique<Impl>()) {}
EventEncoder::~EventEncoder() = default;

// Keys are written in std::map (byte-wise) order, the order nlohmann's object_t emits them in.
void EventEncoder::cmd(const kvio_cmd_event& e, DevCache& devs, std::span<const kvio_file_part> files) {
    const auto& d = devs.get(e.dev);
    bool nvme = e.src == KVIO_SRC_NVME;
    uint64_t bytes = nvme ? uint64_t(e.nlb) * d.lba_bytes : e.bytes;
    uint64_t sector = nvme ? e.slba * (d.lba_bytes / 512) : e.sector;
    auto& m = *impl_;
    m.begin();
    m.u("bytes", bytes);
    if (nvme) m.u("cid", e.cid);
    m.s("comm", e.owner.comm, strnlen(e.owner.comm, KVIO_COMM_LEN));
    if (e.complete_lost) {
        m.key("complete_lost");
        m.w.Bool(true);
    } else {
        m.u("d2c_ns", e.ts_complete - e.ts_issue);
    }
    m.s("dev", d.majmin);
    m.s("disk", d.disk);
    if (e.error) m.i("error", e.error);
    const bool parts = !nvme && !files.empty();
    char dev[24];
    if (parts) {
        m.key("files");
        m.w.StartArray();
        for (const kvio_file_part& p : files) {
            m.w.StartObject();
            m.u("bytes", p.bytes);
            const DevId fd = decode_kernel_dev(p.fs_dev);
            m.s("fs_dev", dev, size_t(std::snprintf(dev, sizeof dev, "%u:%u", fd.major, fd.minor)));
            m.u("gen", p.gen);
            m.u("ino", p.ino);
            m.w.EndObject();
        }
        m.w.EndArray();
    }
    const bool file = !nvme && e.slba;  // --files: a block record's NVMe words hold its file (bpf/file_attr.h)
    if (file) {
        const DevId fd = decode_kernel_dev(e.nlb);
        m.s("fs_dev", dev, size_t(std::snprintf(dev, sizeof dev, "%u:%u", fd.major, fd.minor)));
        m.u("gen", e.nsid);
        m.u("ino", e.slba);
    }
    if (nvme) m.u("nlb", e.nlb);
    if (parts) m.u("nofile_bytes", nofile_bytes(bytes, files));
    if (nvme) m.u("nsid", e.nsid);
    m.s("op", nvme ? op_name_from_nvme_opcode(e.opcode) : op_name_from_opf(e.opf));
    if (nvme) m.u("opcode", e.opcode);
    m.u("pid", e.owner.pid);
    if (e.has_insert) m.u("q2d_ns", e.ts_issue - e.ts_insert);
    m.u("qd", e.qd);
    if (nvme) m.u("qid", e.qid);
    char rwbs[8];
    m.s("rwbs", rwbs, rwbs_chars(e.opf, rwbs));
    m.u("sector", sector);
    if (nvme) m.u("slba", e.slba);
    m.s("src", nvme ? "nvme" : "block");
    if (nvme) m.i("status", e.error);
    m.u("tid", e.owner.tid);
    if (!e.complete_lost) m.u("ts_complete", e.ts_complete);
    if (e.has_insert) m.u("ts_insert", e.ts_insert);
    m.u("ts_issue", e.ts_issue);
    if (e.complete_lost && e.ts_complete) m.u("ts_lost", e.ts_complete);
    m.s("type", "cmd");
    if (e.has_user_data) m.u("user_data", e.owner.user_data);
    m.end();
}

void EventEncoder::syscall(const kvio_syscall_event& e) {
    auto& m = *impl_;
    m.begin();
    const bool file = e.flags & KVIO_SYSF_FILE;
    m.s("comm", e.comm, strnlen(e.comm, KVIO_COMM_LEN));
    if (syscall_has_count(e.nr)) m.u("count", e.count);
    if (file) {
        m.key("direct");
        m.w.Bool((e.flags & KVIO_SYSF_DIRECT) != 0);
    }
    m.i("fd", e.fd);
    if (file) {
        m.u("file_size", e.file_size);
        char dev[24];
        const DevId d = decode_kernel_dev(e.fs_dev);
        m.s("fs_dev", dev, size_t(std::snprintf(dev, sizeof dev, "%u:%u", d.major, d.minor)));
        m.u("gen", e.gen);
        m.u("ino", e.ino);
    }
    m.u("lat_ns", e.ts_exit - e.ts_enter);
    m.s("name", syscall_name(e.nr));
    if (syscall_has_offset(e)) m.u("offset", e.offset);
    m.u("pid", e.pid);
    m.i("ret", e.ret);
    m.u("tid", e.tid);
    m.u("ts_enter", e.ts_enter);
    m.u("ts_exit", e.ts_exit);
    m.s("type", "syscall");
    m.end();
}

void EventEncoder::stages(const kvio_stages_event& e, DevCache& devs) {
    const auto& d = devs.get(e.dev);
    auto& m = *impl_;
    m.begin();
    m.u("bytes", e.bytes);
    m.u("d2c_ns", e.ts_complete - e.ts_issue);
    m.s("dev", d.majmin);
    m.s("disk", d.disk);
    if (!e.has_insert) m.u("g2d_ns", e.ts_issue - e.ts_getrq);
    if (e.has_insert) {
        m.u("g2i_ns", e.ts_insert - e.ts_getrq);
        m.u("i2d_ns", e.ts_issue - e.ts_insert);
    }
    m.s("op", op_name_from_opf(e.opf));
    m.u("q2c_ns", e.ts_complete - e.ts_queue);
    m.u("q2g_ns", e.ts_getrq - e.ts_queue);
    char rwbs[8];
    m.s("rwbs", rwbs, rwbs_chars(e.opf, rwbs));
    m.u("sector", e.sector);
    m.u("ts_complete", e.ts_complete);
    m.u("ts_getrq", e.ts_getrq);
    if (e.has_insert) m.u("ts_insert", e.ts_insert);
    m.u("ts_issue", e.ts_issue);
    m.u("ts_queue", e.ts_queue);
    m.s("type", "stages");
    m.end();
}

void EventEncoder::line(const nlohmann::json& j) {
    auto s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto& b = impl_->buf;
    std::memcpy(b.Push(s.size()), s.data(), s.size());
    b.Put('\n');
}

const char* EventEncoder::data() const { return impl_->buf.GetString(); }
size_t EventEncoder::size() const { return impl_->buf.GetSize(); }
void EventEncoder::clear() { impl_->buf.Clear(); }
void EventEncoder::reserve(size_t bytes) {
    if (bytes > size()) impl_->buf.Reserve(bytes - size());
}

}  // namespace kvio::trace
