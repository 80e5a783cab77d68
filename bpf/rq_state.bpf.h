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

/* Counts the issue of a request that is not sampled (rq_time_weight 0) in the device's in-flight count: its
 * completion or requeue takes it out again (inflight_dec). */
static __always_inline void inflight_inc(__u32 slot)
{
    struct slot_depth *d = slot_depth_of(slot);
    if (d)
        __sync_fetch_and_add(&d->issued, 1);
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

#endif /* KVIO_RQ_STATE_BPF_H */
