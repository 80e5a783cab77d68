// How kvio trace's syscall programs hook the kernel: per-syscall tracepoints (syscalls:sys_enter_NAME, BPF runs for
// the traced syscalls only) where tracefs has them and the kernel accepts the attach, else raw_syscalls sys_enter /
// sys_exit (BPF runs for every syscall of the machine and drops the untraced ones itself).
#pragma once
#include <string>
#include <vector>

struct bpf_link;
struct bpf_program;
struct kvio_trace_bpf;

namespace kvio::trace {

/// Which hooks carry the syscall programs (kvio.trace/1 summary field "syscall_hooks").
enum class SyscallHooks {
    PerSyscall,   ///< "per_syscall": syscalls:sys_enter_NAME / sys_exit_NAME of each traced syscall
    RawSyscalls,  ///< "raw_syscalls": raw_syscalls sys_enter / sys_exit (tp_btf, or raw_tp where BTF lacks them)
    None,         ///< "none": --block-only, no syscall program (the machine's syscalls keep the kernel's fast path)
};

/// --files takes direct I/O's file from the submitting context (the io_submit and read/write-family syscalls', the
/// io_uring SQE's, kept per bio at block_getrq) rather than from the bio's iomap dio at completion: rodata track_files
/// without files_dio_end_io (bpf/file_attr.bpf.h). Set from the skeleton's rodata before load.
bool files_from_submitter(const kvio_trace_bpf* s);

/// "per_syscall", "raw_syscalls" or "none".
const char* syscall_hooks_name(SyscallHooks h);

/// The syscall programs of one trace: chosen before load, attached after, detached when destroyed (before the
/// skeleton they belong to).
class SyscallPrograms {
public:
    /// Before load: loads the per-syscall programs when every traced syscall has its enter and exit event in tracefs
    /// (io_uring_enter's exit only when rodata need_user_data) and KVIO_TRACE_RAW_SYSCALLS is unset or 0; the
    /// raw_syscalls pair is loaded too, as the fallback when the kernel refuses an attach. Nothing autoattaches.
    /// `enabled` false (--block-only): none is loaded and attach() attaches nothing (hooks() None).
    SyscallPrograms(kvio_trace_bpf* s, bool enabled);
    ~SyscallPrograms();
    SyscallPrograms(const SyscallPrograms&) = delete;
    SyscallPrograms& operator=(const SyscallPrograms&) = delete;

    /// After load: maps this architecture's syscall numbers (<sys/syscall.h>) to enum kvio_syscall (sys_nr_map);
    /// nothing when not enabled.
    void fill_syscall_map();

    /// Attaches the exits, then the entries (an entry never waits for an exit that is not there yet): per
    /// syscall when chosen, else, or when the kernel refuses one of those attaches, the raw_syscalls pair (a warning
    /// with KVIO_DEBUG=1 says why). Returns 0 or a negative errno of the raw_syscalls attach.
    int attach();

    /// The hooks attached (valid after attach() returned 0).
    SyscallHooks hooks() const { return hooks_; }

    /// The names of the programs attached now (a per-syscall program attached to several tracepoints once).
    std::vector<std::string> attached() const;

private:
    int attach_per_syscall();
    void detach();

    kvio_trace_bpf* s_;
    bool enabled_ = true;
    bool per_syscall_ = false;
    SyscallHooks hooks_ = SyscallHooks::RawSyscalls;
    std::vector<bpf_link*> links_;
    std::vector<bpf_program*> attached_;  ///< the program of each link
};

}  // namespace kvio::trace
