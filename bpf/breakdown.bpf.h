/* breakdown.bpf.h — `kvio trace --breakdown`: the block layer's merges, splits and requeues per device and
 * direction (blktrace/btt's figures, docs/formats.md "Block breakdown"), counted in map bt_counts. Classic tracepoints
 * (tp/): the record layout is read through CO-RE from the kernel's trace_event_raw_* structs, so the counts are
 * exactly what tracefs records for the same events. Loaded only with --breakdown (trace/tracer.cpp). */
#ifndef KVIO_BREAKDOWN_BPF_H
#define KVIO_BREAKDOWN_BPF_H

#include "bpf/config.bpf.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/filters.bpf.h"
#include "bpf/hist.bpf.h"

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, struct kvio_bt_key);
    __type(value, __u64);
} bt_counts SEC(".maps");

/* The direction of a tracefs rwbs string (blk_fill_rwbs: an optional 'F' for a preflush, then the op letter
 * R, W, D or N, or F for a flush): the first R or W of its first two letters, else KVIO_BT_OTHER. */
static __always_inline __u16 bt_dir(const char *rwbs)
{
    char c[2] = {};
    bpf_probe_read_kernel(c, sizeof(c), rwbs);
    if (c[0] == 'R' || (c[0] == 'F' && c[1] == 'R'))
        return KVIO_BT_READ;
    if (c[0] == 'W' || (c[0] == 'F' && c[1] == 'W'))
        return KVIO_BT_WRITE;
    return KVIO_BT_OTHER;
}

/* One event of `kind` on device `dev` (the record's dev_t) in direction `dir`. */
static __always_inline int bt_count(__u32 dev, __u16 kind, __u16 dir)
{
    struct kvio_bt_key key = {.dev = dev, .kind = kind, .dir = dir};
    __u64 one = 1;
    __u64 *v = bpf_map_lookup_elem(&bt_counts, &key);
    if (v)
        __sync_fetch_and_add(v, 1);
    else if (bpf_map_update_elem(&bt_counts, &key, &one, BPF_NOEXIST))
        if ((v = bpf_map_lookup_elem(&bt_counts, &key)))
            __sync_fetch_and_add(v, 1);
    return 0;
}

SEC("tp/block/block_rq_merge")
int bt_rq_merge(struct trace_event_raw_block_rq *ctx)
{
    return bt_count(BPF_CORE_READ(ctx, dev), KVIO_BT_RQ_MERGE, bt_dir(ctx->rwbs));
}

SEC("tp/block/block_rq_requeue")
int bt_rq_requeue(struct trace_event_raw_block_rq_requeue *ctx)
{
    return bt_count(BPF_CORE_READ(ctx, dev), KVIO_BT_REQUEUE, bt_dir(ctx->rwbs));
}

SEC("tp/block/block_bio_backmerge")
int bt_bio_backmerge(struct trace_event_raw_block_bio *ctx)
{
    return bt_count(BPF_CORE_READ(ctx, dev), KVIO_BT_BACKMERGE, bt_dir(ctx->rwbs));
}

SEC("tp/block/block_bio_frontmerge")
int bt_bio_frontmerge(struct trace_event_raw_block_bio *ctx)
{
    return bt_count(BPF_CORE_READ(ctx, dev), KVIO_BT_FRONTMERGE, bt_dir(ctx->rwbs));
}

SEC("tp/block/block_split")
int bt_split(struct trace_event_raw_block_split *ctx)
{
    return bt_count(BPF_CORE_READ(ctx, dev), KVIO_BT_SPLIT, bt_dir(ctx->rwbs));
}

/* ---------------------------------------------------------------- Q2G, G2I, I2D, G2D, D2C, Q2C */

/* The stages of one request (btt's names, docs/formats.md): Q bio queued (block_bio_queue), G request allocated for
 * it (block_getrq), I inserted into the scheduler (block_rq_insert; a request issued directly has none: G2D
 * instead of G2I + I2D), D issued (block_rq_issue), C completed (block_rq_complete). The stamps of a bio wait in
 * bt_bios until its request is first seen, then the request's in bt_rqs until it completes. Own programs and
 * maps (raw_tp: the pointers), so the main block programs are unchanged without --breakdown. */
const volatile __u32 bt_bio_arg = 0; /* index of the struct bio * in block_bio_queue/getrq/split's args */

