/* core_fixes.bpf.h — reading kernel structures that moved between kernel versions (CO-RE: the loader relocates every
 * field access against this kernel's BTF; bpf_core_field_exists picks the layout this kernel has). Also the KREAD
 * switch between typed (tp_btf) and probe-read (raw_tp) access that every program twin uses. */
#ifndef KVIO_CORE_FIXES_BPF_H
#define KVIO_CORE_FIXES_BPF_H

#include "bpf/kvio_trace.h"

#define PF_KTHREAD   0x00200000 /* include/linux/sched.h */
#define PF_IO_WORKER 0x00000010

/* `typed`: the caller is a tp_btf program, whose arguments are BTF-typed pointers: fields are read with plain
 * loads (the verifier turns them into fault-safe loads) instead of a bpf_probe_read_kernel call each, as raw_tp
 * programs must. A constant in each program: the other branch is compiled out. */
#define KREAD(typed, ptr, ...) ((typed) ? (ptr)->__VA_ARGS__ : BPF_CORE_READ(ptr, __VA_ARGS__))

/* Kernels before 5.15 kept the disk in request->rq_disk. */
struct request___old {
    struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* Kernels before 5.12 kept the disk in bio->bi_disk. */
struct bio___old {
    struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

/* Before 6.4 io_uring's submission event was io_uring_submit_sqe (ctx, req, user_data, ...). */
struct trace_event_raw_io_uring_submit_sqe___kvio {
    void *req;
    __u64 user_data;
} __attribute__((preserve_access_index));

/* struct nvme_request is the blk-mq PDU right after struct request (drivers/nvme/host/nvme.h); the nvme module's
 * types are not in vmlinux BTF, so the fields kvio reads are named here. */
struct nvme_request___kvio {
    void *cmd;
    __u64 result;
    __u8 genctr;
    __u8 retries;
    __u8 flags;
    __u16 status;
} __attribute__((preserve_access_index));

/* Kernel dev_t of a whole disk; 0 for none. */
static __always_inline __u32 gendisk_dev(struct gendisk *disk, bool typed)
{
    if (!disk)
        return 0;
    return KVIO_MKDEV(KREAD(typed, disk, major), KREAD(typed, disk, first_minor));
}

/* The whole disk a request is for. */
static __always_inline __u32 rq_dev(struct request *rq, bool typed)
{
    struct gendisk *disk;
    if (bpf_core_field_exists(((struct request___old *)0)->rq_disk))
        disk = BPF_CORE_READ((struct request___old *)rq, rq_disk);
    else if (typed)
        disk = rq->q->disk;
    else
        disk = BPF_CORE_READ(rq, q, disk);
    return gendisk_dev(disk, typed);
}

/* The whole disk a bio is for. */
static __always_inline __u32 bio_dev(struct bio *bio, bool typed)
{
    struct gendisk *disk;
    if (bpf_core_field_exists(((struct bio___old *)0)->bi_disk))
        disk = BPF_CORE_READ((struct bio___old *)bio, bi_disk);
    else if (typed)
        disk = bio->bi_bdev->bd_disk;
    else
        disk = BPF_CORE_READ(bio, bi_bdev, bd_disk);
    return gendisk_dev(disk, typed);
}

/* A request's op and flags as kvio numbers them (the flag bits moved between kernels: enum req_flag_bits). */
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

/* What tells a reused request from the one seen before: its start_time_ns at allocation, where the kernel has it. */
static __always_inline __u64 rq_generation(struct request *rq, bool typed)
{
    if (bpf_core_field_exists(rq->start_time_ns))
        return typed ? rq->start_time_ns : BPF_CORE_READ(rq, start_time_ns);
    return 0;
}

#endif /* KVIO_CORE_FIXES_BPF_H */
