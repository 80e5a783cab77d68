/* owner.bpf.h — who submitted an I/O (struct kvio_owner): the current task, the SQE user_data of the io_uring
 * submission it runs, and the owner block_getrq recorded for a bio until its request takes it (bio_table). */
#ifndef KVIO_OWNER_BPF_H
#define KVIO_OWNER_BPF_H

#include "bpf/filters.bpf.h"
#include "bpf/slot_table.bpf.h"

/* The current thread's thread_io (task_storage only); created on first use when `create`. */
static __always_inline struct thread_io *current_thread_io(bool create)
{
    return bpf_task_storage_get(&thread_ios, bpf_get_current_task_btf(), 0,
                                create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* The SQE user_data of the io_uring submission the current thread runs, 0 if none (events only). */
static __always_inline __u64 current_user_data(void)
{
    if (task_storage) {
        struct thread_io *t = current_thread_io(false);
        return t ? t->user_data : 0;
    }
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64 *ud = bpf_map_lookup_elem(&cur_udata, &tid);
    return ud ? *ud : 0;
}

/* The current task as a submitter. Only what is reported is read: comm for events and -c, user_data for events. */
static __always_inline void current_owner(struct kvio_owner *o)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id;
    o->pid = id >> 32;
    o->tid = tid;
    if (emit_events || targ_ncomms || group_by == KVIO_GROUP_PROCESS)
        current_comm_words((__u64 *)o->comm);
    if (need_user_data)
        o->user_data = current_user_data();
    o->passes = task_passes_filters(o->pid, o->comm);
}

/* Takes the owner block_getrq recorded for `bio`: its verdict, and its details into `o` when given. */
static __always_inline bool bio_owner_take(__u64 bio, struct kvio_rq_owner *o, bool *passes)
{
    __u32 idx = 0;
    __u64 *k = slot_find(&bio_table, bio_slot_mask, bio, &idx);
    struct kvio_bio_owner *b = 0;
    if (slot_live(k))
        b = (struct kvio_bio_owner *)k;
    else if (spill_any(SPILL_BIO))
        b = bpf_map_lookup_elem(&bio_spill, &bio);
    if (!b)
        return false;
    *passes = b->owner.passes;
    if (o) {
        o->owner = b->owner;
        o->cgroup = b->cgroup;
    }
    if (slot_live(k))
        slot_release(k, bio);
    else if (!bpf_map_delete_elem(&bio_spill, &bio))
        spill_add(SPILL_BIO, -1);
    return true;
}

/* Submitter of a request: its first bio's owner from block_getrq, else, at insert only, the current
 * task when it is not a kernel thread (flushes, passthrough). Issue and completion can run in softirq
 * or on another task's stack, where the current task is whoever was interrupted. *passes: whether it
 * passed the task filters; its details go to `o` when given (events, --per-*). `prog`: the caller's
 * ptr_numbers entry (typed only). */
static __always_inline bool resolve_owner(struct request *rq, struct kvio_rq_owner *o, bool *passes, bool allow_current,
                                          bool typed, __u32 prog)
{
    *passes = true;
    if (!need_owner)
        return false;
    __u64 bio = typed ? ptr_number(prog, rq->bio) : (__u64)BPF_CORE_READ(rq, bio);
    if (bio && bio_owner_take(bio, o, passes))
        return true;
    if (!allow_current || current_is_kthread()) {
        if (o) /* a slot's entry: what an earlier request left there is not this one's */
            __builtin_memset(o, 0, sizeof(*o));
        return false;
    }
    struct kvio_owner cur = {};
    current_owner(&cur);
    *passes = cur.passes;
    if (o) {
        o->owner = cur;
        o->cgroup = group_by == KVIO_GROUP_CGROUP ? bpf_get_current_cgroup_id() : 0;
    }
    return true;
}

/* Owners are recorded for every task (so a filtered-out submitter is known, not "unattributed");
 * whether it passed the filters was decided when it was recorded. */
static __always_inline bool owner_passes(const struct kvio_owner *o, bool has_owner)
{
    if (!task_filter_active())
        return true;
    return has_owner && o->passes;
}

#endif /* KVIO_OWNER_BPF_H */
