/* rq_state.bpf.h — the in-flight state of block requests (struct kvio_rq_state: a rq_table slot with its rq_owners
 * entry, or a rq_spill entry) and each device's in-flight count (slot_depths, or the inflight hash). */
#ifndef KVIO_RQ_STATE_BPF_H
#define KVIO_RQ_STATE_BPF_H

#include "bpf/slot_table.bpf.h"

#define rq_state kvio_rq_state

/* Where a request's state is: its rq_table slot (with its rq_owners entry) or its rq_spill entry. */
struct rq_ref {
    __u64 *key; /* the table slot's key word; NULL: spilled */
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
    __u64 *k = slot_find_excl(&rq_table, rq_slot_mask, rq, &idx);
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
    __u64 *k = slot_find_excl(&rq_table, rq_slot_mask, rq, &idx);
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

/* ---------------------------------------------------------------- sampled requests (--d2c-sample) */

/* The weight of request `rq` (its pointer as a number) in the timed histograms (D2C, Q2D and its queue depth), or 0
 * when it is not sampled. With rq_sample_every N > 1 (histogram mode only: nothing needs every request's state)
 * only 1 request in N gets in-flight state, and each sample counts N times; the others are counted at completion
 * from the request itself (size, LBA, op, error), with no state: no slot to claim at issue and none to find at
 * completion, the two cache-line moves between the issuing and the completing CPU that most of a command's cost
 * is (docs/performance.md, "kvio drives: where the cost goes"). Which: a hash of the pointer and the request's
 * allocation time `gen`, the same at insert, issue, requeue and completion of one life and independent between
 * lives. Always 1 (every request, exact) for a request without an allocation time (no iostats, no scheduler) and on
 * a device without a histogram slot (the dev_hists hash counts 1 a sample). */
static __always_inline __u32 rq_time_weight(__u64 rq, __u64 gen, __u32 slot)
{
    if (rq_sample_every <= 1 || !gen || slot >= KVIO_MAX_DEV_SLOTS)
        return 1;
    return ptr_hash(rq ^ gen) < (__u32)((1ULL << 32) / rq_sample_every) ? rq_sample_every : 0;
}

/* ---------------------------------------------------------------- in-flight counts */

/* The issue and completion counters of the device in `slot`; NULL for a device without a slot. */
static __always_inline struct slot_depth *slot_depth_of(__u32 slot)
{
    return slot < KVIO_MAX_DEV_SLOTS ? bpf_map_lookup_elem(&slot_depths, &slot) : 0;
}

/* The in-flight count of a device without a slot (created in the hash on first use when `create`). */
static __always_inline __s64 *inflight_of(__u32 dev, bool create)
{
    __s64 zero = 0;
    if (create)
        return map_lookup_or_init(&inflight, &dev, &zero, 0);
    return bpf_map_lookup_elem(&inflight, &dev);
}

/* qd_kernel_done: whether the kernel counts this request in disk_stats.ios[read, write or discard] when it finishes,
 * so that its issue counts here (docs/performance.md, "The kernel's finished counts"). blk_account_io_done counts
 * a request that has RQF_IO_STAT and, then, no RQF_FLUSH_SEQ; a request of the flush machinery (RQF_FLUSH_SEQ at its
 * issue) has the flag cleared before it ends, so it is counted too, except the flush request itself (REQ_OP_FLUSH),
 * which the kernel counts in ios[flush] only, a group the sum leaves out. */
static __always_inline bool kernel_counts(struct request *rq, bool typed)
{
    if (!bpf_core_enum_value_exists(enum rqf_flags, __RQF_IO_STAT))
        return false;
    __u32 io_stat = 1u << bpf_core_enum_value(enum rqf_flags, __RQF_IO_STAT);
    __u32 f = typed ? (__u32)rq->rq_flags : (__u32)BPF_CORE_READ(rq, rq_flags);
    return (f & io_stat) && (rq_opf(rq, typed) & KVIO_OP_MASK) != KVIO_OP_FLUSH;
}

/* qd_kernel_done: a completion the kernel counts as finished whose request was never issued, so no issue of it was
 * counted: the empty write that carried a cache flush (the flush machinery issued only its flush request) or one a
 * device without a write cache ends at once. Nothing else is a write of 0 bytes at its completion. */
static __always_inline bool kernel_counts_unissued(struct request *rq, bool typed)
{
    if (!bpf_core_enum_value_exists(enum rqf_flags, __RQF_FLUSH_SEQ))
        return false;
    __u32 flush_seq = 1u << bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ);
    __u32 f = typed ? (__u32)rq->rq_flags : (__u32)BPF_CORE_READ(rq, rq_flags);
    return kernel_counts(rq, typed) && !(f & flush_seq) && (rq_opf(rq, typed) & KVIO_OP_MASK) == KVIO_OP_WRITE &&
           KREAD(typed, rq, __data_len) == 0;
}

