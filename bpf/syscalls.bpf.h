/* syscalls.bpf.h — the read/write families, fsync/fdatasync, fadvise64 and libaio's io_submit/io_getevents on
 * storage fds: VFS and AIO latency, the gaps write -> fsync and fadvise -> read, and syscall events; io_uring_enter's
 * exit ends the SQE user_data (io_uring.bpf.h). */
#ifndef KVIO_SYSCALLS_BPF_H
#define KVIO_SYSCALLS_BPF_H

#include "bpf/files.bpf.h"
#include "bpf/hist.bpf.h"
#include "bpf/io_uring.bpf.h"

/* Is f (the file of a traced fd, file_of_fd) storage: a regular file or block device, and with -d one on a traced
 * device (a block device node: its i_rdev; a file: its filesystem's s_dev), so ld.so's and libc's reads of the root
 * filesystem, pipes, sockets and ttys do not count. targ_storage: the traced disks, their partitions and the
 * devices stacked on them (filled by userspace from sysfs). *fmt: the inode's S_IFMT bits. */
static __always_inline bool file_is_storage(struct file *f, struct inode **inode_out, __u32 *fmt_out)
{
    if (!f)
        return false;
    struct inode *inode = BPF_CORE_READ(f, f_inode);
    unsigned short fmt = BPF_CORE_READ(inode, i_mode) & S_IFMT;
    if (fmt != S_IFREG && fmt != S_IFBLK)
        return false;
    *inode_out = inode;
    *fmt_out = fmt;
    if (!targ_nstorage)
        return true;
    __u32 dev = fmt == S_IFBLK ? BPF_CORE_READ(inode, i_rdev) : BPF_CORE_READ(inode, i_sb, s_dev);
    for (int i = 0; i < KVIO_MAX_STORAGE_DEVS; i++) {
        if (i >= targ_nstorage)
            break;
        if (targ_storage[i] == dev)
            return true;
    }
    return false;
}

static __always_inline bool is_read_call(__u32 nr)
{
    return nr == KVIO_SYS_READ || nr == KVIO_SYS_PREAD64 || nr == KVIO_SYS_READV || nr == KVIO_SYS_PREADV ||
           nr == KVIO_SYS_PREADV2;
}

static __always_inline bool is_write_call(__u32 nr)
{
    return nr == KVIO_SYS_WRITE || nr == KVIO_SYS_PWRITE64 || nr == KVIO_SYS_WRITEV || nr == KVIO_SYS_PWRITEV ||
           nr == KVIO_SYS_PWRITEV2;
}

static __always_inline __u32 syscall_kind(long id)
{
    __u32 idx = (__u32)id;
    __u8 *mapped = bpf_map_lookup_elem(&sys_nr_map, &idx);
    return mapped ? *mapped : KVIO_SYSCALLS;
}

/* The time a thread's last traced write (or fadvise) returned, ended by its next sync (or read): `slot` in the
 * thread's thread_io `t` (task_storage), else in `map`. 0: none. */
static __always_inline __u64 take_gap_start(struct thread_io *t, __u64 *slot, void *map, __u32 tid)
{
    if (task_storage) {
        __u64 v = *slot;
        *slot = 0;
        return v;
    }
    __u64 *w = bpf_map_lookup_elem(map, &tid);
    if (!w)
        return 0;
    __u64 v = *w;
    bpf_map_delete_elem(map, &tid);
    return v;
}

static __always_inline void put_gap_start(__u64 *slot, void *map, __u32 tid, __u64 now)
{
    if (task_storage)
        *slot = now;
    else
        bpf_map_update_elem(map, &tid, &now, BPF_ANY);
}

/* With events: the file's identity into the syscall's state, and for read/write/readv/writev where in the file the
 * call starts: the file position at entry, or for a write to an O_APPEND file its size (the kernel writes at the
 * end). Another thread moving the shared position between this entry and the kernel's own read of it is not seen. */
static __always_inline void record_file(struct sys_state *st, struct file *f, struct inode *inode, __u32 fmt)
{
    struct file_facts ff;
    file_facts_of(f, inode, fmt, &ff);
    st->ino = ff.ino;
    st->size_inode = ff.size_inode;
    st->fs_dev = ff.fs_dev;
    st->gen = ff.gen;
    st->flags = KVIO_SYSF_FILE;
    if (o_direct_flag && (ff.f_flags & o_direct_flag))
        st->flags |= KVIO_SYSF_DIRECT;
    __u32 nr = st->nr;
    if (nr == KVIO_SYS_READ || nr == KVIO_SYS_WRITE || nr == KVIO_SYS_READV || nr == KVIO_SYS_WRITEV) {
        bool append = (nr == KVIO_SYS_WRITE || nr == KVIO_SYS_WRITEV) && o_append_flag && (ff.f_flags & o_append_flag);
        st->offset = append ? file_size_of(ff.size_inode) : BPF_CORE_READ(f, f_pos);
        st->flags |= KVIO_SYSF_POS;
    }
}

