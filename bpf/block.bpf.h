/* block.bpf.h — the block layer programs: block_getrq (who submitted a bio), block_rq_insert/issue/complete
 * (Q2D, D2C, size, queue depth, LBA of each request), requeue and merge, with raw_tp backups of issue and
 * completion. In-flight state is keyed by the kernel object (struct request *), never by (dev, sector). */
#ifndef KVIO_BLOCK_BPF_H
#define KVIO_BLOCK_BPF_H

#include "bpf/file_attr.bpf.h"
#include "bpf/hist.bpf.h"
#include "bpf/owner.bpf.h"
#include "bpf/rq_state.bpf.h"
#include "bpf/test_hooks.bpf.h"

static const struct kvio_group_val zero_group; /* too large for the BPF stack */

/* ---------------------------------------------------------------- bio owners */

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

/* ---------------------------------------------------------------- accounting */

/* --per-process / --per-cgroup: one finished read or write into its submitter's group. timed: d2c was measured (a
 * command whose completion was lost, or whose latency came out negative, counts in cmds and bytes, not in d2c). */
static __always_inline void group_add(const struct rq_state *st, const struct kvio_rq_owner *o, __u32 op, __u64 d2c,
                                      bool timed)
{
    if (!st->has_owner || !o)
        return;
    struct kvio_group_key key = {
        .id = group_by == KVIO_GROUP_PROCESS ? o->owner.pid : o->cgroup, .dev = st->dev, .op = op};
    bool created;
    struct kvio_group_val *g = map_lookup_or_init(&group_stats, &key, &zero_group, &created);
    if (!g)
        return;
    if (created)
        __builtin_memcpy(g->comm, o->owner.comm, sizeof(g->comm));
    __sync_fetch_and_add(&g->cmds, 1);
    __sync_fetch_and_add(&g->bytes, st->bytes);
    if (timed)
        hist_add(&g->d2c, kvio_log2_slot(d2c), d2c, 1, false);
}

/* Histograms and the event of one finished command. lost: its completion was never seen (the state
 * outlived the request), so there is no D2C and no completion time (`now` is when it was found lost); size, QD and
 * LBA still count.
 * sole_writer: the caller is the completion program, the only writer of slot_hists (no atomics). tw: the commands
 * its D2C and Q2D stand for (rq_time_weight), 0: not timed (a request --d2c-sample did not sample). */