/* qd_kernel_done: requests of rq's disk the kernel has counted as finished since boot (every CPU's disk_stats.ios,
 * the read, write and discard groups: not flush, kernel_counts), or -1 when it cannot be read. The kernel adds to it
 * after the completion tracepoint of each counted request (blk_account_io_done), whether a BPF program ran there or
 * not. */
static __always_inline __s64 kernel_done(struct request *rq)
{
    /* userspace sets qd_kernel_done only where BTF has all of these (trace/probe.h, kernel_finished_counts) */
    if (!bpf_core_field_exists(struct block_device, bd_stats) || !bpf_core_field_exists(struct disk_stats, ios) ||
        !bpf_core_field_exists(struct bpf_array, pptrs))
        return -1;
    struct disk_stats *ds = BPF_CORE_READ(rq, q, disk, part0, bd_stats);
    if (!ds)
        return -1;
    /* Each CPU's per-CPU offset, from a per-CPU map of ours: its element 0 on that CPU minus the element's per-CPU
     * address (the array's pptrs[0]); disk_stats are per-CPU data like it, at the same offsets. */
    __u32 zero = 0;
    __u64 *base = bpf_map_lookup_elem(&pcpu_base, &zero), pcpu = base ? *base : 0;
    if (base && !pcpu) { /* first use: the array's pptrs[0], read through the scratch (the map is 8-byte aligned) */
        __u32 off = bpf_core_field_offset(struct bpf_array, pptrs);
        struct pcpu_scratch *sc = bpf_map_lookup_elem(&pcpu_scratch, &zero);
        if (!sc || off + 8 > sizeof(sc->w) - 8 || off % 8)
            return -1;
        bpf_probe_read_kernel(sc->w, off + 8, &primary_seen);
        pcpu = sc->w[(off / 8) & 63];
        *base = pcpu;
    }
    if (!pcpu)
        return -1;
    struct pcpu_scratch *sc = bpf_map_lookup_elem(&pcpu_scratch, &zero);
    if (!sc)
        return -1;
    __u32 ios_off = bpf_core_field_offset(struct disk_stats, ios);
    __u64 sum = 0;
    for (__u32 cpu = 0; cpu < KVIO_MAX_KERNEL_CPUS && cpu < kernel_ncpus; cpu++) {
        const void *p = bpf_map_lookup_percpu_elem(&primary_seen, &zero, cpu);
        if (!p)
            break;
        unsigned long ios[3] = {}; /* read, write, discard: not flush (kernel_counts) */
        /* a map value's address as a number: stored and read back (no arithmetic on the pointer itself) */
        *(volatile __u64 *)&sc->w[63] = (__u64)p;
        __u64 pa = *(volatile __u64 *)&sc->w[63];
        bpf_probe_read_kernel(ios, sizeof(ios), (const void *)((__u64)ds + (pa - pcpu) + ios_off));
        sum += ios[0] + ios[1] + ios[2];
    }
    return (__s64)sum;
}

/* qd_kernel_done, at the first counted issue of the trace on a device: the kernel's finished count now plus what
 * userspace left in kbase (the requests in flight when the trace began, whose completions the kernel will count but
 * whose issues no program saw) is the count the issues are measured against. Read here, not from the disk's stat
 * file: the sum over CPUs differs from the file's by a constant on this kernel (docs/performance.md). Exact when no
 * request in flight at the start completed before this issue (an idle disk at the start, as kvio drives has). */
static __always_inline void kernel_base(struct slot_depth *d, struct request *rq)
{
    if (!qd_kernel_done)
        return;
    __s64 k = kernel_done(rq);
    if (k < 0)
        return;
    d->kbase += k;
    *(volatile __s64 *)&d->kbase_set = 1;
}

/* In flight on the device in `slot` for issue number `issued` (this issue included): the issues counted minus the
 * requests that left, either counted here (completed: completions, requeues, losses) or, with qd_kernel_done, the
 * kernel's own finished count since the trace began plus the requeues counted here. */
