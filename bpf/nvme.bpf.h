/* nvme.bpf.h — the NVMe driver's nvme_setup_cmd / nvme_complete_rq (raw_tp; userspace turns autoload off where the
 * driver is absent): D2C per direction and per queue, and the command's own fields for events. */
#ifndef KVIO_NVME_BPF_H
#define KVIO_NVME_BPF_H

#include "bpf/hist.bpf.h"
#include "bpf/owner.bpf.h"
#include "bpf/rq_state.bpf.h"

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

/* Commands with a starting LBA (cdw10-11) and a 0-based block count (cdw12[15:0]). */
static __always_inline bool nvme_has_lba_range(__u8 opcode)
{
    return opcode == KVIO_NVME_WRITE || opcode == KVIO_NVME_READ || opcode == KVIO_NVME_WRITE_ZEROES;
}

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
        if (nvme_has_lba_range(sqe.opcode)) {
            st.slba = ((__u64)sqe.cdw11 << 32) | sqe.cdw10;
            st.nlb = (sqe.cdw12 & 0xffff) + 1;
        }
        /* I/O queues are numbered from 1; the admin queue (no namespace) is 0 */
        if (BPF_CORE_READ(rq, q, queuedata))
            st.qid = BPF_CORE_READ(rq, mq_hctx, queue_num) + 1;
        st.ts_setup = bpf_ktime_get_ns();
        /* the block issue of this request comes right after setup: count it in */
        st.qd = (__u32)inflight_now(st.slot, st.dev, rq) + 1;
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
    __u32 slot = kvio_log2_slot(d2c);
    if (st.opcode == KVIO_NVME_READ || st.opcode == KVIO_NVME_WRITE)
        cmd_hist_add(slot_hists_of(st.slot, false), st.dev,
                     st.opcode == KVIO_NVME_READ ? KVIO_H_NVME_D2C_READ : KVIO_H_NVME_D2C_WRITE, slot, d2c, 1, false);
    dev_hist_add(st.dev, KVIO_H_NVME_D2C_QUEUE, st.qid, slot, d2c);
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

#endif /* KVIO_NVME_BPF_H */