static __always_inline void account_cmd(const struct rq_state *st, const struct kvio_rq_owner *o, __u64 now, int error,
                                        bool lost, bool sole_writer, const struct files_cmd *fc, __u32 tw)
{
    __u32 op = st->opf & KVIO_OP_MASK;
    bool is_read = op == KVIO_OP_READ, is_write = op == KVIO_OP_WRITE;
    struct kvio_dev_hists *hs = slot_hists_of(st->slot, sole_writer);
    __u32 dev = st->dev;
    __u64 d2c = 0;
    bool timed = false;
    if (lost) {
        count(KVIO_CNT_LOST_COMPLETE);
    } else if (!tw) {
        /* not sampled: counted below, not timed */
    } else if (now < st->ts_issue || (st->ts_insert && st->ts_issue < st->ts_insert)) {
        count(KVIO_CNT_NEGATIVE_DELTA);
    } else if (is_read || is_write) {
        __u64 q2d = st->ts_issue - st->ts_insert;
        d2c = now - st->ts_issue;
        timed = true;
        cmd_hist_add(hs, dev, is_read ? KVIO_H_D2C_READ : KVIO_H_D2C_WRITE, kvio_log2_slot(d2c), d2c, tw, sole_writer);
        if (st->ts_insert)
            cmd_hist_add(hs, dev, is_read ? KVIO_H_Q2D_READ : KVIO_H_Q2D_WRITE, kvio_log2_slot(q2d), q2d, tw,
                         sole_writer);
    }
    __u64 bytes = st->bytes;
    if (error && !lost) { /* completed with an error (blk_status_t): counted apart, rare, in the dev_hists hash */
        __u16 failed = is_write ? KVIO_H_FAILED_WRITE : KVIO_H_FAILED_OTHER;
        if (is_read)
            failed = KVIO_H_FAILED_READ;
        dev_hist_add(dev, failed, 0, kvio_log2_slot(bytes), bytes);
    }
    if (is_read || is_write) {
        __u64 offset = st->sector * 512;
        if (group_by)
            group_add(st, o, op, d2c, timed);
        cmd_hist_add(hs, dev, is_read ? KVIO_H_BSSPLIT_READ : KVIO_H_BSSPLIT_WRITE, kvio_log2_slot(bytes), bytes, 1,
                     sole_writer);
        if (st->qd_weight)
            cmd_hist_add(hs, dev, is_read ? KVIO_H_QD_READ : KVIO_H_QD_WRITE, st->qd, st->qd, st->qd_weight,
                         sole_writer); /* linear, one depth per slot */
        cmd_hist_add(hs, dev, is_read ? KVIO_H_LBA_READ : KVIO_H_LBA_WRITE, kvio_linear_slot(offset, lba_bucket_bytes),
                     offset, 1, sole_writer);
    } else {
        __u32 slot = kvio_log2_slot(bytes);
        cmd_hist_add(hs, dev, KVIO_H_OTHER_CMDS, slot, bytes, 1, sole_writer);
        if (op == KVIO_OP_FLUSH)
            cmd_hist_add(hs, dev, KVIO_H_FLUSH_CMDS, slot, bytes, 1, sole_writer);
        else if (op == KVIO_OP_DISCARD || op == KVIO_OP_SECURE_ERASE)
            cmd_hist_add(hs, dev, KVIO_H_DISCARD_CMDS, slot, bytes, 1, sole_writer);
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
    e->ts_complete = now; /* lost: when it was found lost */
    e->complete_lost = lost;
    e->qd = st->qd;
    e->error = error;
    if (o) {
        e->owner = o->owner;
        e->has_user_data = o->owner.user_data != 0;
    }
    if (fc && fc->first.ino) {   /* --files (file_attr.bpf.h) */
        e->slba = fc->first.ino; /* a block record's NVMe words hold its file (file_attr.h) */
        e->nlb = fc->first.fs_dev;
        e->nsid = fc->first.gen;
        e->nparts = fc->nparts; /* its parts, written before it */
    }
    event_submit(e);
}

/* ---------------------------------------------------------------- request life */

/* --d2c-sample: a request that is not sampled is counted at its issue from the request itself (size, LBA, op), so a
 * command whose completion no program sees is counted all the same, as a timed one's leftover state is at the end.
 * `n`: 1 at issue, (__u64)-1 at a requeue (its next issue counts it again; userspace sums the per-CPU sets modulo
 * 2^64). `sole_writer`: the caller is the primary issue program, the only writer of issue_hists (plain adds); else
 * into rescue_hists, with atomic adds. */
static __always_inline void count_unsampled(struct request *rq, __u32 dev, __u32 slot, bool typed, __u64 n,
                                            bool sole_writer)
{
    struct kvio_dev_hists *hs = sole_writer ? bpf_map_lookup_elem(&issue_hists, &slot) : slot_hists_of(slot, false);
    if (!hs)
        return;
    __u32 op = rq_opf(rq, typed) & KVIO_OP_MASK;
    __u64 bytes = KREAD(typed, rq, __data_len);
    __u32 bslot = kvio_log2_slot(bytes);
    if (op == KVIO_OP_READ || op == KVIO_OP_WRITE) {
        bool is_read = op == KVIO_OP_READ;
        __u64 offset = KREAD(typed, rq, __sector) * 512;
        cmd_hist_add(hs, dev, is_read ? KVIO_H_BSSPLIT_READ : KVIO_H_BSSPLIT_WRITE, bslot, bytes, n, sole_writer);
        cmd_hist_add(hs, dev, is_read ? KVIO_H_LBA_READ : KVIO_H_LBA_WRITE, kvio_linear_slot(offset, lba_bucket_bytes),
                     offset, n, sole_writer);
        return;
    }
    cmd_hist_add(hs, dev, KVIO_H_OTHER_CMDS, bslot, bytes, n, sole_writer);
    if (op == KVIO_OP_FLUSH)
        cmd_hist_add(hs, dev, KVIO_H_FLUSH_CMDS, bslot, bytes, n, sole_writer);
    else if (op == KVIO_OP_DISCARD || op == KVIO_OP_SECURE_ERASE)
        cmd_hist_add(hs, dev, KVIO_H_DISCARD_CMDS, bslot, bytes, n, sole_writer);
}

/* A request's in-flight state as first seen (at insert, or at issue without insert): device, slot, owner and
 * the filter's verdict, decided here once for the request. */
static __always_inline void rq_state_init(struct rq_ref *r, struct request *rq, __u32 dev, __u32 slot, __u64 gen,
                                          bool at_insert, bool typed)
{
    struct rq_state *s = r->s;
    bool passes;
    s->gen = (__u32)gen;
    s->file_id = 0;
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
    if (s->ignored && files_follow_writeback(rq, dev, typed)) /* --files: the traced processes' writeback */
        s->ignored = false;
    if (!s->has_owner && (task_filter_active() || group_by))
        count(KVIO_CNT_NO_OWNER);
}

/* The live state of rq left from an earlier life of the request (gen differs). On some kernels no BPF program runs
 * for a completion in certain softirq contexts (tracefs still records it, recursion_misses stays 0): an issued,
 * traced leftover is such a command. Report it without a completion; its record's ts_complete says when it was
 * found lost (now), the end of its time in the in-flight count (docs/formats.md, "Lost completions"). */
static __always_inline void rq_state_stale(const struct rq_state *s, const struct kvio_rq_owner *o)
{
    if (s->issued && !s->ignored) {
        inflight_dec(s->slot, s->dev, false);
        account_cmd(s, o, bpf_ktime_get_ns(), 0, true, false, 0, 0);
    } else {
        count(KVIO_CNT_STALE);
    }
}

/* What issue records of a traced request: time, extent, op, and its queue depth (once: a requeued request is
 * issued again but not counted twice), a sample of `tw` commands (rq_time_weight). */
static __always_inline void issue_fill(struct rq_state *s, struct request *rq, bool typed, __u32 tw)
{
    s->ts_issue = bpf_ktime_get_ns();
    s->sector = KREAD(typed, rq, __sector);
    s->bytes = KREAD(typed, rq, __data_len);
    s->opf = rq_opf(rq, typed);
    if (!s->issued) {
        s->issued = 1;
        s->qd = issue_depth(s->slot, s->dev, &s->qd_weight, rq, typed);
        s->qd_weight *= tw;
    }
}

/* Insert or issue of rq: the state it has, else a slot taken for it (the usual path: a direct issue without
 * insert). Requests of untraced devices get no state at all. */
static __always_inline int on_rq_seen(struct request *rq, bool typed, bool at_insert, bool cast)
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
    __u32 tw = rq_time_weight(key, gen, slot);
    if (!tw) { /* not sampled (--d2c-sample): no state; counted at issue */
        if (!at_insert) {
            inflight_inc(slot, rq, typed);
            count_unsampled(rq, dev, slot, typed, 1, typed || !backup_programs); /* the primary, or the only one */
        }
        return 0;
    }
    if (!rq_take(key, &r, &fresh))
        return 0;
    struct rq_state *s = r.s;
    bool inited = fresh || s->gen != (__u32)gen;
    if (inited) {
        if (!fresh)
            rq_state_stale(s, r.o);
        rq_state_init(&r, rq, dev, slot, gen, at_insert, typed);
    }
    if (s->ignored && !at_insert && !inited && files_follow_writeback(rq, dev, typed))
        s->ignored = false; /* --files: bios merged into it since its insert are the traced processes' writeback */
    if (s->ignored)
        return 0;
    if (at_insert)
        s->ts_insert = bpf_ktime_get_ns();
    else
        issue_fill(s, rq, typed, tw);
    if (!at_insert && track_files)
        s->file_id = files_at_issue(rq, typed, cast);
    return 0;
}

