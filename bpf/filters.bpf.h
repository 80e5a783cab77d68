/* filters.bpf.h — what is traced: devices (-d) and submitting tasks (-p, -c, --cgroup). */
#ifndef KVIO_FILTERS_BPF_H
#define KVIO_FILTERS_BPF_H

#include "bpf/core_fixes.bpf.h"
#include "bpf/util.bpf.h"

/* ---------------------------------------------------------------- devices */

/* Is dev traced (-d), and its slot (KVIO_SLOT_NONE: none, the dev-keyed hashes hold it). */
static __always_inline bool dev_traced(__u32 dev, __u32 *slot)
{
    *slot = KVIO_SLOT_NONE;
    if (!targ_ndevs) {
        __u32 *s = bpf_map_lookup_elem(&dev_slots, &dev);
        if (s)
            *slot = *s;
        return true;
    }
    for (int i = 0; i < KVIO_MAX_DEVS; i++) {
        if (i >= targ_ndevs)
            break;
        if (targ_devs[i] == dev) {
            *slot = i;
            return true;
        }
    }
    return false;
}

static __always_inline bool dev_passes(__u32 dev)
{
    if (!targ_ndevs)
        return true;
    for (int i = 0; i < KVIO_MAX_DEVS; i++) {
        if (i >= targ_ndevs)
            break;
        if (targ_devs[i] == dev)
            return true;
    }
    return false;
}

/* ---------------------------------------------------------------- tasks */

/* -c: is `comm` (KVIO_COMM_LEN bytes, 8-byte aligned) one of targ_comms? Both sides are NUL-padded to
 * KVIO_COMM_LEN (the kernel pads task->comm and bpf_get_current_comm's copy, userspace strncpy's targ_comms), so two
 * 8-byte words compare a whole name. */
static __always_inline bool comm_matches(const char *comm)
{
    if (!targ_ncomms)
        return true;
    __u64 w0 = ((const __u64 *)comm)[0], w1 = ((const __u64 *)comm)[1];
    for (int c = 0; c < KVIO_MAX_COMMS; c++) {
        if (c >= targ_ncomms)
            break;
        const volatile __u64 *t = (const volatile __u64 *)targ_comms[c];
        if (t[0] == w0 && t[1] == w1)
            return true;
    }
    return false;
}

/* An io_uring worker (iou-wrk-N, iou-sqp-N: threads of the process that owns the ring) submits for its process:
 * with -c, the process's name decides. Read only for tasks whose own comm does not match. The leader's comm is
 * copied up to its NUL into a zeroed buffer: padded like the others whatever task->comm holds behind the NUL. */
static __always_inline bool io_worker_of_matching_process(void)
{
    struct task_struct *t = bpf_get_current_task_btf();
    if (!(t->flags & PF_IO_WORKER))
        return false;
    __u64 leader[KVIO_COMM_LEN / 8] = {};
    bpf_probe_read_kernel_str(leader, sizeof(leader), t->group_leader->comm);
    return comm_matches((const char *)leader);
}

/* The current task's comm as bpf_get_current_comm copies it (NUL-padded to KVIO_COMM_LEN), without the helper call:
 * two loads from task->comm, whatever the kernel left behind its NUL cleared (kernels whose __set_task_comm pads,
 * as strscpy_pad does, leave zeros there anyway). */
static __always_inline void current_comm_words(__u64 w[KVIO_COMM_LEN / 8])
{
    struct task_struct *t = bpf_get_current_task_btf();
    int ended = 0;
    w[0] = kvio_comm_word_clip(*(const __u64 *)&t->comm[0], &ended);
    w[1] = kvio_comm_word_clip(*(const __u64 *)&t->comm[8], &ended);
}

/* Does the current task, whose tgid and comm (when -c is given) the caller read, pass -p/-c/--cgroup? */
static __always_inline bool task_passes_filters(__u32 tgid, const char *comm)
{
    if (filter_pid && !bpf_map_lookup_elem(&pid_filter, &tgid))
        return false;
    if (targ_ncomms && !comm_matches(comm) && !io_worker_of_matching_process())
        return false;
    if (targ_cgroup && bpf_get_current_cgroup_id() != targ_cgroup)
        return false;
    return true;
}

/* task_passes_filters for the current task, reading what it needs. */
static __always_inline bool current_task_passes(void)
{
    __u64 comm[KVIO_COMM_LEN / 8] = {};
    if (targ_ncomms)
        current_comm_words(comm);
    return task_passes_filters(bpf_get_current_pid_tgid() >> 32, (const char *)comm);
}

static __always_inline bool task_filter_active(void) { return filter_pid || targ_ncomms || targ_cgroup; }

static __always_inline bool current_is_kthread(void)
{
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    return BPF_CORE_READ(t, flags) & PF_KTHREAD;
}

#endif /* KVIO_FILTERS_BPF_H */