/* The state of a traced syscall in progress, kept for its exit: in the thread's thread_io `t` (task_storage), else in
 * sys_starts. */
static __always_inline void keep_sys_state(struct thread_io *t, const struct sys_state *st, __u32 tid)
{
    if (task_storage)
        t->sys = *st;
    else if (bpf_map_update_elem(&sys_starts, &tid, st, BPF_ANY))
        count(KVIO_CNT_MAP_FULL);
}

/* io_submit(ctx, nr, iocbpp): the fd of the first iocb (struct iocb, linux/aio_abi.h: aio_fildes), read from the
 * caller's memory; -1 when there is none or it cannot be read. A batch that spans several files is named by its
 * first (docs/formats.md). */
static __always_inline int aio_first_fd(__u64 nr, __u64 iocbpp)
{
    __u64 iocb = 0;
    __u32 fd = 0;
    if ((long)nr < 1 || bpf_probe_read_user(&iocb, sizeof(iocb), (void *)iocbpp) || !iocb)
        return -1;
    if (bpf_probe_read_user(&fd, sizeof(fd), &((struct iocb *)iocb)->aio_fildes))
        return -1;
    return (int)fd;
}

/* io_getevents/io_pgetevents(ctx, min_nr, nr, ...): traced when an io_submit on storage used ctx. No file: fd -1. */
static __always_inline int on_aio_getevents_enter(__u32 nr, __u64 ctx, __u64 max_nr)
{
    if (!bpf_map_lookup_elem(&aio_ctxs, &ctx))
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct sys_state st = {.ts = bpf_ktime_get_ns(), .fd = -1, .nr = nr, .count = max_nr};
    struct thread_io dummy, *t = &dummy;
    if (task_storage) {
        t = current_thread_io(true);
        if (!t) {
            count(KVIO_CNT_MAP_FULL);
            return 0;
        }
    }
    keep_sys_state(t, &st, tid);
    return 0;
}

/* A traced syscall's entry: args a0..a3 as the syscall got them; `typed`: a tp_btf program. io_uring_enter needs
 * nothing here: its exit ends the SQE user_data (sys_exit_filtered). */
static __always_inline int on_sys_enter(__u32 nr, __u64 a0, __u64 a1, __u64 a2, __u64 a3, bool typed)
{
    if (nr >= KVIO_SYSCALLS || nr == KVIO_SYS_IO_URING_ENTER)
        return 0;
    if (!current_task_passes())
        return 0;
    if (nr == KVIO_SYS_IO_GETEVENTS)
        return on_aio_getevents_enter(nr, a0, a2);
    int fd = nr == KVIO_SYS_IO_SUBMIT ? aio_first_fd(a1, a2) : (int)a0;
    struct file *f = file_of_fd(fd, typed);
    struct inode *inode = 0;
    __u32 fmt = 0;
    if (!file_is_storage(f, &inode, &fmt))
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64 now = bpf_ktime_get_ns();
    struct sys_state st = {.ts = now, .fd = fd, .nr = nr};
    if (nr == KVIO_SYS_FADVISE64) {
        st.offset = a1;
        st.count = a2;
    } else if (nr == KVIO_SYS_PREAD64 || nr == KVIO_SYS_PWRITE64 || nr == KVIO_SYS_PREADV || nr == KVIO_SYS_PWRITEV ||
               nr == KVIO_SYS_PREADV2 || nr == KVIO_SYS_PWRITEV2) {
        st.count = a2;
        st.offset = a3;
    } else if (nr == KVIO_SYS_IO_SUBMIT) {
        st.count = a1;                              /* iocbs */
        if (!bpf_map_lookup_elem(&aio_ctxs, &a0)) { /* once per context: a lookup is cheaper than an update */
            __u8 one = 1;
            bpf_map_update_elem(&aio_ctxs, &a0, &one, BPF_ANY);
        }
    } else if (nr != KVIO_SYS_FSYNC && nr != KVIO_SYS_FDATASYNC) {
        st.count = a2;
    }
    if (emit_syscalls || track_files) /* --files: the file direct I/O and the app's bytes are attributed to */
        record_file(&st, f, inode, fmt);
    if (track_files && is_write_call(nr)) /* --files under a task filter: its writeback is followed */
        files_on_write_enter(&st);
    struct thread_io dummy, *t = &dummy; /* the hash path never touches it */
    if (task_storage) {
        t = current_thread_io(true);
        if (!t) {
            count(KVIO_CNT_MAP_FULL);
            return 0;
        }
    }
    if (nr == KVIO_SYS_FSYNC || nr == KVIO_SYS_FDATASYNC) {
        __u64 w = take_gap_start(t, &t->last_write_exit, &last_write_exit, tid);
        if (w && now >= w)
            proc_hist_add(KVIO_H_WRITE_FSYNC_GAP, now - w);
    } else if (is_read_call(nr)) {
        __u64 a = take_gap_start(t, &t->last_fadvise_exit, &last_fadvise_exit, tid);
        if (a && now >= a)
            proc_hist_add(KVIO_H_FADVISE_READ_GAP, now - a);
    }
    keep_sys_state(t, &st, tid);
    return 0;
}

