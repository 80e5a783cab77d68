#include "common/syscall_trace.h"

#include <algorithm>
#include <string_view>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/events_reader.h"

namespace kvio {

namespace {

struct KindOf {
    std::string_view name;
    SysKind kind;
    bool vectored;
};

// The `name`s kvio trace writes (common/event_names.cpp syscall_name); any other name is SysKind::Other.
constexpr KindOf kKinds[] = {
    {"read", SysKind::Read, false},         {"pread64", SysKind::Read, false},
    {"readv", SysKind::Read, true},         {"preadv", SysKind::Read, true},
    {"preadv2", SysKind::Read, true},       {"write", SysKind::Write, false},
    {"pwrite64", SysKind::Write, false},    {"writev", SysKind::Write, true},
    {"pwritev", SysKind::Write, true},      {"pwritev2", SysKind::Write, true},
    {"fsync", SysKind::Fsync, false},       {"fdatasync", SysKind::Fdatasync, false},
    {"fadvise64", SysKind::Fadvise, false}, {"io_uring_enter", SysKind::IoUringEnter, false},
};

void set_kind(std::string_view name, SyscallRec& s) {
    for (const KindOf& k : kKinds)
        if (k.name == name) {
            s.kind = k.kind;
            s.vectored = k.vectored;
            return;
        }
}

// A checked syscall record as a SyscallRec. The fields every kvio that wrote syscall records wrote are required;
// file identity (ino, fs_dev, gen, direct, file_size) comes as a group: present or absent together.
SyscallRec to_rec(const EventsReader& rd, const EventRecord& r) {
    using F = EventField;
    for (F f : {F::Name, F::Pid, F::Tid, F::Fd, F::TsEnter, F::TsExit, F::Ret}) rd.require(r, f);
    const JsonSource& src = rd.source();
    SyscallRec s;
    set_kind(r.name, s);
    if (r.pid > UINT32_MAX) src.fail("pid", std::to_string(r.pid) + " is not a process id (at most 2^32 - 1)");
    if (r.tid > UINT32_MAX) src.fail("tid", std::to_string(r.tid) + " is not a thread id (at most 2^32 - 1)");
    if (r.fd < INT32_MIN || r.fd > INT32_MAX) src.fail("fd", std::to_string(r.fd) + " is not a file descriptor");
    if (r.ts_exit < r.ts_enter)
        src.fail("ts_exit",
                 "is before ts_enter (" + std::to_string(r.ts_exit) + " < " + std::to_string(r.ts_enter) + ")");
    s.pid = uint32_t(r.pid);
    s.tid = uint32_t(r.tid);
    s.fd = int32_t(r.fd);
    s.ts_enter = r.ts_enter;
    s.ts_exit = r.ts_exit;
    s.ret = r.ret;
    s.offset = r.file_offset;
    s.count = r.count;
    s.comm = r.comm;
    const bool any_file = r.has_field(F::Ino) || r.has_field(F::FsDev) || r.has_field(F::Gen) ||
                          r.has_field(F::Direct) || r.has_field(F::FileSize);
    if (!any_file) return s;
    for (F f : {F::Ino, F::FsDev, F::Gen, F::Direct, F::FileSize}) rd.require(r, f);
    auto d = parse_dev_string(std::string(r.fs_dev));
    if (!d) src.fail("fs_dev", "expected \"MAJ:MIN\", got \"" + std::string(r.fs_dev) + "\"");
    if (r.gen > UINT32_MAX) src.fail("gen", std::to_string(r.gen) + " is not an inode generation (32 bits)");
    s.has_file = true;
    s.ino = r.ino;
    s.fs_dev = kernel_dev(*d);
    s.gen = uint32_t(r.gen);
    s.direct = r.direct;
    s.file_size = r.file_size;
    return s;
}

bool passes(const SyscallRec& s, const SyscallFilter& filter) {
    if (filter.pid && s.pid != filter.pid) return false;
    if (!filter.comm.empty() && s.comm != filter.comm) return false;
    if (filter.fs_dev && (!s.has_file || s.fs_dev != filter.fs_dev)) return false;
    return true;
}

}  // namespace

std::vector<SyscallRec> load_syscalls(const std::string& path, const SyscallFilter& filter,
                                      const volatile sig_atomic_t* stop) {
    EventsReader rd(path);
    std::vector<SyscallRec> out;
    EventRecord r;
    bool sorted = true;
    while (rd.next_checked(r)) {
        if (stop && *stop)
            throw Stopped(int(*stop), "stopped by signal " + std::to_string(int(*stop)) + " while loading " + path);
        if (r.kind != EventType::Syscall) continue;
        SyscallRec s = to_rec(rd, r);
        if (!passes(s, filter)) continue;
        if (!out.empty() && s.ts_enter < out.back().ts_enter) sorted = false;
        out.push_back(std::move(s));
    }
    // Records are written at exit, so a long call comes after shorter ones that entered later.
    if (!sorted)
        std::stable_sort(out.begin(), out.end(),
                         [](const SyscallRec& a, const SyscallRec& b) { return a.ts_enter < b.ts_enter; });
    return out;
}

}  // namespace kvio
