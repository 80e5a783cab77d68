// SPDX-License-Identifier: GPL-2.0
/* kvio_trace.bpf.c — the storage latency stack, aggregated in the kernel.
 * Block: block_getrq (who submitted), block_rq_insert/issue/complete (Q2D, D2C, size, QD, LBA).
 * NVMe:  nvme_setup_cmd / nvme_complete_rq (raw_tp; autoload off where the driver is absent).
 * Syscalls: read/write families, fsync/fdatasync, fadvise64, io_uring_enter (VFS latency, gaps).
 * io_uring: io_uring_submit_req gives the SQE user_data active in the submitting task.
 * In-flight state is keyed by the kernel object (struct request *), never by (dev, sector). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/kvio_trace.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
#define PF_IO_WORKER 0x00000010
#define S_IFMT 00170000
#define S_IFREG 0100000
#define S_IFBLK 0060000

/* Set by userspace through the skeleton's rodata before load. */
const volatile bool rq_has_queue_arg = false; /* pre-5.11 block_rq_insert/issue(q, rq) */
const volatile bool filter_pid = false;       /* only tgids in pid_filter */
const volatile bool follow_forks = false;     /* children of filtered tgids join the filter */
const volatile __u32 targ_ndevs = 0;
const volatile __u32 targ_devs[KVIO_MAX_DEVS] = {};
const volatile __u32 targ_ncomms = 0;
const volatile char targ_comms[KVIO_MAX_COMMS][KVIO_COMM_LEN] __attribute__((aligned(8))) = {}; /* NUL-padded */
const volatile __u64 targ_cgroup = 0;
const volatile bool emit_events = false;
const volatile bool uring_owner_by_req = false; /* NVMe present: passthrough commands find their owner by io_kiocb */
const volatile bool need_owner = false;       /* events or a task filter: track who submitted each request */
const volatile bool need_user_data = false;   /* events: the io_uring SQE user_data active in each submitting thread */
const volatile __u32 targ_nstorage = 0;       /* syscall fds count only on these devices (0: every regular file) */
const volatile __u32 targ_storage[KVIO_MAX_STORAGE_DEVS] = {};
const volatile bool emit_syscalls = false;
const volatile __u64 lba_bucket_bytes = 10ULL << 30;
const volatile __u8 group_by = KVIO_GROUP_NONE; /* enum kvio_group_by */
const volatile bool task_storage = false;     /* per-thread state in task local storage (thread_ios), else tid hashes */
const volatile __u32 wakeup_mask = 2047;      /* wake the collector every wakeup_mask + 1 events a CPU submits */
/* Queue depth of a device with a slot is sampled at one issue in qd_sample_every (a power of two; 1: every command,
 * as events need), and the sample counts that many times in the QD histograms (slot_depth). */
const volatile __u32 qd_sample_every = 1;

#define rq_state kvio_rq_state

struct nvme_state {
    __u64 ts_setup;
    __u64 slba;
    __u32 dev, nsid, nlb, qd;
    __u16 qid, cid;
    __u8 opcode, ignored, has_owner, slot;
    struct kvio_owner owner;
};

struct sys_state {
    __u64 ts;
    __u64 offset, count;
    __s32 fd;
    __u32 nr;
};

/* In-flight requests: slot tables (kvio_trace.h: rq_table, bio_table), sized by userspace before load, with hashes
 * for what does not fit (rq_spill: a plain hash, as an LRU could evict a live request; a full one is counted). */
const volatile __u32 rq_slot_mask = KVIO_RQ_SLOTS - 1;   /* rq_table has rq_slot_mask + 1 entries */
const volatile __u32 bio_slot_mask = KVIO_BIO_SLOTS - 1;
const volatile bool need_owner_detail = false; /* events or --per-*: rq_owners keeps who submitted each request */
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, KVIO_RQ_SLOTS); __type(key, __u32); __type(value, struct rq_state); } rq_table SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, KVIO_RQ_SLOTS); __type(key, __u32); __type(value, struct kvio_rq_owner); } rq_owners SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 65536); __type(key, __u64); __type(value, struct kvio_rq_spilled); } rq_spill SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, KVIO_BIO_SLOTS); __type(key, __u32); __type(value, struct kvio_bio_owner); } bio_table SEC(".maps");
/* Per-CPU LRU lists: an update takes only this CPU's list lock. */
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 65536); __uint(map_flags, BPF_F_NO_COMMON_LRU); __type(key, __u64); __type(value, struct kvio_bio_owner); } bio_spill SEC(".maps");
/* Entries now in rq_spill [SPILL_RQ] and bio_spill [SPILL_BIO]: a request or bio not in its table looks in the
 * hash only when this is not 0 (bio_spill can also lose entries to its LRU: then it stays above 0, which only
 * costs lookups). */
enum { SPILL_RQ, SPILL_BIO, SPILLS };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SPILLS); __type(key, __u32); __type(value, __s64); } spill_live SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16384); __type(key, __u64); __type(value, struct nvme_state); } nvme_starts SEC(".maps");
/* io_kiocb -> submitter and SQE user_data, from io_uring_submit_req (passthrough has no block_getrq) */
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 65536); __type(key, __u64); __type(value, struct kvio_owner); } uring_req_owner SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16384); __type(key, __u32); __type(value, __u64); } cur_udata SEC(".maps");
/* Device slots: a traced device's histograms and in-flight count sit in arrays at its slot (an array lookup is
 * inlined by the verifier; a hash lookup hashes the key and walks a bucket). With -d the slot is the device's
 * position in targ_devs; without, userspace fills dev_slots with every disk present at start. Userspace sizes
 * the arrays to the slots it gave. Devices without a slot (hot-plugged, or more than KVIO_MAX_DEV_SLOTS) use
 * the dev-keyed hashes inflight and dev_hists, as do the per-queue NVMe histograms.
 * In flight on a device with a slot = issued - completed (slot_depths): two counters 128 bytes apart (a value
 * starts only 8-byte aligned), so each stays in the cache of the CPU that adds to it (the issuing CPU's, and the
 * completing CPU's, often another: a loop device completes on a kworker), where one shared counter's line moved
 * between them twice per command (~150 ns/cmd on a loop device, docs/performance.md). */
struct slot_depth {
    __s64 issued;    /* counted issues (issue_depth) */
    __u8 pad0[120];
    __s64 completed; /* of those, completed, requeued or reported lost (inflight_dec) */
    __u8 pad1[120];
};
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, KVIO_MAX_DEV_SLOTS); __type(key, __u32); __type(value, __u32); } dev_slots SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, KVIO_MAX_DEV_SLOTS); __type(key, __u32); __type(value, struct kvio_dev_hists); } slot_hists SEC(".maps");
/* The same histograms written by every other program (backups, a lost command found at issue): slot_hists's
 * block words have one writer per CPU, the completion program, which updates them without atomics; a program
 * that may run nested inside it must not touch them. Userspace adds the two sets. */
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, KVIO_MAX_DEV_SLOTS); __type(key, __u32); __type(value, struct kvio_dev_hists); } rescue_hists SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, KVIO_MAX_DEV_SLOTS); __type(key, __u32); __type(value, struct slot_depth); } slot_depths SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 1024); __type(key, __u32); __type(value, __s64); } inflight SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4096); __type(key, struct kvio_hist_key); __type(value, struct kvio_hist); } dev_hists SEC(".maps");
/* Syscall-side histograms, per CPU: threads on several CPUs do not contend for their cache lines. */
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, KVIO_PROC_HISTS); __type(key, __u32); __type(value, struct kvio_hist); } proc_hists SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16384); __type(key, __u32); __type(value, struct sys_state); } sys_starts SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 16384); __type(key, __u32); __type(value, __u64); } last_write_exit SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 16384); __type(key, __u32); __type(value, __u64); } last_fadvise_exit SEC(".maps");
/* Per-thread state of the syscall and io_uring programs in the thread's task local storage, where this kernel lets
 * every program type use it (userspace probes; rodata task_storage): found from the task itself, no hash, no
 * bucket lock, freed with the thread. Elsewhere (6.1: tp_btf only) the tid-keyed hashes cur_udata, sys_starts,
 * last_write_exit and last_fadvise_exit hold the same facts. */