/* A traced syscall's exit (not io_uring_enter). Syscalls do not nest: the state a thread left at enter belongs
 * to this exit. */
static __always_inline int on_sys_exit(long ret)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id;
    struct thread_io dummy, *t = &dummy;
    struct sys_state st;
    if (task_storage) {
        t = current_thread_io(false);
        if (!t || !t->sys.ts)
            return 0;
        st = t->sys;
        t->sys.ts = 0;
    } else {
        struct sys_state *s = bpf_map_lookup_elem(&sys_starts, &tid);
        if (!s)
            return 0;
        st = *s;
        bpf_map_delete_elem(&sys_starts, &tid);
    }
    __u32 nr = st.nr;
    __u64 now = bpf_ktime_get_ns();
    if (now < st.ts) {
        count(KVIO_CNT_NEGATIVE_DELTA);
        return 0;
    }
    __u64 lat = now - st.ts;
    if (is_read_call(nr)) {
        proc_hist_add(KVIO_H_VFS_READ, lat);
    } else if (is_write_call(nr)) {
        proc_hist_add(KVIO_H_VFS_WRITE, lat);
        put_gap_start(&t->last_write_exit, &last_write_exit, tid, now);
    } else if (nr == KVIO_SYS_FSYNC || nr == KVIO_SYS_FDATASYNC) {
        proc_hist_add(KVIO_H_FSYNC, lat);
    } else if (nr == KVIO_SYS_FADVISE64) {
        put_gap_start(&t->last_fadvise_exit, &last_fadvise_exit, tid, now);
    } else if (nr == KVIO_SYS_IO_SUBMIT) {
        proc_hist_add(KVIO_H_AIO_SUBMIT, lat);
    } else if (nr == KVIO_SYS_IO_GETEVENTS) {
        proc_hist_add(KVIO_H_AIO_GETEVENTS, lat);
    }
    if (track_files)
        files_on_sys_exit(&st, ret, is_read_call(nr), is_write_call(nr));
    if (!emit_syscalls)
        return 0;
    struct kvio_syscall_event *e = EVENT_RESERVE(struct kvio_syscall_event);
    if (!e)
        return 0;
    e->type = KVIO_EV_SYSCALL;
    e->nr = nr;
    e->flags = (__u8)st.flags;
    e->pad = 0;
    e->ino = st.ino;
    e->fs_dev = st.fs_dev;
    e->gen = st.gen;
    e->file_size = st.flags & KVIO_SYSF_FILE ? file_size_of(st.size_inode) : 0;
    e->fd = st.fd;
    e->ts_enter = st.ts;
    e->ts_exit = now;
    e->ret = ret;
    e->offset = st.offset;
    e->count = st.count;
    e->pid = id >> 32;
    e->tid = tid;
    bpf_get_current_comm(e->comm, sizeof(e->comm));
    event_submit(e);
    return 0;
}

/* Two ways in. Per-syscall tracepoints (syscalls:sys_enter_NAME / sys_exit_NAME, programs below) run BPF for the
 * traced syscalls only: userspace attaches them where tracefs has them and the kernel accepts the attach. Else
 * raw_syscalls sys_enter / sys_exit, which run for every syscall of the machine, so the first thing each does is
 * drop the untraced ones, in one array lookup (sys_nr_map). At exit the syscall number is the one the entry saw,
 * kept in the registers (x86: orig_ax; arm64: syscallno), so an untraced exit costs no hash lookup either. tp_btf
 * where BTF describes the raw tracepoints (registers read with plain loads), else raw_tp. */
static __always_inline long exit_syscall_id(struct pt_regs *regs, bool typed)
{
#if defined(__TARGET_ARCH_x86)
    return typed ? regs->orig_ax : BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
    return typed ? regs->syscallno : BPF_CORE_READ(regs, syscallno);
#else
    return -1; /* unknown: every exit looks its thread up */
#endif
}