struct bt_bio_stamp {
    __u64 ts_q, ts_g; /* CLOCK_MONOTONIC ns; 0: not seen */
};
struct bt_rq_stamp {
    __u64 ts_q, ts_g, ts_i, ts_d;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH); /* bios merged into a queued request never reach a request of their own */
    __uint(max_entries, 16384);
    __type(key, __u64); /* struct bio * */
    __type(value, struct bt_bio_stamp);
} bt_bios SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u64); /* struct request * */
    __type(value, struct bt_rq_stamp);
} bt_rqs SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); /* the last bio queued on this CPU: the parent of a split */
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} bt_lastq SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 512);
    __type(key, struct kvio_hist_key); /* id: enum kvio_bt_hist */
    __type(value, struct kvio_hist);
} bt_hists SEC(".maps");

static __always_inline void bt_hist_add(__u32 dev, __u16 id, __u64 value)
{
    struct kvio_hist_key key = {.dev = dev, .id = id};
    struct kvio_hist *h = map_lookup_or_init(&bt_hists, &key, &zero_hist, 0);
    if (h)
        hist_add(h, kvio_log2_slot(value), value, 1, false);
}

SEC("raw_tp/block_bio_queue")
int bt_bio_queue(u64 *ctx)
{
    __u64 bio = ctx[bt_bio_arg & 1];
    if (targ_ndevs && !dev_passes(bio_dev((struct bio *)bio, false)))
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct bt_bio_stamp st = {.ts_q = now};
    bpf_map_update_elem(&bt_bios, &bio, &st, BPF_ANY);
    __u32 zero = 0;
    __u64 *last = bpf_map_lookup_elem(&bt_lastq, &zero);
    if (last)
        *last = now;
    return 0;
}

/* The front part split off a queued bio is a new bio with no Q of its own: it takes its parent's, the last bio
 * queued on this CPU (the split runs in the parent's submission, after its block_bio_queue). */
SEC("raw_tp/block_split")
int bt_bio_split(u64 *ctx)
{
    __u64 bio = ctx[bt_bio_arg & 1];
    __u32 zero = 0;
    __u64 *last = bpf_map_lookup_elem(&bt_lastq, &zero);
    if (!last || !*last || (targ_ndevs && !dev_passes(bio_dev((struct bio *)bio, false))))
        return 0;
    struct bt_bio_stamp st = {.ts_q = *last};
    bpf_map_update_elem(&bt_bios, &bio, &st, BPF_ANY);
    return 0;
}

SEC("raw_tp/block_getrq")
int bt_getrq(u64 *ctx)
{
    __u64 bio = ctx[bt_bio_arg & 1];
    struct bt_bio_stamp *st = bpf_map_lookup_elem(&bt_bios, &bio);
    if (st)
        st->ts_g = bpf_ktime_get_ns();
    return 0;
}

/* Stamps rq when first seen at insert or issue with its first bio's stamps, which leave bt_bios; none when that
 * bio had no Q or G (queued before the trace, or a bio merged in front of it): the request is not in the stages. */
static __always_inline void bt_rq_first_seen(__u64 rq, __u64 now, bool at_insert)
{
    __u64 bio = (__u64)BPF_CORE_READ((struct request *)rq, bio);
    struct bt_bio_stamp *b = bpf_map_lookup_elem(&bt_bios, &bio);
    if (!b)
        return;
    struct bt_rq_stamp st = {.ts_q = b->ts_q, .ts_g = b->ts_g};
    bpf_map_delete_elem(&bt_bios, &bio);
    if (!st.ts_q || !st.ts_g)
        return;
    /* the stamps of a bio of a traced device merged away, whose address a bio of another device took: not its own */
    if (targ_ndevs && !dev_passes(rq_dev((struct request *)rq, false)))
        return;
    if (at_insert)
        st.ts_i = now;
    else
        st.ts_d = now;
    bpf_map_update_elem(&bt_rqs, &rq, &st, BPF_ANY);
}

SEC("raw_tp/block_rq_insert")
int bt_rq_insert(u64 *ctx)
{
    __u64 rq = ctx[rq_has_queue_arg ? 1 : 0];
    struct bt_rq_stamp *st = bpf_map_lookup_elem(&bt_rqs, &rq);
    if (!st)
        bt_rq_first_seen(rq, bpf_ktime_get_ns(), true);
    return 0;
}

