/* io_uring.bpf.h — io_uring_submit_req gives the SQE user_data active in the submitting thread (events), and for
 * NVMe passthrough the submitter of each io_kiocb (uring_req_owner). */
#ifndef KVIO_IO_URING_BPF_H
#define KVIO_IO_URING_BPF_H

#include "bpf/file_attr.bpf.h"
#include "bpf/owner.bpf.h"

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
    if (files_from_submitter())
        files_uring_end();
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
    if (files_from_submitter())
        files_uring_submit((struct io_kiocb *)ctx->req);
    remember_user_data((__u64)ctx->req, ctx->user_data);
    return 0;
}

/* Before 6.4 the same event was io_uring_submit_sqe (core_fixes.bpf.h). */
SEC("tp/io_uring/io_uring_submit_sqe")
int io_uring_submit_sqe(struct trace_event_raw_io_uring_submit_sqe___kvio *ctx)
{
    if (files_from_submitter())
        files_uring_submit((struct io_kiocb *)ctx->req);
    remember_user_data((__u64)ctx->req, ctx->user_data);
    return 0;
}

/* tp_btf twins, where BTF gives the tracepoint the io_kiocb as its first argument (6.4+ io_uring_submit_req(req);
 * 6.0-6.3 io_uring_submit_sqe(req, force_nonblock)): the program gets the arguments as they are, instead of a
 * trace record the kernel fills first (the tp/ programs' fields, an opcode name string among them). */
static __always_inline __u64 kiocb_user_data(struct io_kiocb *req) { return req->cqe.user_data; }

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(io_uring_submit_req_btf, struct io_kiocb *req)
{
    if (files_from_submitter())
        files_uring_submit(req);
    remember_user_data((__u64)req, kiocb_user_data(req));
    return 0;
}

SEC("tp_btf/io_uring_submit_sqe")
int BPF_PROG(io_uring_submit_sqe_btf, struct io_kiocb *req)
{
    if (files_from_submitter())
        files_uring_submit(req);
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

#endif /* KVIO_IO_URING_BPF_H */