struct thread_io {
    __u64 user_data;         /* SQE user_data of the io_uring submission running in this thread, 0: none */
    __u64 last_write_exit;   /* exit of its last traced write since its last sync (CLOCK_MONOTONIC ns), 0: none */
    __u64 last_fadvise_exit; /* exit of its last fadvise since its last read, 0: none */
    struct sys_state sys;    /* the traced syscall in progress, sys.ts == 0: none */
};
struct { __uint(type, BPF_MAP_TYPE_TASK_STORAGE); __uint(map_flags, BPF_F_NO_PREALLOC); __type(key, int); __type(value, struct thread_io); } thread_ios SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 8192); __type(key, __u32); __type(value, __u8); } pid_filter SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, KVIO_COUNTERS); __type(key, __u32); __type(value, __u64); } counters SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4096); __type(key, struct kvio_group_key); __type(value, struct kvio_group_val); } group_stats SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 16 << 20); } events SEC(".maps");

static const struct kvio_hist zero_hist;
static const struct kvio_group_val zero_group; /* too large for the BPF stack */

static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += 1; /* per-CPU: no atomics needed */
}

/* Slot rule of common/histogram.h: 0 -> 0, v>=1 -> floor(log2(v)) + 1 (bit length). */
static __always_inline __u32 log2_slot(__u64 v)
{
    __u32 r = 0, shift;
    if (!v)
        return 0;
    shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
    shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
    shift = (v > 0xff) << 3; v >>= shift; r |= shift;
    shift = (v > 0xf) << 2; v >>= shift; r |= shift;
    shift = (v > 0x3) << 1; v >>= shift; r |= shift;
    r |= (v >> 1);
    return r + 1;
}

/* `n` samples of `value` (a sampled queue depth stands for n commands). `atomic`: other writers may update h at the
 * same time (a shared map, or a per-CPU one that nested programs write too); without, the caller is the only writer
 * of h on this CPU (see rescue_hists). */
static __always_inline void hist_put_n(struct kvio_hist *h, __u32 slot, __u64 value, bool atomic, __u64 n)
{
    if (slot >= KVIO_HIST_SLOTS)
        slot = KVIO_HIST_SLOTS - 1;
    /* older verifiers (6.1) lose the clamp when the compiler indexes with a copy: mask the register used */
    barrier_var(slot);
    slot &= KVIO_HIST_SLOTS - 1;
    if (atomic) {
        __sync_fetch_and_add(&h->slots[slot], n);
        __sync_fetch_and_add(&h->sum, value * n);
    } else {
        h->slots[slot] += n;
        h->sum += value * n;
    }
}

static __always_inline void hist_put_as(struct kvio_hist *h, __u32 slot, __u64 value, bool atomic)
{
    hist_put_n(h, slot, value, atomic, 1);
}

static __always_inline void hist_put(struct kvio_hist *h, __u32 slot, __u64 value) { hist_put_as(h, slot, value, true); }

static __always_inline void dev_hist_add(__u32 dev, __u16 id, __u16 qid, __u64 value, bool linear, __u64 width)
{
    struct kvio_hist_key key = {.dev = dev, .id = id, .qid = qid};
    struct kvio_hist *h = bpf_map_lookup_elem(&dev_hists, &key);
    if (!h) {
        bpf_map_update_elem(&dev_hists, &key, &zero_hist, BPF_NOEXIST);
        h = bpf_map_lookup_elem(&dev_hists, &key);
        if (!h)
            return;
    }
    hist_put(h, linear ? (__u32)(value / (width ? width : 1)) : log2_slot(value), value);
}

static __always_inline void proc_hist_add(__u32 id, __u64 value)
{
    struct kvio_hist *h = bpf_map_lookup_elem(&proc_hists, &id);
    if (h)
        hist_put(h, log2_slot(value), value);
}

/* This CPU's histograms of the device in `slot`; NULL for a device without a slot (dev_hists then). `own`: the
 * set only the completion program writes (slot_hists), else rescue_hists. */
static __always_inline struct kvio_dev_hists *slot_hists_as(__u32 slot, bool own)
{
    if (slot >= KVIO_MAX_DEV_SLOTS)
        return 0;
    return bpf_map_lookup_elem(own ? (void *)&slot_hists : (void *)&rescue_hists, &slot);
}

static __always_inline struct kvio_dev_hists *slot_hists_of(__u32 slot) { return slot_hists_as(slot, false); }

/* `n` samples into histogram `id` of a device: its slot's per-CPU array entry `hs`, else the dev_hists hash (whose
 * devices sample nothing: n is 1 there). `own`: hs is slot_hists and the caller the completion program (no atomics). */
static __always_inline void cmd_hist_add_n(struct kvio_dev_hists *hs, __u32 dev, __u16 id, __u64 value, bool linear,
                                           __u64 width, bool own, __u64 n)
{
    if (!hs) {
        dev_hist_add(dev, id, 0, value, linear, width);
        return;
    }
    if (id >= KVIO_DEV_HISTS)
        return;
    hist_put_n(&hs->h[id], linear ? (__u32)(value / (width ? width : 1)) : log2_slot(value), value, !own, n);
}

static __always_inline void cmd_hist_add_as(struct kvio_dev_hists *hs, __u32 dev, __u16 id, __u64 value, bool linear,
                                            __u64 width, bool own)
{
    cmd_hist_add_n(hs, dev, id, value, linear, width, own, 1);
}

static __always_inline void cmd_hist_add(struct kvio_dev_hists *hs, __u32 dev, __u16 id, __u64 value, bool linear, __u64 width)
{
    cmd_hist_add_as(hs, dev, id, value, linear, width, false);
}

/* The issue and completion counters of the device in `slot`; NULL for a device without a slot. */
static __always_inline struct slot_depth *slot_depth_of(__u32 slot)
{
    return slot < KVIO_MAX_DEV_SLOTS ? bpf_map_lookup_elem(&slot_depths, &slot) : 0;
}

/* The in-flight count of a device without a slot (created in the hash on first use). */
static __always_inline __s64 *inflight_of(__u32 dev, bool create)
{
    __s64 *n = bpf_map_lookup_elem(&inflight, &dev);
    if (!n && create) {
        __s64 zero = 0;
        bpf_map_update_elem(&inflight, &dev, &zero, BPF_NOEXIST);
        n = bpf_map_lookup_elem(&inflight, &dev);
    }
    return n;
}

/* Event reservation: a zeroed record, or NULL with the drop counted (ring buffer full). */
#define EVENT_RESERVE(type)                                                    \
    ({                                                                         \
        type *__e = bpf_ringbuf_reserve(&events, sizeof(type), 0);             \
        if (__e)                                                               \
            __builtin_memset(__e, 0, sizeof(type));                            \
        else                                                                   \
            count(KVIO_CNT_RB_DROPS);                                          \
        __e;                                                                   \
    })

