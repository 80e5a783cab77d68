/* slot_table.bpf.h — open addressing over the slot tables (rq_table, bio_table: arrays whose values start with a
 * key word, kvio_trace.h), keyed by a kernel pointer, and the count of entries spilled to their hashes. */
#ifndef KVIO_SLOT_TABLE_BPF_H
#define KVIO_SLOT_TABLE_BPF_H

#include "bpf/util.bpf.h"

/* A BTF-typed pointer (tp_btf arguments and the fields read through them) as a number: the verifier allows only
 * adding to and subtracting from such a pointer, and the tables hash it. Stored in a map value and read back it is
 * a plain number (a program of root may store pointers in maps). One entry per program that converts (NUM_*): a
 * program never runs nested in itself, so nothing else writes its entry between the store and the load. */
static __always_inline __u64 ptr_number(__u32 prog, const void *p)
{
    __u64 *v = bpf_map_lookup_elem(&ptr_numbers, &prog);
    if (!v)
        return 0;
    *v = (__u64)p;
    return *(volatile __u64 *)v;
}

/* Fibonacci hashing of a kernel pointer (Knuth, TAOCP vol. 3, 6.4): the high half of the product mixes every bit. */
static __always_inline __u32 ptr_hash(__u64 p) { return (__u32)((p * 0x9E3779B97F4A7C15ULL) >> 32); }

/* The probes of `ptr` (its hash and the next KVIO_SLOT_PROBES - 1 slots) in order, each slot's index in *idx.
 * Finding (claim false): `ptr`'s slot is the first of its probes whose key, live bit aside, is ptr. A key is set when
 * a pointer takes a slot and stays when its life there ends (only another pointer taking the slot changes it), and a
 * pointer takes the first of its probes that is not live, so a never-used slot (key 0) ends the search. Claiming
 * (claim true): the first probe that is not live, taken with a compare-and-swap. Returns the slot's key word, or
 * NULL. */
static __always_inline __u64 *slot_scan(void *map, __u32 mask, __u64 ptr, __u32 *idx, bool claim, bool excl)
{
    __u32 h = ptr_hash(ptr);
    for (int i = 0; i < KVIO_SLOT_PROBES; i++) {
        *idx = (h + i) & mask;
        __u64 *k = bpf_map_lookup_elem(map, idx);
        if (!k)
            return 0;
        __u64 key = excl ? __sync_fetch_and_add(k, 0) : *(volatile __u64 *)k;
        if (claim) {
            if (!(key & KVIO_SLOT_LIVE) && __sync_bool_compare_and_swap(k, key, ptr | KVIO_SLOT_LIVE))
                return k;
        } else {
            if ((key & ~KVIO_SLOT_LIVE) == ptr)
                return k;
            if (!key)
                return 0;
        }
    }
    return 0;
}

/* `ptr`'s slot (live or not) and its index, or NULL. */
static __always_inline __u64 *slot_find(void *map, __u32 mask, __u64 ptr, __u32 *idx)
{
    return slot_scan(map, mask, ptr, idx, false, false);
}

/* slot_find for a caller that writes the slot next (a claim at issue, a release at completion): each probe's key
 * is read with an atomic add of 0, which fetches its cache line for writing. The line was last written by the
 * CPU at the other end of the request's life (issue and completion often run on different CPUs), so a plain read
 * would fetch it shared and the write after it would fetch it once more; this way it moves once per program run
 * (docs/performance.md, "kvio drives: where the cost goes"). */
static __always_inline __u64 *slot_find_excl(void *map, __u32 mask, __u64 ptr, __u32 *idx)
{
    return slot_scan(map, mask, ptr, idx, false, true);
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
    return slot_scan(map, mask, ptr, idx, true, false);
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

/* Are there entries in spill hash `which` (SPILL_RQ, SPILL_BIO)? */
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

#endif /* KVIO_SLOT_TABLE_BPF_H */