static __always_inline int on_insert(struct request *rq, bool typed) { return on_rq_seen(rq, typed, true, false); }
/* `cast`: --files reads the direct-I/O file through bpf_rdonly_cast (block_rq_issue_cast_btf) */
static __always_inline int on_issue(struct request *rq, bool typed, bool cast)
{
    return on_rq_seen(rq, typed, false, cast);
}

/* --d2c-sample: the completion of a request of traced device `dev` (histogram slot `slot`) that was not sampled
 * (counted at its issue, count_unsampled): it leaves the in-flight count, and a failed one is counted as such. */
static __always_inline int complete_unsampled(struct request *rq, __u32 dev, __u32 slot, int error,
                                              unsigned int nr_bytes, bool typed)
{
    __u32 len = KREAD(typed, rq, __data_len);
    if (nr_bytes && nr_bytes < len) {
        count(KVIO_CNT_PARTIAL_COMPLETE); /* partial completion: the request goes on */
        return 0;
    }
    inflight_dec(slot, dev, false);
    if (error) { /* as account_cmd counts a failed command: rare, in the dev_hists hash */
        __u32 op = rq_opf(rq, typed) & KVIO_OP_MASK;
        __u16 failed = op == KVIO_OP_WRITE ? KVIO_H_FAILED_WRITE : KVIO_H_FAILED_OTHER;
        if (op == KVIO_OP_READ)
            failed = KVIO_H_FAILED_READ;
        dev_hist_add(dev, failed, 0, kvio_log2_slot(len), len);
    }
    return 0;
}