/* The collector is woken once a CPU has submitted wakeup_mask + 1 events since its last wakeup (a wakeup per
 * event costs more than the event; userspace sizes the mask so that all CPUs together wake it about every
 * 256 KiB). It also drains the buffer every 100 ms, so nothing waits longer than that. The per-CPU event count
 * decides: no bpf_ringbuf_query, whose read of the consumer position misses the cache while the collector drains. */
static __always_inline void event_submit(void *e)
{
    __u32 key = KVIO_CNT_EVENTS;
    __u64 *n = bpf_map_lookup_elem(&counters, &key);
    __u64 seq = n ? ++*n : 0; /* per-CPU: no atomics needed */
    bpf_ringbuf_submit(e, (seq & wakeup_mask) ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
}

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

/* Does the current task (tgid, and comm when -c is given: read by the caller) pass -p/-c/--cgroup? */
static __always_inline bool task_passes_as(__u32 tgid, const char *comm)
{
    if (filter_pid && !bpf_map_lookup_elem(&pid_filter, &tgid))
        return false;
    if (targ_ncomms && !comm_matches(comm) && !io_worker_of_matching_process())
        return false;
    if (targ_cgroup && bpf_get_current_cgroup_id() != targ_cgroup)
        return false;
    return true;
}

static __always_inline bool task_passes(void)
{
    __u64 comm[KVIO_COMM_LEN / 8] = {};
    if (targ_ncomms)
        current_comm_words(comm);
    return task_passes_as(bpf_get_current_pid_tgid() >> 32, (const char *)comm);
}

static __always_inline bool task_filter_active(void)
{
    return filter_pid || targ_ncomms || targ_cgroup;
}

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
    o->passes = task_passes_as(o->pid, o->comm);
}

static __always_inline bool current_is_kthread(void)
{
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    return BPF_CORE_READ(t, flags) & PF_KTHREAD;
}

/* Kernel dev_t of a whole disk; 0 for none. */
static __always_inline __u32 gendisk_dev(struct gendisk *disk)
{
    if (!disk)
        return 0;
    return KVIO_MKDEV(BPF_CORE_READ(disk, major), BPF_CORE_READ(disk, first_minor));
}

/* Kernels before 5.15 kept the disk in request->rq_disk. */
struct request___old {
    struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* `typed`: the caller is a tp_btf program, whose arguments are BTF-typed pointers: fields are read with plain
 * loads (the verifier turns them into fault-safe loads) instead of a bpf_probe_read_kernel call each, as raw_tp
 * programs must. A constant in each program: the other branch is compiled out. */
#define KREAD(typed, ptr, ...) ((typed) ? (ptr)->__VA_ARGS__ : BPF_CORE_READ(ptr, __VA_ARGS__))

static __always_inline __u32 gendisk_dev_as(struct gendisk *disk, bool typed)
{
    if (!disk)
        return 0;
    if (typed)
        return KVIO_MKDEV(disk->major, disk->first_minor);
    return gendisk_dev(disk);
}

static __always_inline __u32 rq_dev(struct request *rq, bool typed)
{
    struct gendisk *disk;
    if (bpf_core_field_exists(((struct request___old *)0)->rq_disk))
        disk = BPF_CORE_READ((struct request___old *)rq, rq_disk);
    else if (typed)
        disk = rq->q->disk;
    else
        disk = BPF_CORE_READ(rq, q, disk);
    return gendisk_dev_as(disk, typed);
}

static __always_inline __u32 rq_opf(struct request *rq, bool typed)
{
    __u32 f = typed ? rq->cmd_flags : BPF_CORE_READ(rq, cmd_flags);
    __u32 out = f & KVIO_OP_MASK;
    if (f & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC)))
        out |= KVIO_F_SYNC;
    if (f & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
        out |= KVIO_F_META;
    if (f & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)))
        out |= KVIO_F_FUA;
    if (f & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)))
        out |= KVIO_F_PREFLUSH;
    if (f & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_RAHEAD)))
        out |= KVIO_F_RAHEAD;
    return out;
}

/* ---------------------------------------------------------------- slot tables */

/* A BTF-typed pointer (tp_btf arguments and the fields read through them) as a number: the verifier allows only
 * adding to and subtracting from such a pointer, and the tables hash it. Stored in a map value and read back it is
 * a plain number (a program of root may store pointers in maps). One entry per program that converts: a program
 * never runs nested in itself, so nothing else writes its entry between the store and the load. */
enum { NUM_GETRQ, NUM_INSERT, NUM_ISSUE, NUM_COMPLETE, NUMS };
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, NUMS); __type(key, __u32); __type(value, __u64); } ptr_numbers SEC(".maps");

static __always_inline __u64 ptr_number(__u32 prog, const void *p)
{
    __u64 *v = bpf_map_lookup_elem(&ptr_numbers, &prog);
    if (!v)
        return 0;
    *v = (__u64)p;
    return *(volatile __u64 *)v;
}

/* Fibonacci hashing of a kernel pointer (Knuth, TAOCP vol. 3, 6.4): the high half of the product mixes every bit. */
static __always_inline __u32 ptr_hash(__u64 p)
{
    return (__u32)((p * 0x9E3779B97F4A7C15ULL) >> 32);
}

/* Open addressing over a slot table (rq_table, bio_table: arrays whose values start with the key word). `ptr`'s slot
 * is the first of its KVIO_SLOT_PROBES probes whose key, live bit aside, is ptr. A key is set when a pointer takes a
 * slot and stays when its life there ends (only another pointer taking the slot changes it), and a pointer takes
 * the first of its probes that is not live, so a never-used slot (key 0) ends the search. Returns the slot's key
 * word (live or not) and its index, or NULL. */
/* Probe i of a pointer whose hash is h: the slot's key word (its index in *idx), and the key it holds. */
static __always_inline __u64 *slot_probe(void *map, __u32 mask, __u32 h, int i, __u32 *idx, __u64 *key)
{
    *idx = (h + i) & mask;
    __u64 *k = bpf_map_lookup_elem(map, idx);
    if (k)
        *key = *(volatile __u64 *)k;
    return k;
}

static __always_inline __u64 *slot_find(void *map, __u32 mask, __u64 ptr, __u32 *idx)
{
    __u32 h = ptr_hash(ptr);
    for (int i = 0; i < KVIO_SLOT_PROBES; i++) {
        __u64 key;
        __u64 *k = slot_probe(map, mask, h, i, idx, &key);
        if (!k)
            return 0;
        if ((key & ~KVIO_SLOT_LIVE) == ptr)
            return k;
        if (!key)
            return 0;
    }
    return 0;
}

static __always_inline bool slot_live(const __u64 *k) { return k && (*(volatile const __u64 *)k & KVIO_SLOT_LIVE); }

/* Makes `ptr` the live user of a slot: `own` (its slot from slot_find, not live) unless another pointer took it
 * meanwhile, else the first of its probes that is not live. Taken with a compare-and-swap: another CPU may be
 * taking the same slot for another pointer; a live slot is only ever changed by its pointer's programs. NULL when
 * every probe is live: the caller spills. */
static __always_inline __u64 *slot_claim(void *map, __u32 mask, __u64 ptr, __u64 *own, __u32 *idx)
{
    if (own && __sync_bool_compare_and_swap(own, ptr, ptr | KVIO_SLOT_LIVE))
        return own;
    __u32 h = ptr_hash(ptr);
    for (int i = 0; i < KVIO_SLOT_PROBES; i++) {
        __u64 key;
        __u64 *k = slot_probe(map, mask, h, i, idx, &key);
        if (!k)
            return 0;
        if (!(key & KVIO_SLOT_LIVE) && __sync_bool_compare_and_swap(k, key, ptr | KVIO_SLOT_LIVE))
            return k;
    }
    return 0;
}