SEC("raw_tp/block_rq_issue")
int bt_rq_issue(u64 *ctx)
{
    __u64 rq = ctx[rq_has_queue_arg ? 1 : 0];
    __u64 now = bpf_ktime_get_ns();
    struct bt_rq_stamp *st = bpf_map_lookup_elem(&bt_rqs, &rq);
    if (!st)
        bt_rq_first_seen(rq, now, false);
    else if (!st->ts_d)
        st->ts_d = now;
    return 0;
}

/* A requeued request is issued again: D2C runs from its last issue, and the wait between counts in I2D (or G2D). */
SEC("raw_tp/block_rq_requeue")
int bt_rq_requeue_stamp(u64 *ctx)
{
    __u64 rq = ctx[rq_has_queue_arg ? 1 : 0];
    struct bt_rq_stamp *st = bpf_map_lookup_elem(&bt_rqs, &rq);
    if (st)
        st->ts_d = 0;
    return 0;
}

/* A request merged into another is freed without completing. */
SEC("raw_tp/block_rq_merge")
int bt_rq_merged(u64 *ctx)
{
    __u64 rq = ctx[rq_has_queue_arg ? 1 : 0];
    bpf_map_delete_elem(&bt_rqs, &rq);
    return 0;
}

/* --events: the stages of a request bt_rq_complete put into bt_hists, as one record with the same stamps. */
static __always_inline void bt_emit(struct request *rq, __u32 dev, const struct bt_rq_stamp *st, __u64 now)
{
    struct kvio_stages_event *e = EVENT_RESERVE(struct kvio_stages_event);
    if (!e)
        return;
    e->type = KVIO_EV_STAGES;
    e->has_insert = st->ts_i != 0;
    e->dev = dev;
    e->opf = rq_opf(rq, false);
    e->bytes = BPF_CORE_READ(rq, __data_len);
    e->sector = BPF_CORE_READ(rq, __sector);
    e->ts_queue = st->ts_q;
    e->ts_getrq = st->ts_g;
    e->ts_insert = st->ts_i;
    e->ts_issue = st->ts_d;
    e->ts_complete = now;
    event_submit(e);
}

/* The stages of a completed request into bt_hists; each sum is of the same requests, so per request and in the sums
 * Q2G + G2I + I2D + D2C (inserted) or Q2G + G2D + D2C (issued directly) = Q2C. With --events, the same request's
 * stamps as a stages record (bt_emit). */
SEC("raw_tp/block_rq_complete")
int BPF_PROG(bt_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
    __u64 key = (__u64)rq;
    struct bt_rq_stamp *p = bpf_map_lookup_elem(&bt_rqs, &key);
    if (!p)
        return 0;
    if (nr_bytes && nr_bytes < BPF_CORE_READ(rq, __data_len))
        return 0; /* partial: the request goes on */
    struct bt_rq_stamp st = *p;
    bpf_map_delete_elem(&bt_rqs, &key);
    __u64 now = bpf_ktime_get_ns();
    __u32 op = rq_opf(rq, false) & KVIO_OP_MASK;
    if ((op != KVIO_OP_READ && op != KVIO_OP_WRITE) || !st.ts_d || st.ts_g < st.ts_q || now < st.ts_d)
        return 0;
    if (st.ts_i && (st.ts_i < st.ts_g || st.ts_d < st.ts_i))
        return 0;
    if (!st.ts_i && st.ts_d < st.ts_g)
        return 0;
    __u32 dev = rq_dev(rq, false);
    __u16 w = op == KVIO_OP_WRITE;
    bt_hist_add(dev, KVIO_BT_H_Q2G_READ + w, st.ts_g - st.ts_q);
    if (st.ts_i) {
        bt_hist_add(dev, KVIO_BT_H_G2I_READ + w, st.ts_i - st.ts_g);
        bt_hist_add(dev, KVIO_BT_H_I2D_READ + w, st.ts_d - st.ts_i);
    } else {
        bt_hist_add(dev, KVIO_BT_H_G2D_READ + w, st.ts_d - st.ts_g);
    }
    bt_hist_add(dev, KVIO_BT_H_D2C_READ + w, now - st.ts_d);
    bt_hist_add(dev, KVIO_BT_H_Q2C_READ + w, now - st.ts_q);
    if (emit_events)
        bt_emit(rq, dev, &st, now);
    return 0;
}

#endif /* KVIO_BREAKDOWN_BPF_H */