static __always_inline int on_complete(struct request *rq, int error, unsigned int nr_bytes, bool typed,
                                       bool sole_writer)
{
    /* requests of other devices get no state at all: no lookup for them (with -d the device is known cheaper) */
    __u32 dev = 0, slot = KVIO_SLOT_NONE;
    if (rq_sample_every > 1) {
        dev = rq_dev(rq, typed);
        if (!dev_traced(dev, &slot))
            return 0;
        if (qd_kernel_done && kernel_counts_unissued(rq, typed))
            inflight_inc(slot, rq, typed); /* the kernel counts it finished: its issue, never seen, counts now */
    } else if (targ_ndevs && !dev_passes(rq_dev(rq, typed))) {
        return 0;
    }
    if (!nr_bytes || nr_bytes >= KREAD(typed, rq, __data_len))
        count(KVIO_CNT_COMPLETE_RUNS); /* a program ran for the end of this request (the kernel counts the end) */
    __u64 key = typed ? ptr_number(NUM_COMPLETE, rq) : (__u64)rq;
    __u32 tw = 1;
    if (rq_sample_every > 1 && key) {
        tw = rq_time_weight(key, rq_generation(rq, typed), slot);
        if (!tw)
            return complete_unsampled(rq, dev, slot, error, nr_bytes, typed);
    }
    struct rq_ref r = {};
    if (!key || !rq_lookup(key, &r)) {
        count(duty_open_ns && rq_generation(rq, typed) < duty_open_ns ? KVIO_CNT_DUTY_BEFORE
                                                                      : KVIO_CNT_UNMATCHED_COMPLETE);
        return 0;
    }
    struct rq_state *s = r.s;
    if (s->gen != (__u32)rq_generation(rq, typed)) {
        rq_state_stale(s, r.o); /* an earlier life's: this life's issue was not seen */
        rq_release(&r, key);
        count(KVIO_CNT_UNMATCHED_COMPLETE);
        return 0;
    }
    if (s->ignored || !s->issued) {
        if (!s->issued && !s->ignored) /* --duty: inserted in a window, issued after its issue program left */
            count(duty_open_ns ? KVIO_CNT_DUTY_BEFORE : KVIO_CNT_UNMATCHED_COMPLETE);
        rq_release(&r, key);
        return 0;
    }
    /* the tracepoint runs before the request's remaining length drops by nr_bytes */
    if (nr_bytes && nr_bytes < KREAD(typed, rq, __data_len)) {
        count(KVIO_CNT_PARTIAL_COMPLETE); /* partial completion: the request goes on */
        return 0;
    }
    __u64 now = bpf_ktime_get_ns();
    inflight_dec(s->slot, s->dev, false);
    struct files_cmd fc = {};
    if (track_files) /* --files: each bio's bytes to its file; fc the first and the parts (file_attr.bpf.h) */
        files_on_complete(rq, s->dev, s->opf & KVIO_OP_MASK, s->bytes, s->sector, now, now - s->ts_issue,
                          now >= s->ts_issue, typed, s->file_id, &fc);
    account_cmd(s, r.o, now, error, false, sole_writer, track_files ? &fc : 0, tw);
    rq_release(&r, key);
    return 0;
}