/* Ends ptr's life in its slot: the key stays (its next life finds the slot at the first probe), the live bit goes.
 * Everything the caller read of the slot was read before. */
static __always_inline void slot_release(__u64 *k, __u64 ptr)
{
#if defined(__TARGET_ARCH_x86)
    barrier(); /* x86 never moves a store before earlier loads: a plain store suffices */
    *(volatile __u64 *)k = ptr;
#else
    __sync_lock_test_and_set(k, ptr);
#endif
}

static __always_inline bool spill_any(__u32 which)
{
    __s64 *n = bpf_map_lookup_elem(&spill_live, &which);
    return n && *n > 0;
}

static __always_inline void spill_add(__u32 which, __s64 delta)
{
    __s64 *n = bpf_map_lookup_elem(&spill_live, &which);
    if (n)
        __sync_fetch_and_add(n, delta);
}

/* ---------------------------------------------------------------- request state */

/* Where a request's state is: its rq_table slot (with its rq_owners entry) or its rq_spill entry. */
struct rq_ref {
    __u64 *key;              /* the table slot's key word; NULL: spilled */
    struct rq_state *s;
    struct kvio_rq_owner *o; /* NULL unless need_owner_detail */
};

static __always_inline void rq_ref_slot(struct rq_ref *r, __u64 *k, __u32 idx)
{
    r->key = k;
    r->s = (struct rq_state *)k;
    r->o = need_owner_detail ? bpf_map_lookup_elem(&rq_owners, &idx) : 0;
}

static __always_inline bool rq_ref_spilled(struct rq_ref *r, __u64 rq)
{
    struct kvio_rq_spilled *v = bpf_map_lookup_elem(&rq_spill, &rq);
    if (!v)
        return false;
    r->key = 0;
    r->s = &v->s;
    r->o = &v->o;
    return true;
}

/* The live state of request `rq` (this life's or an earlier one's: the caller compares gen), if any. */
static __always_inline bool rq_lookup(__u64 rq, struct rq_ref *r)
{
    __u32 idx = 0;
    __u64 *k = slot_find(&rq_table, rq_slot_mask, rq, &idx);
    if (slot_live(k)) {
        rq_ref_slot(r, k, idx);
        return true;
    }
    return spill_any(SPILL_RQ) && rq_ref_spilled(r, rq);
}

static const struct kvio_rq_spilled zero_spilled;

/* The state of `rq` at insert or issue: its live state (*fresh false), else a slot taken now or, when its probes
 * are all in flight, a new rq_spill entry (*fresh true: nothing in it is valid yet). False: no room at all. */
static __always_inline bool rq_take(__u64 rq, struct rq_ref *r, bool *fresh)
{
    __u32 idx = 0;
    __u64 *k = slot_find(&rq_table, rq_slot_mask, rq, &idx);
    *fresh = false;
    if (slot_live(k)) {
        rq_ref_slot(r, k, idx);
        return true;
    }
    if (spill_any(SPILL_RQ) && rq_ref_spilled(r, rq))
        return true;
    *fresh = true;
    k = slot_claim(&rq_table, rq_slot_mask, rq, k, &idx);
    if (k) {
        rq_ref_slot(r, k, idx);
        return true;
    }
    count(KVIO_CNT_RQ_SPILLS);
    if (bpf_map_update_elem(&rq_spill, &rq, &zero_spilled, BPF_NOEXIST)) {
        count(KVIO_CNT_MAP_FULL);
        return false;
    }
    spill_add(SPILL_RQ, 1);
    return rq_ref_spilled(r, rq);
}

/* Ends the life of rq's state (completed, merged, or found dead). */
static __always_inline void rq_release(struct rq_ref *r, __u64 rq)
{
    if (r->key) {
        slot_release(r->key, rq);
        return;
    }
    if (!bpf_map_delete_elem(&rq_spill, &rq))
        spill_add(SPILL_RQ, -1);
}

/* ---------------------------------------------------------------- owners */

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
 * passed the task filters; its details go to `o` when given (events, --per-*). */
static __always_inline bool resolve_owner(struct request *rq, struct kvio_rq_owner *o, bool *passes, bool allow_current, bool typed,
                                          __u32 prog)
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

/* ---------------------------------------------------------------- block */

