/* util.bpf.h — small helpers every program uses: the per-CPU counters, lookup-or-init of a hash entry, and the
 * event ring buffer. */
#ifndef KVIO_UTIL_BPF_H
#define KVIO_UTIL_BPF_H

#include "bpf/config.bpf.h"

/* One more of counter `which` (enum kvio_counter) on this CPU. */
static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += 1; /* per-CPU: no atomics needed */
}

/* The value at `key` in hash `map`, first created as a copy of `init` when absent (as libbpf-tools'
 * bpf_map_lookup_or_try_init). *created (when given): this call inserted it, not a concurrent one. NULL: the map
 * is full. */
static __always_inline void *map_lookup_or_init(void *map, const void *key, const void *init, bool *created)
{
    void *v = bpf_map_lookup_elem(map, key);
    if (created)
        *created = false;
    if (v)
        return v;
    long err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
    if (created)
        *created = err == 0;
    return bpf_map_lookup_elem(map, key);
}

/* Event reservation: a zeroed record, or NULL with the drop counted (ring buffer full). */
#define EVENT_RESERVE(type)                                                                                            \
    ({                                                                                                                 \
        type *__e = bpf_ringbuf_reserve(&events, sizeof(type), 0);                                                     \
        if (__e)                                                                                                       \
            __builtin_memset(__e, 0, sizeof(type));                                                                    \
        else                                                                                                           \
            count(KVIO_CNT_RB_DROPS);                                                                                  \
        __e;                                                                                                           \
    })

/* The collector is woken once a CPU has submitted wakeup_mask + 1 events since its last wakeup (a wakeup per
 * event costs more than the event; userspace sizes the mask so that all CPUs together wake it about every
 * 256 KiB). It also drains the buffer every 100 ms, so nothing waits longer than that. The per-CPU event count
 * decides: no bpf_ringbuf_query, whose read of the consumer position misses the cache while the collector drains. */
static __always_inline void event_submit(void *e)
{
    __u32 key = KVIO_CNT_EVENTS;
    __u64 *n = bpf_map_lookup_elem(&counters, &key);
    __u64 seq = n ? ++*n : 0; /* per-CPU: no atomics needed */
    bpf_ringbuf_submit(e, (seq & wakeup_mask) ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
}

#endif /* KVIO_UTIL_BPF_H */