static __always_inline int sys_exit_filtered(struct pt_regs *regs, long ret, bool typed)
{
    long id = exit_syscall_id(regs, typed);
    __u32 kind = id >= 0 ? syscall_kind(id) : KVIO_SYSCALLS;
    if (id >= 0 && kind >= KVIO_SYSCALLS)
        return 0;
    /* io_uring_enter is in sys_nr_map for events only; an unknown architecture ends the user_data every exit */
    if (kind == KVIO_SYS_IO_URING_ENTER || (id < 0 && need_user_data))
        end_user_data();
    if (kind == KVIO_SYS_IO_URING_ENTER)
        return 0;
    return on_sys_exit(ret);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
    __u32 nr = syscall_kind(id);
    if (nr >= KVIO_SYSCALLS)
        return 0;
#if defined(__TARGET_ARCH_x86)
    /* x86-64 syscall arguments: rdi, rsi, rdx, r10 */
    return on_sys_enter(nr, regs->di, regs->si, regs->dx, regs->r10, true);
#else
    return on_sys_enter(nr, PT_REGS_PARM1_CORE_SYSCALL(regs), PT_REGS_PARM2_CORE_SYSCALL(regs),
                        PT_REGS_PARM3_CORE_SYSCALL(regs), PT_REGS_PARM4_CORE_SYSCALL(regs), true);
#endif
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret) { return sys_exit_filtered(regs, ret, true); }

SEC("raw_tp/sys_enter")
int BPF_PROG(raw_sys_enter, struct pt_regs *regs, long id)
{
    __u32 nr = syscall_kind(id);
    if (nr >= KVIO_SYSCALLS)
        return 0;
    return on_sys_enter(nr, PT_REGS_PARM1_CORE_SYSCALL(regs), PT_REGS_PARM2_CORE_SYSCALL(regs),
                        PT_REGS_PARM3_CORE_SYSCALL(regs), PT_REGS_PARM4_CORE_SYSCALL(regs), false);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(raw_sys_exit, struct pt_regs *regs, long ret) { return sys_exit_filtered(regs, ret, false); }

/* The record a per-syscall tracepoint program gets (kernel/trace/trace_syscalls.c, perf_call_bpf_enter/exit; the
 * events' tracefs format files): 8 bytes of common fields, the syscall number (int) at 8, then at 16 the syscall's
 * own arguments, 8 bytes each (enter), or its return value (exit). The kernel refuses to attach a program that
 * reads past the end of the record of the event (perf_event_set_bpf_prog: -EACCES), and a record has only the
 * syscall's arguments: so one program per number of arguments read, each attached to the syscalls that have at
 * least that many. */
struct kvio_sys_enter_rec {
    __u64 common;
    __s32 nr;
    __u32 pad;
    __u64 args[6];
};

struct kvio_sys_exit_rec {
    __u64 common;
    __s32 nr;
    __u32 pad;
    __s64 ret;
};

/* fsync, fdatasync: (fd) */
SEC("tp")
int sys_enter_1arg(struct kvio_sys_enter_rec *ctx)
{
    return on_sys_enter(syscall_kind(ctx->nr), ctx->args[0], 0, 0, 0, true);
}

/* read, write: (fd, buf, count); readv, writev: (fd, vec, vlen); io_submit: (ctx, nr, iocbpp); io_getevents,
 * io_pgetevents: (ctx, min_nr, nr, ...) */
SEC("tp")
int sys_enter_3args(struct kvio_sys_enter_rec *ctx)
{
    return on_sys_enter(syscall_kind(ctx->nr), ctx->args[0], ctx->args[1], ctx->args[2], 0, true);
}

/* pread64, pwrite64: (fd, buf, count, pos); fadvise64: (fd, offset, len, advice); preadv, pwritev (+ pos_h) and
 * preadv2, pwritev2 (+ pos_h, flags): (fd, vec, vlen, pos_l, ...), where a 64-bit kernel takes the whole offset
 * from pos_l (fs/read_write.c pos_from_hilo: pos_h is shifted out) */
SEC("tp")
int sys_enter_4args(struct kvio_sys_enter_rec *ctx)
{
    return on_sys_enter(syscall_kind(ctx->nr), ctx->args[0], ctx->args[1], ctx->args[2], ctx->args[3], true);
}

/* The exit of every traced syscall but io_uring_enter. */
SEC("tp")
int sys_exit_traced(struct kvio_sys_exit_rec *ctx) { return on_sys_exit(ctx->ret); }

/* io_uring_enter's exit, attached for events only: it ends the SQE user_data they carry. */
SEC("tp")
int sys_exit_uring_enter(struct kvio_sys_exit_rec *ctx)
{
    end_user_data();
    return 0;
}

#endif /* KVIO_SYSCALLS_BPF_H */