/* Kernels before 5.12 kept the disk in bio->bi_disk. */
struct bio___old {
    struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

static __always_inline __u32 bio_dev(struct bio *bio, bool typed)
{
    struct gendisk *disk;
    if (bpf_core_field_exists(((struct bio___old *)0)->bi_disk))
        disk = BPF_CORE_READ((struct bio___old *)bio, bi_disk);
    else if (typed)
        disk = bio->bi_bdev->bd_disk;
    else
        disk = BPF_CORE_READ(bio, bi_bdev, bd_disk);
    return gendisk_dev_as(disk, typed);
}

static __always_inline void bio_owner_fill(struct kvio_bio_owner *b)
{
    current_owner(&b->owner);
    b->cgroup = group_by == KVIO_GROUP_CGROUP ? bpf_get_current_cgroup_id() : 0;
}

/* Loaded only when owners are needed (events or a task filter): who allocates a request for this bio. A live slot
 * of the bio itself is an owner of an earlier life of it that no request took (merged away): overwritten. */
static __always_inline int on_getrq(struct bio *bio, bool typed)
{
    if (!bio || (targ_ndevs && !dev_passes(bio_dev(bio, typed))))
        return 0;
    __u64 key = typed ? ptr_number(NUM_GETRQ, bio) : (__u64)bio;
    if (!key)
        return 0;
    __u32 idx = 0;
    __u64 *k = slot_find(&bio_table, bio_slot_mask, key, &idx);
    if (!slot_live(k))
        k = slot_claim(&bio_table, bio_slot_mask, key, k, &idx);
    if (k) {
        bio_owner_fill((struct kvio_bio_owner *)k);
        return 0;
    }
    count(KVIO_CNT_OWNER_SPILLS);
    struct kvio_bio_owner b = {.key = key | KVIO_SLOT_LIVE};
    bio_owner_fill(&b);
    if (!bpf_map_update_elem(&bio_spill, &key, &b, BPF_NOEXIST))
        spill_add(SPILL_BIO, 1);
    else
        bpf_map_update_elem(&bio_spill, &key, &b, BPF_ANY);
    return 0;
}

/* Commands in flight on a device now (issue_depth's counts), for the NVMe setup program. */
static __always_inline __s64 inflight_now(__u32 slot, __u32 dev)
{
    if (slot < KVIO_MAX_DEV_SLOTS) {
        struct slot_depth *d = slot_depth_of(slot);
        if (!d)
            return 0;
        /* issued first: a completion between the reads only lowers the difference */
        __s64 n = *(volatile __s64 *)&d->issued;
        n -= *(volatile __s64 *)&d->completed;
        return n > 0 ? n : 0;
    }
    __s64 *n = inflight_of(dev, false);
    return n ? *n : 0;
}

/* A command issue_depth counted leaves the device's in-flight count (its completion, requeue or loss). */
static __always_inline void inflight_dec(__u32 slot, __u32 dev)
{
    if (slot < KVIO_MAX_DEV_SLOTS) {
        struct slot_depth *d = slot_depth_of(slot);
        if (d)
            __sync_fetch_and_add(&d->completed, 1);
        return;
    }
    __s64 *n = inflight_of(dev, false);
    if (n && *n > 0)
        __sync_fetch_and_add(n, -1);
}

/* Counts an issue on the device and returns its queue depth (this command included, >= 1) with *weight, the
 * commands that depth stands for in the QD histograms: 1, or for a device with a slot qd_sample_every when this
 * issue is sampled and 0 (depth 0) when not. The issue number is free (the fetch-and-add's result); only a sampled
 * issue reads the completing CPU's counter. Sampled issue numbers i: frac(i * golden ratio) < 1 / qd_sample_every,
 * one in qd_sample_every on average over any stretch of issues, with no fixed phase a periodic workload (batches of
 * qd_sample_every submissions) could lock onto. A completion counted between the fetch-and-add and the read lowers
 * the depth (it is clamped to 1). */
static __always_inline __u32 issue_depth(__u32 slot, __u32 dev, __u32 *weight)
{
    *weight = 1;
    if (slot < KVIO_MAX_DEV_SLOTS) {
        struct slot_depth *d = slot_depth_of(slot);
        if (!d)
            return 1;
        __s64 i = __sync_fetch_and_add(&d->issued, 1);
        if (qd_sample_every > 1) {
            if ((__u64)((__u32)i * 0x9E3779B9u) >= (1ULL << 32) / qd_sample_every) {
                *weight = 0;
                return 0;
            }
            *weight = qd_sample_every;
        }
        __s64 n = i + 1 - *(volatile __s64 *)&d->completed;
        return n > 1 ? (__u32)n : 1;
    }
    __s64 *n = inflight_of(dev, true);
    return n ? (__u32)__sync_fetch_and_add(n, 1) + 1 : 1;
}

static __always_inline __u64 rq_generation(struct request *rq, bool typed)
{
    if (bpf_core_field_exists(rq->start_time_ns))
        return typed ? rq->start_time_ns : BPF_CORE_READ(rq, start_time_ns);
    return 0;
}

static __always_inline void account_cmd(const struct rq_state *st, const struct kvio_rq_owner *o, __u64 now, int error,
                                        bool lost, bool own);

/* --per-process / --per-cgroup: one finished read or write into its submitter's group. */
static __always_inline void group_add(const struct rq_state *st, const struct kvio_rq_owner *o, __u32 op, __u64 d2c)
{
    if (!st->has_owner || !o)
        return;
    struct kvio_group_key key = {.id = group_by == KVIO_GROUP_PROCESS ? o->owner.pid : o->cgroup,
                                 .dev = st->dev, .op = op};
    struct kvio_group_val *g = bpf_map_lookup_elem(&group_stats, &key);
    if (!g) {
        bool created = bpf_map_update_elem(&group_stats, &key, &zero_group, BPF_NOEXIST) == 0;
        g = bpf_map_lookup_elem(&group_stats, &key);
        if (!g)
            return;
        if (created)
            __builtin_memcpy(g->comm, o->owner.comm, sizeof(g->comm));
    }
    __sync_fetch_and_add(&g->cmds, 1);
    __sync_fetch_and_add(&g->bytes, st->bytes);
    hist_put(&g->d2c, log2_slot(d2c), d2c);
}

/* A request's in-flight state as first seen (at insert, or at issue without insert): device, slot, owner and
 * the filter's verdict, decided here once for the request. */
static __always_inline void rq_state_init(struct rq_ref *r, struct request *rq, __u32 dev, __u32 slot, __u64 gen,
                                          bool at_insert, bool typed)
{
    struct rq_state *s = r->s;
    bool passes;
    s->gen = gen;
    s->ts_insert = 0;
    s->ts_issue = 0;
    s->sector = 0;
    s->dev = dev;
    s->opf = 0;
    s->bytes = 0;
    s->qd = 0;
    s->qd_weight = 0;
    s->issued = 0;
    s->slot = slot;
    s->has_owner = resolve_owner(rq, r->o, &passes, at_insert, typed, at_insert ? NUM_INSERT : NUM_ISSUE);
    s->ignored = task_filter_active() && !(s->has_owner && passes);
    if (!s->has_owner && task_filter_active())
        count(KVIO_CNT_NO_OWNER);
}

/* The live state of rq left from an earlier life of the request (gen differs). On some kernels no BPF program runs
 * for a completion in certain softirq contexts (tracefs still records it, recursion_misses stays 0): an issued,
 * traced leftover is such a command. Report it without a completion. */
static __always_inline void rq_state_stale(const struct rq_state *s, const struct kvio_rq_owner *o)
{
    if (s->issued && !s->ignored) {
        inflight_dec(s->slot, s->dev);
        account_cmd(s, o, 0, 0, true, false);
    } else {
        count(KVIO_CNT_STALE);
    }
}

/* What issue records of a traced request: time, extent, op, and its queue depth (once: a requeued request is
 * issued again but not counted twice). */
static __always_inline void issue_fill(struct rq_state *s, struct request *rq, bool typed)
{
    s->ts_issue = bpf_ktime_get_ns();
    s->sector = KREAD(typed, rq, __sector);
    s->bytes = KREAD(typed, rq, __data_len);
    s->opf = rq_opf(rq, typed);
    if (!s->issued) {
        s->issued = 1;
        s->qd = issue_depth(s->slot, s->dev, &s->qd_weight);
    }
}

/* Insert or issue of rq: the state it has, else a slot taken for it (the usual path: a direct issue without
 * insert). Requests of untraced devices get no state at all. */
static __always_inline int on_rq_seen(struct request *rq, bool typed, bool at_insert)
{
    __u32 dev = rq_dev(rq, typed), slot;
    if (!dev_traced(dev, &slot))
        return 0;
    __u64 key = typed ? ptr_number(at_insert ? NUM_INSERT : NUM_ISSUE, rq) : (__u64)rq;
    __u64 gen = rq_generation(rq, typed);
    struct rq_ref r = {};
    bool fresh;
    if (!key)
        return 0;
    if (!rq_take(key, &r, &fresh))
        return 0;
    struct rq_state *s = r.s;
    if (!fresh && s->gen == gen) {
        if (s->ignored)
            return 0;
        if (at_insert)
            s->ts_insert = bpf_ktime_get_ns();
        else
            issue_fill(s, rq, typed);
        return 0;
    }
    if (!fresh)
        rq_state_stale(s, r.o);
    rq_state_init(&r, rq, dev, slot, gen, at_insert, typed);
    if (s->ignored)
        return 0;
    if (at_insert)
        s->ts_insert = bpf_ktime_get_ns();
    else
        issue_fill(s, rq, typed);
    return 0;
}

static __always_inline int on_insert(struct request *rq, bool typed) { return on_rq_seen(rq, typed, true); }
static __always_inline int on_issue(struct request *rq, bool typed) { return on_rq_seen(rq, typed, false); }

/* Histograms and the event of one finished command. lost: its completion was never seen (the state
 * outlived the request), so there is no D2C and no completion time; size, QD and LBA still count.
 * own: the caller is the completion program, the only writer of slot_hists (no atomics). */
static __always_inline void account_cmd(const struct rq_state *st, const struct kvio_rq_owner *o, __u64 now, int error,
                                        bool lost, bool own)
{
    __u32 op = st->opf & KVIO_OP_MASK;
    bool is_read = op == KVIO_OP_READ, is_write = op == KVIO_OP_WRITE;
    struct kvio_dev_hists *hs = slot_hists_as(st->slot, own);
    if (lost) {
        count(KVIO_CNT_LOST_COMPLETE);
    } else if (now < st->ts_issue || (st->ts_insert && st->ts_issue < st->ts_insert)) {
        count(KVIO_CNT_NEGATIVE_DELTA);
    } else if (is_read || is_write) {
        cmd_hist_add_as(hs, st->dev, is_read ? KVIO_H_D2C_READ : KVIO_H_D2C_WRITE, now - st->ts_issue, false, 0, own);
        if (group_by)
            group_add(st, o, op, now - st->ts_issue);
        if (st->ts_insert)
            cmd_hist_add_as(hs, st->dev, is_read ? KVIO_H_Q2D_READ : KVIO_H_Q2D_WRITE, st->ts_issue - st->ts_insert, false, 0, own);
    }
    if (is_read || is_write) {
        cmd_hist_add_as(hs, st->dev, is_read ? KVIO_H_BSSPLIT_READ : KVIO_H_BSSPLIT_WRITE, st->bytes, false, 0, own);
        if (st->qd_weight)
            cmd_hist_add_n(hs, st->dev, is_read ? KVIO_H_QD_READ : KVIO_H_QD_WRITE, st->qd, true, 1, own, st->qd_weight);
        cmd_hist_add_as(hs, st->dev, is_read ? KVIO_H_LBA_READ : KVIO_H_LBA_WRITE, st->sector * 512, true, lba_bucket_bytes, own);
    } else {
        cmd_hist_add_as(hs, st->dev, KVIO_H_OTHER_CMDS, st->bytes, false, 0, own);
        if (op == KVIO_OP_FLUSH)
            cmd_hist_add_as(hs, st->dev, KVIO_H_FLUSH_CMDS, st->bytes, false, 0, own);
        else if (op == KVIO_OP_DISCARD || op == KVIO_OP_SECURE_ERASE)
            cmd_hist_add_as(hs, st->dev, KVIO_H_DISCARD_CMDS, st->bytes, false, 0, own);
    }

    if (!emit_events)
        return;
    struct kvio_cmd_event *e = EVENT_RESERVE(struct kvio_cmd_event);
    if (!e)
        return;
    e->type = KVIO_EV_CMD;
    e->src = KVIO_SRC_BLOCK;
    e->dev = st->dev;
    e->opf = st->opf;
    e->bytes = st->bytes;
    e->sector = st->sector;
    e->ts_insert = st->ts_insert;
    e->has_insert = st->ts_insert != 0;
    e->ts_issue = st->ts_issue;
    e->ts_complete = lost ? 0 : now;
    e->complete_lost = lost;
    e->qd = st->qd;
    e->error = error;
    if (o) {
        e->owner = o->owner;
        e->has_user_data = o->owner.user_data != 0;
    }
    event_submit(e);
}

static __always_inline int on_complete(struct request *rq, int error, unsigned int nr_bytes, bool typed, bool own)
{
    /* requests of other devices get no state at all: no lookup for them (with -d the device is known cheaper) */
    if (targ_ndevs && !dev_passes(rq_dev(rq, typed)))
        return 0;
    __u64 key = typed ? ptr_number(NUM_COMPLETE, rq) : (__u64)rq;
    struct rq_ref r = {};
    if (!key || !rq_lookup(key, &r)) {
        count(KVIO_CNT_UNMATCHED_COMPLETE);
        return 0;
    }
    struct rq_state *s = r.s;
    if (s->gen != rq_generation(rq, typed)) {
        rq_state_stale(s, r.o); /* an earlier life's: this life's issue was not seen */
        rq_release(&r, key);
        count(KVIO_CNT_UNMATCHED_COMPLETE);
        return 0;
    }
    if (s->ignored || !s->issued) {
        if (!s->issued && !s->ignored)
            count(KVIO_CNT_UNMATCHED_COMPLETE);
        rq_release(&r, key);
        return 0;
    }
    /* the tracepoint runs before the request's remaining length drops by nr_bytes */
    if (nr_bytes && nr_bytes < KREAD(typed, rq, __data_len)) {
        count(KVIO_CNT_PARTIAL_COMPLETE); /* partial completion: the request goes on */
        return 0;
    }
    __u64 now = bpf_ktime_get_ns();
    inflight_dec(s->slot, s->dev);
    account_cmd(s, r.o, now, error, false, own);
    rq_release(&r, key);
    return 0;
}

/* tp_btf: args are typed; raw_tp: the same u64 args, read through BPF_CORE_READ. */
SEC("tp_btf/block_getrq")
int BPF_PROG(block_getrq_btf, struct bio *bio) { return on_getrq(bio, true); }
SEC("raw_tp/block_getrq")
int BPF_PROG(block_getrq_raw, struct bio *bio) { return on_getrq(bio, false); }

SEC("tp_btf/block_rq_insert")
int block_rq_insert_btf(u64 *ctx) { return on_insert((struct request *)ctx[rq_has_queue_arg ? 1 : 0], true); }
SEC("raw_tp/block_rq_insert")
int block_rq_insert_raw(u64 *ctx) { return on_insert((struct request *)ctx[rq_has_queue_arg ? 1 : 0], false); }

/* The kernel skips a BPF program that fires again on a CPU where it is already running (an interrupt completing
 * one request while the program handles another; bpf_prog_info.recursion_misses counts them). Issue and complete
 * have a backup program, the raw_tp twin of the tp_btf one: the primary marks the request it handles on this CPU,
 * the backup handles what the primary did not see. A backup costs a program run per request, and nested runs are
 * rare (none in 2.6 M commands of fio QD 32 on a loop device here), so userspace attaches a backup only once its
 * primary has missed a run (kernel.recursion_misses > 0); until then a miss is a counted lost_complete or
 * unmatched_complete. */
const volatile bool backup_programs = false;
const volatile __u32 test_skip_every = 0; /* tests: each primary skips every Nth run, as if the kernel had */
enum { HOOK_ISSUE, HOOK_COMPLETE, HOOKS };
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, HOOKS); __type(key, __u32); __type(value, __u64); } primary_seen SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, HOOKS); __type(key, __u32); __type(value, __u64); } primary_runs SEC(".maps");

