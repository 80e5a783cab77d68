#include "trace/syscall_hooks.h"

#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "bpf/kvio_trace.h"
#include "bpf/kvio_trace.skel.h"
#include "trace/probe.h"

namespace kvio::trace {

namespace {

/// The enter program of a syscall: which of its arguments the BPF side reads (kvio_trace.bpf.c, kvio_sys_enter_rec).
enum class Enter { None, Args1, Args3, Args4 };

/// A traced syscall: this architecture's number (<sys/syscall.h>), enum kvio_syscall, its tracepoint names (the
/// kernel names the event after the SYSCALL_DEFINE the syscall table points at: arm64's fadvise64 is
/// fadvise64_64; the first name tracefs has is used) and its enter program.
struct TracedSyscall {
    long nr;
    uint8_t kind;
    const char* names[2];
    Enter enter;
};
constexpr TracedSyscall kSyscalls[] = {
    {SYS_read, KVIO_SYS_READ, {"read"}, Enter::Args3},
    {SYS_write, KVIO_SYS_WRITE, {"write"}, Enter::Args3},
    {SYS_pread64, KVIO_SYS_PREAD64, {"pread64"}, Enter::Args4},
    {SYS_pwrite64, KVIO_SYS_PWRITE64, {"pwrite64"}, Enter::Args4},
    {SYS_readv, KVIO_SYS_READV, {"readv"}, Enter::Args3},
    {SYS_writev, KVIO_SYS_WRITEV, {"writev"}, Enter::Args3},
    {SYS_preadv, KVIO_SYS_PREADV, {"preadv"}, Enter::Args4},
    {SYS_pwritev, KVIO_SYS_PWRITEV, {"pwritev"}, Enter::Args4},
    {SYS_preadv2, KVIO_SYS_PREADV2, {"preadv2"}, Enter::Args4},
    {SYS_pwritev2, KVIO_SYS_PWRITEV2, {"pwritev2"}, Enter::Args4},
    {SYS_fsync, KVIO_SYS_FSYNC, {"fsync"}, Enter::Args1},
    {SYS_fdatasync, KVIO_SYS_FDATASYNC, {"fdatasync"}, Enter::Args1},
    {SYS_fadvise64, KVIO_SYS_FADVISE64, {"fadvise64", "fadvise64_64"}, Enter::Args4},
    {SYS_io_uring_enter, KVIO_SYS_IO_URING_ENTER, {"io_uring_enter"}, Enter::None},
    {SYS_io_submit, KVIO_SYS_IO_SUBMIT, {"io_submit"}, Enter::Args3},
#ifdef SYS_io_getevents  // arm64 has io_pgetevents only
    {SYS_io_getevents, KVIO_SYS_IO_GETEVENTS, {"io_getevents"}, Enter::Args3},
#endif
    {SYS_io_pgetevents, KVIO_SYS_IO_GETEVENTS, {"io_pgetevents"}, Enter::Args3},
};

/// io_uring_enter is traced for events and --files from the submitter only: its exit ends the SQE user_data they
/// carry and the SQE's file (bpf/file_attr.bpf.h). libaio's calls only when asked: two traced calls per I/O would
/// double the default mode's kernel cost per command for libaio programs (docs/performance.md); io_submit with
/// --syscalls or --files from the submitter (the file its direct I/O goes to), io_getevents with --syscalls only (it
/// names no file: --files alone does not need it, and it ran ~2 times per command of a QD-32 fio job).
bool traced(const TracedSyscall& sc, const kvio_trace_bpf* s) {
    if (sc.kind == KVIO_SYS_IO_SUBMIT) return s->rodata->emit_syscalls || files_from_submitter(s);
    if (sc.kind == KVIO_SYS_IO_GETEVENTS) return s->rodata->emit_syscalls;
    return sc.kind != KVIO_SYS_IO_URING_ENTER || s->rodata->need_user_data || files_from_submitter(s);
}

/// The name under which tracefs has both events of `sc` (events/syscalls/sys_{enter,exit}_NAME), or nullptr.
const char* event_name(const TracedSyscall& sc) {
    for (const char* n : sc.names)
        if (n && tracepoint_exists("syscalls", std::string("sys_enter_") + n) &&
            tracepoint_exists("syscalls", std::string("sys_exit_") + n))
            return n;
    return nullptr;
}

bool env_forces_raw() {
    const char* v = std::getenv("KVIO_TRACE_RAW_SYSCALLS");
    return v && *v && std::string(v) != "0";
}

bool raw_pair_btf() { return has_btf_tracepoint("sys_enter") && has_btf_tracepoint("sys_exit"); }

}  // namespace

bool files_from_submitter(const kvio_trace_bpf* s) { return s->rodata->track_files && !s->rodata->files_dio_end_io; }

const char* syscall_hooks_name(SyscallHooks h) {
    switch (h) {
        case SyscallHooks::PerSyscall:
            return "per_syscall";
        case SyscallHooks::RawSyscalls:
            return "raw_syscalls";
        case SyscallHooks::None:
            break;
    }
    return "none";
}

SyscallPrograms::SyscallPrograms(kvio_trace_bpf* s, bool enabled) : s_(s), enabled_(enabled) {
    per_syscall_ = !env_forces_raw();
    for (const auto& sc : kSyscalls)
        if (traced(sc, s) && !event_name(sc)) per_syscall_ = false;  // CONFIG_FTRACE_SYSCALLS off, or a name we miss
    bpf_program* tp[] = {s->progs.sys_enter_1arg, s->progs.sys_enter_3args, s->progs.sys_enter_4args,
                         s->progs.sys_exit_traced, s->progs.sys_exit_uring_enter};
    for (bpf_program* p : tp) {
        bpf_program__set_autoload(p, per_syscall_ && (p != s->progs.sys_exit_uring_enter || s->rodata->need_user_data ||
                                                      files_from_submitter(s)));
        bpf_program__set_autoattach(p, false);
    }
    const bool btf = raw_pair_btf();
    bpf_program__set_autoload(s->progs.sys_enter_btf, btf);
    bpf_program__set_autoload(s->progs.sys_exit_btf, btf);
    bpf_program__set_autoload(s->progs.raw_sys_enter, !btf);
    bpf_program__set_autoload(s->progs.raw_sys_exit, !btf);
    for (bpf_program* p :
         {s->progs.sys_enter_btf, s->progs.sys_exit_btf, s->progs.raw_sys_enter, s->progs.raw_sys_exit})
        bpf_program__set_autoattach(p, false);
    if (enabled_) return;
    for (bpf_program* p : tp) bpf_program__set_autoload(p, false);
    for (bpf_program* p :
         {s->progs.sys_enter_btf, s->progs.sys_exit_btf, s->progs.raw_sys_enter, s->progs.raw_sys_exit})
        bpf_program__set_autoload(p, false);
    hooks_ = SyscallHooks::None;
}

SyscallPrograms::~SyscallPrograms() { detach(); }

std::vector<std::string> SyscallPrograms::attached() const {
    std::vector<std::string> out;
    for (bpf_program* p : attached_)
        if (std::find(out.begin(), out.end(), bpf_program__name(p)) == out.end()) out.push_back(bpf_program__name(p));
    return out;
}

void SyscallPrograms::detach() {
    for (bpf_link* l : links_) bpf_link__destroy(l);
    links_.clear();
    attached_.clear();
}

void SyscallPrograms::fill_syscall_map() {
    if (!enabled_) return;  // no program reads the map
    int fd = bpf_map__fd(s_->maps.sys_nr_map);
    uint8_t none = KVIO_SYSCALLS;
    for (uint32_t i = 0; i < KVIO_MAX_SYSCALL_NR; ++i) bpf_map_update_elem(fd, &i, &none, BPF_ANY);
    for (const auto& sc : kSyscalls) {
        if (!traced(sc, s_)) continue;
        uint32_t key = uint32_t(sc.nr);
        bpf_map_update_elem(fd, &key, &sc.kind, BPF_ANY);
    }
}

int SyscallPrograms::attach_per_syscall() {
    auto add = [this](bpf_program* p, const std::string& event) {
        bpf_link* l = bpf_program__attach_tracepoint(p, "syscalls", event.c_str());
        if (!l) {
            int err = -errno;
            std::cerr << "kvio trace: note: the kernel refused syscalls:" << event << " (" << std::strerror(-err)
                      << "): tracing syscalls through raw_syscalls instead (BPF runs for every syscall)\n";
            return err;
        }
        links_.push_back(l);
        attached_.push_back(p);
        return 0;
    };
    for (const auto& sc : kSyscalls) {  // exits first
        if (!traced(sc, s_)) continue;
        bpf_program* exit = sc.enter == Enter::None ? s_->progs.sys_exit_uring_enter : s_->progs.sys_exit_traced;
        if (int err = add(exit, std::string("sys_exit_") + event_name(sc))) return err;
    }
    for (const auto& sc : kSyscalls) {
        bpf_program* enter = sc.enter == Enter::Args1   ? s_->progs.sys_enter_1arg
                             : sc.enter == Enter::Args3 ? s_->progs.sys_enter_3args
                             : sc.enter == Enter::Args4 ? s_->progs.sys_enter_4args
                                                        : nullptr;
        if (!enter || !traced(sc, s_)) continue;
        if (int err = add(enter, std::string("sys_enter_") + event_name(sc))) return err;
    }
    return 0;
}

int SyscallPrograms::attach() {
    if (!enabled_) return 0;
    if (per_syscall_) {
        if (attach_per_syscall() == 0) {
            hooks_ = SyscallHooks::PerSyscall;
            return 0;
        }
        detach();
    }
    hooks_ = SyscallHooks::RawSyscalls;
    const bool btf = raw_pair_btf();
    for (bpf_program* p : {btf ? s_->progs.sys_exit_btf : s_->progs.raw_sys_exit,
                           btf ? s_->progs.sys_enter_btf : s_->progs.raw_sys_enter}) {
        bpf_link* l = bpf_program__attach(p);
        if (!l) return -errno;
        links_.push_back(l);
        attached_.push_back(p);
    }
    return 0;
}

}  // namespace kvio::trace
