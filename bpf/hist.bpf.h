/* hist.bpf.h — histograms (struct kvio_hist: slot counts and the sum of values). The slot of a value is computed
 * by the caller with the shared rules of kvio_trace.h (kvio_log2_slot, kvio_linear_slot); hist_add is the one
 * function that adds to a histogram. The others find the histogram: a device's (in its slot's per-CPU arrays, else
 * the dev_hists hash) or a syscall one (proc_hists). */
#ifndef KVIO_HIST_BPF_H
#define KVIO_HIST_BPF_H

#include "bpf/util.bpf.h"

static const struct kvio_hist zero_hist;

/* `n` samples of `value` in `slot` (clamped to the last) of h (a sampled queue depth stands for n commands).
 * `sole_writer`: the caller is the only writer of h on this CPU (slot_hists from the completion program, see
 * rescue_hists), so plain adds do; else other writers may update h at the same time (a shared map, or a per-CPU
 * one that nested programs write too) and the adds are atomic. */
static __always_inline void hist_add(struct kvio_hist *h, __u32 slot, __u64 value, __u64 n, bool sole_writer)
{
    if (slot >= KVIO_HIST_SLOTS)
        slot = KVIO_HIST_SLOTS - 1;
    /* older verifiers (6.1) lose the clamp when the compiler indexes with a copy: mask the register used */
    barrier_var(slot);
    slot &= KVIO_HIST_SLOTS - 1;
    if (sole_writer) {
        h->slots[slot] += n;
        h->sum += value * n;
    } else {
        __sync_fetch_and_add(&h->slots[slot], n);
        __sync_fetch_and_add(&h->sum, value * n);
    }
}

/* One sample into histogram `id` (queue `qid`) of device `dev` in the dev_hists hash (created on first use). */
static __always_inline void dev_hist_add(__u32 dev, __u16 id, __u16 qid, __u32 slot, __u64 value)
{
    struct kvio_hist_key key = {.dev = dev, .id = id, .qid = qid};
    struct kvio_hist *h = map_lookup_or_init(&dev_hists, &key, &zero_hist, 0);
    if (h)
        hist_add(h, slot, value, 1, false);
}

/* One sample into syscall histogram `id` (enum kvio_proc_hist). */
static __always_inline void proc_hist_add(__u32 id, __u64 value)
{
    struct kvio_hist *h = bpf_map_lookup_elem(&proc_hists, &id);
    if (h)
        hist_add(h, kvio_log2_slot(value), value, 1, false);
}

/* This CPU's histograms of the device in `slot`; NULL for a device without a slot (dev_hists then). `sole_writer`:
 * the set only the completion program writes (slot_hists), else rescue_hists. */
static __always_inline struct kvio_dev_hists *slot_hists_of(__u32 slot, bool sole_writer)
{
    if (slot >= KVIO_MAX_DEV_SLOTS)
        return 0;
    return bpf_map_lookup_elem(sole_writer ? (void *)&slot_hists : (void *)&rescue_hists, &slot);
}

/* `n` samples into histogram `id` of a device: its slot's per-CPU set `hs` (slot_hists_of), else the dev_hists hash
 * (whose devices sample nothing: n is 1 there). `sole_writer`: hs is slot_hists and the caller the completion
 * program. */
static __always_inline void cmd_hist_add(struct kvio_dev_hists *hs, __u32 dev, __u16 id, __u32 slot, __u64 value,
                                         __u64 n, bool sole_writer)
{
    if (!hs) {
        dev_hist_add(dev, id, 0, slot, value);
        return;
    }
    if (id >= KVIO_DEV_HISTS)
        return;
    hist_add(&hs->h[id], slot, value, n, sole_writer);
}

#endif /* KVIO_HIST_BPF_H */