/* The primary's start: false when the test hook has it skip this run. */
static __always_inline bool primary_mark(__u32 hook, __u64 rq)
{
    if (test_skip_every) {
        __u64 *n = bpf_map_lookup_elem(&primary_runs, &hook);
        if (n && ++*n % test_skip_every == 0)
            return false;
    }
    __u64 *seen = bpf_map_lookup_elem(&primary_seen, &hook);
    if (seen)
        *seen = rq;
    return true;
}

/* The backup runs after the primary in the same tracepoint call: the primary handled rq if it marked it. The
 * mark is cleared, so a later run nested in the next primary before that one marked cannot take rq's old mark
 * (the same request again) for a handled run. */
static __always_inline bool primary_missed(__u32 hook, __u64 rq)
{
    __u64 *seen = bpf_map_lookup_elem(&primary_seen, &hook);
    if (!seen)
        return false;
    if (*seen == rq) {
        *seen = 0;
        return false;
    }
    count(KVIO_CNT_RESCUED);
    return true;
}

SEC("tp_btf/block_rq_issue")
int block_rq_issue_btf(u64 *ctx)
{
    struct request *rq = (struct request *)ctx[rq_has_queue_arg ? 1 : 0];
    if (!primary_mark(HOOK_ISSUE, (__u64)rq))
        return 0;
    return on_issue(rq, true);
}
SEC("raw_tp/block_rq_issue")
int block_rq_issue_raw(u64 *ctx)
{
    struct request *rq = (struct request *)ctx[rq_has_queue_arg ? 1 : 0];
    if (backup_programs && !primary_missed(HOOK_ISSUE, (__u64)rq))
        return 0;
    return on_issue(rq, false);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete_btf, struct request *rq, int error, unsigned int nr_bytes)
{
    if (!primary_mark(HOOK_COMPLETE, (__u64)rq))
        return 0;
    return on_complete(rq, error, nr_bytes, true, true);
}
SEC("raw_tp/block_rq_complete")
int BPF_PROG(block_rq_complete_raw, struct request *rq, int error, unsigned int nr_bytes)
{
    if (backup_programs && !primary_missed(HOOK_COMPLETE, (__u64)rq))
        return 0;
    /* the only completion program where BTF lacks the tracepoint; a backup may run nested in the primary */
    return on_complete(rq, error, nr_bytes, false, !backup_programs);
}

