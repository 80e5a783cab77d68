/* config.bpf.h — everything kvio_trace.bpf.c is told before load (const volatile rodata, set by userspace through
 * the skeleton: trace/tracer.cpp) and every map it keeps, each declared once, with the private structs the maps
 * hold. The programs' headers only use what is declared here. */
#ifndef KVIO_CONFIG_BPF_H
#define KVIO_CONFIG_BPF_H

#include "bpf/kvio_trace.h"

/* ---------------------------------------------------------------- rodata: what to trace */

const volatile bool rq_has_queue_arg = false; /* pre-5.11 block_rq_insert/issue(q, rq) */
const volatile __u32 targ_ndevs = 0;          /* -d: whole disks traced (0: every disk) */
const volatile __u32 targ_devs[KVIO_MAX_DEVS] = {};
const volatile __u32 targ_nstorage = 0; /* syscall fds count only on these devices (0: every regular file) */
const volatile __u32 targ_storage[KVIO_MAX_STORAGE_DEVS] = {};
const volatile __u64 lba_bucket_bytes = 10ULL << 30;
/* This kernel's O_DIRECT and O_APPEND open flags (trace/tracer.cpp sets them from the headers it was built with:
 * the values differ between architectures, and BTF carries no macros) */
const volatile __u32 o_direct_flag = 0;
const volatile __u32 o_append_flag = 0;

/* ---------------------------------------------------------------- rodata: task filters (filters.bpf.h) */

const volatile bool filter_pid = false;   /* only tgids in pid_filter */
const volatile bool follow_forks = false; /* children of filtered tgids join the filter */
const volatile __u32 targ_ncomms = 0;
const volatile char targ_comms[KVIO_MAX_COMMS][KVIO_COMM_LEN] __attribute__((aligned(8))) = {}; /* NUL-padded */
const volatile __u64 targ_cgroup = 0;

/* ---------------------------------------------------------------- rodata: what to record */

const volatile bool emit_events = false;
const volatile bool emit_syscalls = false;
const volatile bool uring_owner_by_req = false; /* NVMe present: passthrough commands find their owner by io_kiocb */
const volatile bool need_owner = false;         /* events or a task filter: track who submitted each request */
const volatile bool need_owner_detail = false;  /* events or --per-*: rq_owners keeps who submitted each request */
const volatile bool need_user_data = false; /* events: the io_uring SQE user_data active in each submitting thread */
const volatile __u8 group_by = KVIO_GROUP_NONE; /* enum kvio_group_by */
const volatile __u32 wakeup_mask = 2047;        /* wake the collector every wakeup_mask + 1 events a CPU submits */

/* ---------------------------------------------------------------- rodata: how (sizes and kernel features) */

const volatile bool task_storage = false; /* per-thread state in task local storage (thread_ios), else tid hashes */
/* Queue depth of a device with a slot is sampled at one issue in qd_sample_every (a power of two; 1: every command,
 * as events need), and the sample counts that many times in the QD histograms (slot_depth). */
const volatile __u32 qd_sample_every = 1;
/* --d2c-sample: 1 request in rq_sample_every (a power of two; 1: every one) gets in-flight state and is timed, in
 * histogram mode only (rq_state.bpf.h, rq_time_weight) */
const volatile __u32 rq_sample_every = 1;
/* With --d2c-sample on a kernel that counts each disk's finished requests per CPU (disk_stats.ios) and marks which
 * requests it counts (RQF_IO_STAT, not RQF_FLUSH_SEQ): the in-flight count is issues counted here minus the kernel's
 * own count of finished requests, so a completion no BPF program saw cannot stay in flight (rq_state.bpf.h,
 * kernel_done). Userspace probes BTF and sets it, with kernel_ncpus (possible CPUs, <= KVIO_MAX_KERNEL_CPUS). */
const volatile bool qd_kernel_done = false;
const volatile __u32 kernel_ncpus = 1;
/* rq_table and bio_table have rq_slot_mask + 1 and bio_slot_mask + 1 entries (userspace sizes them before load) */
const volatile __u32 rq_slot_mask = KVIO_RQ_SLOTS - 1;
const volatile __u32 bio_slot_mask = KVIO_BIO_SLOTS - 1;
/* The raw_tp twins of the issue and completion programs are attached as backups (block.bpf.h, primary_missed) */
const volatile bool backup_programs = false;

/* ---------------------------------------------------------------- written by userspace while tracing (.bss) */

/* --duty: when the current window's issue programs were attached (CLOCK_MONOTONIC ns, trace/duty.h), all ones in
 * the window's tail (issue programs detached), 0 without --duty. A completion without state of a request allocated
 * before it was issued outside the window: counted apart (KVIO_CNT_DUTY_BEFORE), not as unmatched. */
volatile __u64 duty_open_ns = 0;

#ifdef KVIO_BPF_TEST_HOOKS
/* Test builds only (test_hooks.bpf.h): each primary skips every Nth run, as if the kernel had. */
const volatile __u32 test_skip_every = 0;
const volatile __u32 test_lose_every = 0; /* completions only, with no backup */
#endif

