/* bench/syscall_cost.c: ns per syscall(SYS_getppid), the cheapest syscall, best of 5 runs of N calls (argv[1],
 * default 1000000; CLOCK_MONOTONIC). bench/run.sh runs it beside each tracer: a syscall tracepoint (kvio's
 * per-syscall ones, bpftrace's raw_syscalls) sends every syscall of the machine through the kernel's slow path. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    double best = 1e18;
    if (n <= 0) return 2;
    for (int r = 0; r < 5; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long i = 0; i < n; i++) syscall(SYS_getppid);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
        if (ns < best) best = ns;
    }
    printf("%.1f\n", best);
    return 0;
}