/* A requeued request will be issued again: it leaves the device's in-flight count until then. */
SEC("raw_tp/block_rq_requeue")
int block_rq_requeue_raw(u64 *ctx)
{
    __u64 key = ctx[rq_has_queue_arg ? 1 : 0];
    struct rq_ref r = {};
    if (rq_lookup(key, &r) && r.s->issued && !r.s->ignored) {
        r.s->issued = 0;
        inflight_dec(r.s->slot, r.s->dev);
    }
    return 0;
}

/* A request merged into another is freed without completing (a live state of an earlier life is reported). */
SEC("raw_tp/block_rq_merge")
int block_rq_merge_raw(u64 *ctx)
{
    __u64 key = ctx[rq_has_queue_arg ? 1 : 0];
    struct rq_ref r = {};
    if (!rq_lookup(key, &r))
        return 0;
    if (r.s->gen != rq_generation((struct request *)key, false))
        rq_state_stale(r.s, r.o);
    rq_release(&r, key);
    return 0;
}

/* ---------------------------------------------------------------- io_uring */

/* The submission of one SQE: its user_data is the current thread's until the io_uring_enter it runs in returns
 * (end_user_data; an SQPOLL thread keeps the last one). The block requests it allocates take it (block_getrq). */
static __always_inline void remember_user_data(__u64 req, __u64 ud)
{
    if (need_user_data) {
        if (task_storage) {
            struct thread_io *t = current_thread_io(true);
            if (t)
                t->user_data = ud;
        } else {
            __u32 tid = (__u32)bpf_get_current_pid_tgid();
            bpf_map_update_elem(&cur_udata, &tid, &ud, BPF_ANY);
        }
    }
    if (!uring_owner_by_req)
        return;
    struct kvio_owner o = {};
    current_owner(&o);
    o.user_data = ud;
    bpf_map_update_elem(&uring_req_owner, &req, &o, BPF_ANY);
}

/* io_uring_enter returned: the submissions it ran are over. */
static __always_inline void end_user_data(void)
{
    if (task_storage) {
        struct thread_io *t = current_thread_io(false);
        if (t)
            t->user_data = 0;
        return;
    }
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    bpf_map_delete_elem(&cur_udata, &tid);
}

SEC("tp/io_uring/io_uring_submit_req")
int io_uring_submit_req(struct trace_event_raw_io_uring_submit_req *ctx)
{
    remember_user_data((__u64)ctx->req, ctx->user_data);
    return 0;
}

/* Before 6.4 the same event was io_uring_submit_sqe (ctx, req, user_data, ...). */
struct trace_event_raw_io_uring_submit_sqe___kvio {
    void *req;
    __u64 user_data;
} __attribute__((preserve_access_index));

SEC("tp/io_uring/io_uring_submit_sqe")
int io_uring_submit_sqe(struct trace_event_raw_io_uring_submit_sqe___kvio *ctx)
{
    remember_user_data((__u64)ctx->req, ctx->user_data);
    return 0;
}

/* tp_btf twins, where BTF gives the tracepoint the io_kiocb as its first argument (6.4+ io_uring_submit_req(req);
 * 6.0-6.3 io_uring_submit_sqe(req, force_nonblock)): the program gets the arguments as they are, instead of a
 * trace record the kernel fills first (the tp/ programs' fields, an opcode name string among them). */
