/* forks.bpf.h — --children and `kvio trace -- COMMAND`: the children of filtered processes join the filter. */
#ifndef KVIO_FORKS_BPF_H
#define KVIO_FORKS_BPF_H

#include "bpf/config.bpf.h"

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

#endif /* KVIO_FORKS_BPF_H */
