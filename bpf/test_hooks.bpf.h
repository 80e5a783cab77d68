/* test_hooks.bpf.h — hooks only the test build has (compiled with -DKVIO_BPF_TEST_HOOKS into build/kvio-test-hooks;
 * docs/testing.md). In the production object every hook is a constant false that the compiler removes. */
#ifndef KVIO_TEST_HOOKS_BPF_H
#define KVIO_TEST_HOOKS_BPF_H

#include "bpf/config.bpf.h"

/* Should primary program `hook` skip this run, as if the kernel had (test_skip_every: every Nth run)? The backups
 * then have runs to rescue (tests/e2e/trace_tables_test.cpp). test_lose_every: every Nth completion run is skipped
 * and nothing rescues it, a completion no program sees (tests/e2e/trace_qd_test.cpp). */
static __always_inline bool test_skip_run(__u32 hook)
{
#ifdef KVIO_BPF_TEST_HOOKS
    if (test_lose_every && hook == HOOK_COMPLETE) { /* completions lost for good: no backup is attached */
        __u64 *n = bpf_map_lookup_elem(&primary_runs, &hook);
        return n && ++*n % test_lose_every == 0;
    }
    if (test_skip_every) {
        __u64 *n = bpf_map_lookup_elem(&primary_runs, &hook);
        if (n && ++*n % test_skip_every == 0)
            return true;
    }
#endif
    return false;
}

#endif /* KVIO_TEST_HOOKS_BPF_H */