static __always_inline __s64 depth_of(struct slot_depth *d, __s64 issued, struct request *rq)
{
    __s64 left = *(volatile __s64 *)&d->completed;
    if (qd_kernel_done && rq && *(volatile __s64 *)&d->kbase_set) {
        __s64 k = kernel_done(rq);
        if (k >= 0)
            left += k - d->kbase;
    }
    return issued - left;
}

/* Commands in flight on a device now (issue_depth's counts), for the NVMe setup program. */
static __always_inline __s64 inflight_now(__u32 slot, __u32 dev, struct request *rq)
{
    if (slot < KVIO_MAX_DEV_SLOTS) {
        struct slot_depth *d = slot_depth_of(slot);
        if (!d)
            return 0;
        /* issued first: a completion between the reads only lowers the difference */
        __s64 n = depth_of(d, *(volatile __s64 *)&d->issued, rq);
        return n > 0 ? n : 0;
    }
    __s64 *n = inflight_of(dev, false);
    return n ? *n : 0;
}

/* A command issue_depth counted leaves the device's in-flight count (its completion, requeue or loss). With
 * qd_kernel_done the kernel counts completions and losses (a finished request is counted whether or not a program
 * saw it): only a requeue (`requeue`) is counted here. */
static __always_inline void inflight_dec(__u32 slot, __u32 dev, bool requeue)
{
    if (slot < KVIO_MAX_DEV_SLOTS) {
        if (qd_kernel_done && !requeue)
            return;
        struct slot_depth *d = slot_depth_of(slot);
        if (d)
            __sync_fetch_and_add(&d->completed, 1);
        return;
    }
    __s64 *n = inflight_of(dev, false);
    if (n && *n > 0)
        __sync_fetch_and_add(n, -1);
}

/* Whether an issue of rq counts in the in-flight count: always, except with qd_kernel_done a request the kernel
 * will not count as finished. */
static __always_inline bool issue_counts(struct request *rq, bool typed)
{
    return !qd_kernel_done || kernel_counts(rq, typed);
}

/* Counts the issue of a request that is not sampled (rq_time_weight 0) in the device's in-flight count: its
 * completion or requeue takes it out again (inflight_dec). */
static __always_inline void inflight_inc(__u32 slot, struct request *rq, bool typed)
{
    struct slot_depth *d = slot_depth_of(slot);
    if (d && issue_counts(rq, typed) && !__sync_fetch_and_add(&d->issued, 1))
        kernel_base(d, rq);
}

/* Counts an issue on the device and returns its queue depth (this command included, >= 1) with *weight, the
 * commands that depth stands for in the QD histograms: 1, or for a device with a slot qd_sample_every when this
 * issue is sampled and 0 (depth 0) when not. The issue number is free (the fetch-and-add's result); only a sampled
 * issue reads the completing CPU's counter (or, qd_kernel_done, the kernel's per-CPU finished counts). Sampled issue
 * numbers i: frac(i * golden ratio) < 1 / qd_sample_every, one in qd_sample_every on average over any stretch of
 * issues, with no fixed phase a periodic workload (batches of qd_sample_every submissions) could lock onto. A
 * completion counted between the fetch-and-add and the read lowers the depth (it is clamped to 1). */
static __always_inline __u32 issue_depth(__u32 slot, __u32 dev, __u32 *weight, struct request *rq, bool typed)
{
    *weight = 1;
    if (slot < KVIO_MAX_DEV_SLOTS) {
        struct slot_depth *d = slot_depth_of(slot);
        if (!d)
            return 1;
        bool counts = issue_counts(rq, typed);
        __s64 i = counts ? __sync_fetch_and_add(&d->issued, 1) : *(volatile __s64 *)&d->issued - 1;
        if (counts && !i)
            kernel_base(d, rq);
        if (qd_sample_every > 1) {
            if ((__u64)((__u32)i * 0x9E3779B9u) >= (1ULL << 32) / qd_sample_every) {
                *weight = 0;
                return 0;
            }
            *weight = qd_sample_every;
        }
        __s64 n = depth_of(d, i + 1, rq);
        return n > 1 ? (__u32)n : 1;
    }
    __s64 *n = inflight_of(dev, true);
    return n ? (__u32)__sync_fetch_and_add(n, 1) + 1 : 1;
}

#endif /* KVIO_RQ_STATE_BPF_H */