/* ---------------------------------------------------------------- private map values */

/* An NVMe command between nvme_setup_cmd and nvme_complete_rq (nvme_starts). */
struct nvme_state {
    __u64 ts_setup;
    __u64 slba;
    __u32 dev, nsid, nlb, qd;
    __u16 qid, cid;
    __u8 opcode, ignored, has_owner, slot;
    struct kvio_owner owner;
};

/* A traced syscall between its entry and its exit (sys_starts, thread_io.sys). */
struct sys_state {
    __u64 ts;
    __u64 offset, count;
    __s32 fd;
    __u32 nr;
    /* with events (emit_syscalls): the file fd named at entry (files.bpf.h) and KVIO_SYSF_* */
    __u64 ino;
    __u64 size_inode; /* struct inode * whose i_size is read at exit */
    __u32 fs_dev, gen;
    __u32 flags;
    __u32 pad;
};

/* Per-thread state of the syscall and io_uring programs in the thread's task local storage, where this kernel lets
 * every program type use it (userspace probes; rodata task_storage): found from the task itself, no hash, no
 * bucket lock, freed with the thread. Elsewhere (6.1: tp_btf only) the tid-keyed hashes cur_udata, sys_starts,
 * last_write_exit and last_fadvise_exit hold the same facts. */
struct thread_io {
    __u64 user_data;         /* SQE user_data of the io_uring submission running in this thread, 0: none */
    __u64 last_write_exit;   /* exit of its last traced write since its last sync (CLOCK_MONOTONIC ns), 0: none */
    __u64 last_fadvise_exit; /* exit of its last fadvise since its last read, 0: none */
    struct sys_state sys;    /* the traced syscall in progress, sys.ts == 0: none */
};

/* Map keys of the small per-purpose arrays. */
enum { SPILL_RQ, SPILL_BIO, SPILLS };                          /* spill_live */
enum { NUM_GETRQ, NUM_INSERT, NUM_ISSUE, NUM_COMPLETE, NUMS }; /* ptr_numbers: one per program that converts */
enum { HOOK_ISSUE, HOOK_COMPLETE, HOOKS };                     /* primary_seen: the programs that have a backup */

/* A map of up to n entries; KVIO_ARRAY: an array (ARRAY or PERCPU_ARRAY) indexed by a __u32. */
#define KVIO_MAP(name, map_type, n, key_type, value_type)                                                              \
    struct {                                                                                                           \
        __uint(type, map_type);                                                                                        \
        __uint(max_entries, n);                                                                                        \
        __type(key, key_type);                                                                                         \
        __type(value, value_type);                                                                                     \
    } name SEC(".maps")
#define KVIO_ARRAY(name, map_type, n, value_type) KVIO_MAP(name, map_type, n, __u32, value_type)

/* ---------------------------------------------------------------- maps: in-flight block requests (rq_state.bpf.h) */

/* Slot tables (kvio_trace.h: rq_table, bio_table), sized by userspace before load, with hashes for what does not fit
 * (rq_spill: a plain hash, as an LRU could evict a live request; a full one is counted). */
KVIO_ARRAY(rq_table, BPF_MAP_TYPE_ARRAY, KVIO_RQ_SLOTS, struct kvio_rq_state);
KVIO_ARRAY(rq_owners, BPF_MAP_TYPE_ARRAY, KVIO_RQ_SLOTS, struct kvio_rq_owner);
KVIO_MAP(rq_spill, BPF_MAP_TYPE_HASH, 65536, __u64, struct kvio_rq_spilled);
KVIO_ARRAY(bio_table, BPF_MAP_TYPE_ARRAY, KVIO_BIO_SLOTS, struct kvio_bio_owner);
/* Per-CPU LRU lists: an update takes only this CPU's list lock. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __uint(map_flags, BPF_F_NO_COMMON_LRU);
    __type(key, __u64);
    __type(value, struct kvio_bio_owner);
} bio_spill SEC(".maps");
/* Entries now in rq_spill [SPILL_RQ] and bio_spill [SPILL_BIO]: a request or bio not in its table looks in the
 * hash only when this is not 0 (bio_spill can also lose entries to its LRU: then it stays above 0, which only
 * costs lookups). */
KVIO_ARRAY(spill_live, BPF_MAP_TYPE_ARRAY, SPILLS, __s64);
/* A BTF-typed pointer as a number (slot_table.bpf.h, ptr_number): one entry per program that converts. */
KVIO_ARRAY(ptr_numbers, BPF_MAP_TYPE_PERCPU_ARRAY, NUMS, __u64);
/* The request each primary program is handling on this CPU (block.bpf.h, primary_mark). */
KVIO_ARRAY(primary_seen, BPF_MAP_TYPE_PERCPU_ARRAY, HOOKS, __u64);
/* qd_kernel_done (rq_state.bpf.h, kernel_done): [0] the per-CPU address of primary_seen's element 0, read once from
 * the map's own kernel object; the scratch it is read through (a map pointer cannot be offset). */