/* ---------------------------------------------------------------- primaries and backups */

/* The kernel skips a BPF program that fires again on a CPU where it is already running (an interrupt completing
 * one request while the program handles another; bpf_prog_info.recursion_misses counts them). Issue and complete
 * have a backup program, the raw_tp twin of the tp_btf one: the primary marks the request it handles on this CPU,
 * the backup handles what the primary did not see. A backup costs a program run per request, and nested runs are
 * rare (none in 2.6 M commands of fio QD 32 on a loop device here), so userspace attaches a backup only once its
 * primary has missed a run (kernel.recursion_misses > 0); until then a miss is a counted lost_complete or
 * unmatched_complete. */

/* The primary's start: false when a test hook has it skip this run. */
static __always_inline bool primary_mark(__u32 hook, __u64 rq)
{
    if (test_skip_run(hook))
        return false;
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

/* ---------------------------------------------------------------- programs */

/* tp_btf: args are typed; raw_tp: the same u64 args, read through BPF_CORE_READ. */
SEC("tp_btf/block_getrq")
int BPF_PROG(block_getrq_btf, struct bio *bio) { return on_getrq(bio, true); }
SEC("raw_tp/block_getrq")
int BPF_PROG(block_getrq_raw, struct bio *bio) { return on_getrq(bio, false); }

SEC("tp_btf/block_rq_insert")
int block_rq_insert_btf(u64 *ctx) { return on_insert((struct request *)ctx[rq_has_queue_arg ? 1 : 0], true); }
SEC("raw_tp/block_rq_insert")
int block_rq_insert_raw(u64 *ctx) { return on_insert((struct request *)ctx[rq_has_queue_arg ? 1 : 0], false); }

static __always_inline int issue_primary(u64 *ctx, bool cast)
{
    struct request *rq = (struct request *)ctx[rq_has_queue_arg ? 1 : 0];
    if (!primary_mark(HOOK_ISSUE, (__u64)rq))
        return 0;
    return on_issue(rq, true, cast);
}
SEC("tp_btf/block_rq_issue")
int block_rq_issue_btf(u64 *ctx) { return issue_primary(ctx, false); }
/* The same where the kernel has bpf_rdonly_cast and --files the dio source: loaded instead of block_rq_issue_btf
 * (userspace chooses). The direct-I/O file it reads at issue costs ~10 ns there against ~100 by probe reads. */
SEC("tp_btf/block_rq_issue")
int block_rq_issue_cast_btf(u64 *ctx) { return issue_primary(ctx, true); }
SEC("raw_tp/block_rq_issue")
int block_rq_issue_raw(u64 *ctx)
{
    struct request *rq = (struct request *)ctx[rq_has_queue_arg ? 1 : 0];
    if (backup_programs && !primary_missed(HOOK_ISSUE, (__u64)rq))
        return 0;
    return on_issue(rq, false, false);
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
    if (rq_lookup(key, &r)) {
        if (r.s->issued && !r.s->ignored) {
            r.s->issued = 0;
            if (issue_counts((struct request *)key, false))
                inflight_dec(r.s->slot, r.s->dev, true);
        }
        return 0;
    }
    if (rq_sample_every > 1) { /* a request --d2c-sample did not sample was counted at its issue: its next one counts */
        struct request *rq = (struct request *)key;
        __u32 dev = rq_dev(rq, false), slot;
        if (dev_traced(dev, &slot) && !rq_time_weight(key, rq_generation(rq, false), slot)) {
            if (issue_counts(rq, false))
                inflight_dec(slot, dev, true);
            count_unsampled(rq, dev, slot, false, (__u64)-1, false);
        }
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
    if (r.s->gen != (__u32)rq_generation((struct request *)key, false))
        rq_state_stale(r.s, r.o);
    rq_release(&r, key);
    return 0;
}

#endif /* KVIO_BLOCK_BPF_H */