static __always_inline __u64 kiocb_user_data(struct io_kiocb *req)
{
    return req->cqe.user_data;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(io_uring_submit_req_btf, struct io_kiocb *req)
{
    remember_user_data((__u64)req, kiocb_user_data(req));
    return 0;
}

SEC("tp_btf/io_uring_submit_sqe")
int BPF_PROG(io_uring_submit_sqe_btf, struct io_kiocb *req)
{
    remember_user_data((__u64)req, kiocb_user_data(req));
    return 0;
}

SEC("tp/io_uring/io_uring_complete")
int io_uring_complete(struct trace_event_raw_io_uring_complete *ctx)
{
    __u64 req = (__u64)ctx->req;
    bpf_map_delete_elem(&uring_req_owner, &req);
    return 0;
}

/* ---------------------------------------------------------------- NVMe */

/* struct nvme_request is the blk-mq PDU right after struct request (drivers/nvme/host/nvme.h). */
struct nvme_request___kvio {
    void *cmd;
    __u64 result;
    __u8 genctr;
    __u8 retries;
    __u8 flags;
    __u16 status;
} __attribute__((preserve_access_index));

/* NVMe submission queue entry, NVMe base spec 1.4 figure 105: fixed wire layout. */
struct kvio_nvme_sqe {
    __u8 opcode, flags;
    __u16 cid;
    __u32 nsid;
    __u32 cdw2, cdw3;
    __u64 metadata;
    __u64 prp1, prp2;
    __u32 cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};

SEC("raw_tp/nvme_setup_cmd")
int BPF_PROG(nvme_setup_cmd, struct request *rq, void *cmd)
{
    __u64 key = (__u64)rq;
    struct nvme_state st = {};
    __u32 slot;
    st.dev = rq_dev(rq, false);
    st.ignored = !dev_traced(st.dev, &slot);
    st.slot = slot;
    __u32 op = BPF_CORE_READ(rq, cmd_flags) & KVIO_OP_MASK;
    bool passthrough = op == KVIO_OP_DRV_IN || op == KVIO_OP_DRV_OUT;
    if (!st.ignored) {
        struct rq_ref br = {};
        struct rq_state *bs = rq_lookup(key, &br) ? br.s : 0;
        struct kvio_owner *uo = 0;
        if (passthrough) {
            /* io_uring passthrough: end_io_data is the io_uring_cmd, the first member of its io_kiocb */
            __u64 ioucmd = (__u64)BPF_CORE_READ(rq, end_io_data);
            uo = ioucmd ? bpf_map_lookup_elem(&uring_req_owner, &ioucmd) : 0;
        }
        if (uo) {
            st.owner = *uo;
            st.has_owner = 1;
        } else if (bs && bs->has_owner) {
            if (br.o)
                st.owner = br.o->owner;
            st.owner.passes = !bs->ignored;
            st.has_owner = 1;
        } else {
            /* ioctl passthrough runs in its caller; block I/O relies on block_getrq */
            struct kvio_rq_owner ro = {};
            bool passes;
            st.has_owner = resolve_owner(rq, &ro, &passes, passthrough, false, 0);
            st.owner = ro.owner;
            st.owner.passes = passes;
        }
        st.ignored = !owner_passes(&st.owner, st.has_owner);
        if (!st.has_owner && task_filter_active())
            count(KVIO_CNT_NO_OWNER);
    }
    if (!st.ignored) {
        struct kvio_nvme_sqe sqe = {};
        bpf_probe_read_kernel(&sqe, sizeof(sqe), cmd);
        st.opcode = sqe.opcode;
        st.cid = sqe.cid;
        st.nsid = sqe.nsid;
        if (sqe.opcode == 0x01 || sqe.opcode == 0x02 || sqe.opcode == 0x08) { /* write, read, write zeroes */
            st.slba = ((__u64)sqe.cdw11 << 32) | sqe.cdw10;
            st.nlb = (sqe.cdw12 & 0xffff) + 1;
        }
        /* I/O queues are numbered from 1; the admin queue (no namespace) is 0 */
        if (BPF_CORE_READ(rq, q, queuedata))
            st.qid = BPF_CORE_READ(rq, mq_hctx, queue_num) + 1;
        st.ts_setup = bpf_ktime_get_ns();
        /* the block issue of this request comes right after setup: count it in */
        st.qd = (__u32)inflight_now(st.slot, st.dev) + 1;
    }
    if (bpf_map_update_elem(&nvme_starts, &key, &st, BPF_ANY))
        count(KVIO_CNT_MAP_FULL);
    return 0;
}

SEC("raw_tp/nvme_complete_rq")
int BPF_PROG(nvme_complete_rq, struct request *rq)
{
    __u64 key = (__u64)rq;
    struct nvme_state *s = bpf_map_lookup_elem(&nvme_starts, &key);
    if (!s) {
        count(KVIO_CNT_UNMATCHED_COMPLETE);
        return 0;
    }
    struct nvme_state st = *s;
    bpf_map_delete_elem(&nvme_starts, &key);
    if (st.ignored)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    if (now < st.ts_setup) {
        count(KVIO_CNT_NEGATIVE_DELTA);
        return 0;
    }
    __u64 d2c = now - st.ts_setup;
    if (st.opcode == 0x02 || st.opcode == 0x01)
        cmd_hist_add(slot_hists_of(st.slot), st.dev, st.opcode == 0x02 ? KVIO_H_NVME_D2C_READ : KVIO_H_NVME_D2C_WRITE, d2c, false, 0);
    dev_hist_add(st.dev, KVIO_H_NVME_D2C_QUEUE, st.qid, d2c, false, 0);
    if (!emit_events)
        return 0;
    struct kvio_cmd_event *e = EVENT_RESERVE(struct kvio_cmd_event);
    if (!e)
        return 0;
    struct nvme_request___kvio *nr = (void *)rq + bpf_core_type_size(struct request);
    e->type = KVIO_EV_CMD;
    e->src = KVIO_SRC_NVME;
    e->dev = st.dev;
    e->opf = rq_opf(rq, false);
    e->sector = st.slba; /* userspace converts LBAs to 512-byte sectors */
    e->ts_issue = st.ts_setup;
    e->ts_complete = now;
    e->qd = st.qd;
    e->error = BPF_CORE_READ(nr, status);
    e->owner = st.owner;
    e->has_user_data = st.owner.user_data != 0;
    e->qid = st.qid;
    e->cid = st.cid;
    e->nsid = st.nsid;
    e->opcode = st.opcode;
    e->nlb = st.nlb;
    e->slba = st.slba;
    event_submit(e);
    return 0;
}

/* ---------------------------------------------------------------- syscalls */

/* Is fd storage of the current task: a regular file or block device, and with -d one on a traced device (a
 * block device node: its i_rdev; a file: its filesystem's s_dev), so ld.so's and libc's reads of the root
 * filesystem, pipes, sockets and ttys do not count. targ_storage: the traced disks, their partitions and the
 * devices stacked on them (filled by userspace from sysfs). */
static __always_inline bool fd_is_storage(int fd, bool typed)
{
    if (fd < 0)
        return false;
    /* tp_btf: the task's files and fd table with plain loads; from the fd array on (a pointer the verifier gives
     * no type) every read is a probe read, as in raw_tp */
    struct file **fdarr;
    unsigned int max;
    if (typed) {
        struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
        fdarr = fdt->fd;
        max = fdt->max_fds;
    } else {
        struct task_struct *t = (struct task_struct *)bpf_get_current_task();
        struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
        fdarr = BPF_CORE_READ(fdt, fd);
        max = BPF_CORE_READ(fdt, max_fds);
    }
    if (!fdarr || (unsigned int)fd >= max)
        return false;
    struct file *f = 0;
    bpf_probe_read_kernel(&f, sizeof(f), &fdarr[fd]);
    if (!f)
        return false;
    struct inode *inode = BPF_CORE_READ(f, f_inode);
    unsigned short fmt = BPF_CORE_READ(inode, i_mode) & S_IFMT;
    if (fmt != S_IFREG && fmt != S_IFBLK)
        return false;
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

/* Syscall number of this architecture (<sys/syscall.h>, filled by userspace) -> enum kvio_syscall. */
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, KVIO_MAX_SYSCALL_NR); __type(key, __u32); __type(value, __u8); } sys_nr_map SEC(".maps");

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

/* A traced syscall's entry: args a0..a3 as the syscall got them; `typed`: a tp_btf program. io_uring_enter needs
 * nothing here: its exit ends the SQE user_data (sys_exit_filtered). */
static __always_inline int on_sys_enter(__u32 nr, __u64 a0, __u64 a1, __u64 a2, __u64 a3, bool typed)
{
    if (nr >= KVIO_SYSCALLS || nr == KVIO_SYS_IO_URING_ENTER)
        return 0;
    if (!task_passes())
        return 0;
    int fd = (int)a0;
    if (!fd_is_storage(fd, typed))
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64 now = bpf_ktime_get_ns();
    struct sys_state st = {.ts = now, .fd = fd, .nr = nr};
    if (nr == KVIO_SYS_FADVISE64) {
        st.offset = a1;
        st.count = a2;
    } else if (nr == KVIO_SYS_PREAD64 || nr == KVIO_SYS_PWRITE64 || nr == KVIO_SYS_PREADV ||
               nr == KVIO_SYS_PWRITEV || nr == KVIO_SYS_PREADV2 || nr == KVIO_SYS_PWRITEV2) {
        st.count = a2;
        st.offset = a3;
    } else if (nr != KVIO_SYS_FSYNC && nr != KVIO_SYS_FDATASYNC) {
        st.count = a2;
    }
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
    if (task_storage)
        t->sys = st;
    else if (bpf_map_update_elem(&sys_starts, &tid, &st, BPF_ANY))
        count(KVIO_CNT_MAP_FULL);
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
    }
    if (!emit_syscalls)
        return 0;
    struct kvio_syscall_event *e = EVENT_RESERVE(struct kvio_syscall_event);
    if (!e)
        return 0;
    e->type = KVIO_EV_SYSCALL;
    e->nr = nr;
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

/* read, write: (fd, buf, count); readv, writev: (fd, vec, vlen) */
SEC("tp")
int sys_enter_3args(struct kvio_sys_enter_rec *ctx)
{
    return on_sys_enter(syscall_kind(ctx->nr), ctx->args[0], 0, ctx->args[2], 0, true);
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

/* ---------------------------------------------------------------- process tree */

SEC("tp/sched/sched_process_fork")
int sched_process_fork(struct trace_event_raw_sched_process_fork *ctx)
{
    if (!follow_forks)
        return 0;
    __u32 parent = ctx->parent_pid, child = ctx->child_pid;
    __u8 one = 1;
    if (bpf_map_lookup_elem(&pid_filter, &parent))
        bpf_map_update_elem(&pid_filter, &child, &one, BPF_ANY);
    return 0;
}