struct pcpu_scratch {
    __u64 w[64];
};
KVIO_ARRAY(pcpu_base, BPF_MAP_TYPE_ARRAY, 1, __u64);
KVIO_ARRAY(pcpu_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct pcpu_scratch);
#ifdef KVIO_BPF_TEST_HOOKS
KVIO_ARRAY(primary_runs, BPF_MAP_TYPE_PERCPU_ARRAY, HOOKS, __u64); /* runs of each primary (test_skip_every) */
#endif

/* ---------------------------------------------------------------- maps: NVMe and io_uring */

KVIO_MAP(nvme_starts, BPF_MAP_TYPE_HASH, 16384, __u64, struct nvme_state);
/* io_kiocb -> submitter and SQE user_data, from io_uring_submit_req (passthrough has no block_getrq) */
KVIO_MAP(uring_req_owner, BPF_MAP_TYPE_LRU_HASH, 65536, __u64, struct kvio_owner);
KVIO_MAP(cur_udata, BPF_MAP_TYPE_HASH, 16384, __u32, __u64);

/* ---------------------------------------------------------------- maps: devices and their histograms */

/* Device slots: a traced device's histograms and in-flight count sit in arrays at its slot (an array lookup is
 * inlined by the verifier; a hash lookup hashes the key and walks a bucket). With -d the slot is the device's
 * position in targ_devs; without, userspace fills dev_slots with every disk present at start. Userspace sizes
 * the arrays to the slots it gave. Devices without a slot (hot-plugged, or more than KVIO_MAX_DEV_SLOTS) use
 * the dev-keyed hashes inflight and dev_hists, as do the per-queue NVMe histograms. */
KVIO_MAP(dev_slots, BPF_MAP_TYPE_HASH, KVIO_MAX_DEV_SLOTS, __u32, __u32);
KVIO_ARRAY(slot_hists, BPF_MAP_TYPE_PERCPU_ARRAY, KVIO_MAX_DEV_SLOTS, struct kvio_dev_hists);
/* The same histograms written by every other program (backups, a lost command found at issue): slot_hists's
 * block words have one writer per CPU, the completion program, which updates them without atomics; a program
 * that may run nested inside it must not touch them. Userspace adds the two sets. */
KVIO_ARRAY(rescue_hists, BPF_MAP_TYPE_PERCPU_ARRAY, KVIO_MAX_DEV_SLOTS, struct kvio_dev_hists);
/* --d2c-sample: what the primary issue program counts of the requests it does not time (block.bpf.h,
 * count_unsampled), one writer per CPU, plain adds; userspace adds it to the two sets above (sized to the slots
 * with --d2c-sample, else one entry: unused). */
KVIO_ARRAY(issue_hists, BPF_MAP_TYPE_PERCPU_ARRAY, KVIO_MAX_DEV_SLOTS, struct kvio_dev_hists);
KVIO_ARRAY(slot_depths, BPF_MAP_TYPE_ARRAY, KVIO_MAX_DEV_SLOTS, struct slot_depth);
KVIO_MAP(inflight, BPF_MAP_TYPE_HASH, 1024, __u32, __s64);
KVIO_MAP(dev_hists, BPF_MAP_TYPE_HASH, 4096, struct kvio_hist_key, struct kvio_hist);
KVIO_MAP(group_stats, BPF_MAP_TYPE_HASH, 4096, struct kvio_group_key, struct kvio_group_val);

/* ---------------------------------------------------------------- maps: syscalls */

/* Syscall-side histograms, per CPU: threads on several CPUs do not contend for their cache lines. */
KVIO_ARRAY(proc_hists, BPF_MAP_TYPE_PERCPU_ARRAY, KVIO_PROC_HISTS, struct kvio_hist);
KVIO_MAP(sys_starts, BPF_MAP_TYPE_HASH, 16384, __u32, struct sys_state);
KVIO_MAP(last_write_exit, BPF_MAP_TYPE_LRU_HASH, 16384, __u32, __u64);
KVIO_MAP(last_fadvise_exit, BPF_MAP_TYPE_LRU_HASH, 16384, __u32, __u64);
/* libaio contexts (aio_context_t) an io_submit on storage used: io_getevents on them is traced, on others not */
KVIO_MAP(aio_ctxs, BPF_MAP_TYPE_LRU_HASH, 4096, __u64, __u8);
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct thread_io);
} thread_ios SEC(".maps");
/* Syscall number of this architecture (<sys/syscall.h>, filled by userspace) -> enum kvio_syscall. */
KVIO_ARRAY(sys_nr_map, BPF_MAP_TYPE_ARRAY, KVIO_MAX_SYSCALL_NR, __u8);

/* ---------------------------------------------------------------- maps: filters, counters, output */

KVIO_MAP(pid_filter, BPF_MAP_TYPE_HASH, 8192, __u32, __u8);
KVIO_ARRAY(counters, BPF_MAP_TYPE_PERCPU_ARRAY, KVIO_COUNTERS, __u64);
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 16 << 20);
} events SEC(".maps");

#endif /* KVIO_CONFIG_BPF_H */
