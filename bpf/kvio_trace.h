/* kvio_trace.h — the contract between kvio_trace.bpf.c and the userspace collector.
 * Included by both BPF C (vmlinux.h types) and C++ (stdint types); nothing here is defined twice. */
#ifndef KVIO_TRACE_H
#define KVIO_TRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h> /* __u8 .. __u64, __s32, __s64 */
#endif

#define KVIO_COMM_LEN         16
#define KVIO_MAX_DEVS         8   /* -d filters */
#define KVIO_MAX_DEV_SLOTS    32  /* devices with per-CPU histograms; more (no -d) fall back to the dev_hists hash */
#define KVIO_MAX_KERNEL_CPUS  256 /* CPUs whose disk_stats the in-flight count sums (qd_kernel_done) */
#define KVIO_SLOT_NONE        0xffu
#define KVIO_MAX_STORAGE_DEVS 32   /* -d disks, their partitions and the devices stacked on them (syscall fd filter) */
#define KVIO_MAX_COMMS        4    /* -c filters */
#define KVIO_HIST_SLOTS       128  /* log2 uses 0..64; linear (qd, lba) all, last slot = overflow */
#define KVIO_MAX_SYSCALL_NR   1024 /* size of the syscall-number -> enum kvio_syscall table */
#define KVIO_MINORBITS        20   /* include/linux/kdev_t.h */
#define KVIO_MKDEV(ma, mi)    (((__u32)(ma) << KVIO_MINORBITS) | (__u32)(mi))

/* Histogram slot rules, the same on both sides (common/histogram.h uses these; tests/unit/common_test.cpp checks
 * them against the definitions below). Log2: slot 0 holds value 0, slot k >= 1 holds [2^(k-1), 2^k), i.e. the
 * bit length of v, found by halving the candidate width (no loop: the verifier sees straight-line code). Linear:
 * slot k holds [k * width, (k + 1) * width). Either way a slot past the last one counts in the last. */
#ifdef __cplusplus
#define KVIO_SLOT_FN constexpr inline
#else
#define KVIO_SLOT_FN static inline
#endif
KVIO_SLOT_FN __u32 kvio_log2_slot(__u64 v)
{
    __u32 r = 0, shift;
    if (!v)
        return 0;
    shift = (v > 0xffffffffULL) << 5;
    v >>= shift;
    r |= shift;
    shift = (v > 0xffff) << 4;
    v >>= shift;
    r |= shift;
    shift = (v > 0xff) << 3;
    v >>= shift;
    r |= shift;
    shift = (v > 0xf) << 2;
    v >>= shift;
    r |= shift;
    shift = (v > 0x3) << 1;
    v >>= shift;
    r |= shift;
    r |= (__u32)(v >> 1);
    return r + 1;
}

KVIO_SLOT_FN __u64 kvio_linear_slot(__u64 v, __u64 width) { return v / (width ? width : 1); }

/* NVMe I/O command opcodes (NVM Express NVM Command Set): the `opcode` of NVMe event records (docs/formats.md). */
enum kvio_nvme_opcode {
    KVIO_NVME_FLUSH = 0x00,
    KVIO_NVME_WRITE = 0x01,
    KVIO_NVME_READ = 0x02,
    KVIO_NVME_WRITE_ZEROES = 0x08,
    KVIO_NVME_DSM = 0x09, /* dataset management: deallocate (discard) */
};

/* One little-endian 8-byte word of a NUL-terminated name (task->comm) with every byte from its first NUL on
 * cleared; *ended: a NUL was seen in this word or an earlier one (then the word is 0). (v - 0x01..) & ~v & 0x80.. has
 * its lowest set bit in v's first zero byte (Hacker's Delight 6-1; bits above it may be false positives, unused).
 * The BPF programs read the current comm as two such words; tests/unit/trace_format_test.cpp checks it. */
static inline __u64 kvio_comm_word_clip(__u64 v, int *ended)
{
    if (*ended)
        return 0;
    __u64 z = (v - 0x0101010101010101ULL) & ~v & 0x8080808080808080ULL;
    if (!z)
        return v;
    *ended = 1;
    return v & (((z & (~z + 1)) >> 7) - 1);
}

/* Histogram ids. Per device: key {dev, id, qid}; per process set: index into an array. */
enum kvio_dev_hist {
    KVIO_H_D2C_READ,
    KVIO_H_D2C_WRITE,
    KVIO_H_Q2D_READ,
    KVIO_H_Q2D_WRITE,
    KVIO_H_BSSPLIT_READ,
    KVIO_H_BSSPLIT_WRITE,
    KVIO_H_QD_READ,
    KVIO_H_QD_WRITE,
    KVIO_H_LBA_READ,
    KVIO_H_LBA_WRITE,
    KVIO_H_NVME_D2C_READ, /* nvme_setup_cmd -> nvme_complete_rq */
    KVIO_H_NVME_D2C_WRITE,
    KVIO_H_NVME_D2C_QUEUE, /* per NVMe queue (key.qid), both directions */
    KVIO_H_OTHER_CMDS,     /* flush/discard/other: bytes (log2), count = commands */
    KVIO_H_FLUSH_CMDS,     /* of KVIO_H_OTHER_CMDS: flushes */
    KVIO_H_DISCARD_CMDS,   /* of KVIO_H_OTHER_CMDS: discards and secure erases */
    KVIO_DEV_HISTS
};

/* Failed commands (completed with an error: blk_status_t != 0) per device and direction, in the dev_hists hash
 * (failures are rare: no room in the per-CPU slot_hists), bytes (log2), count = commands. Numbered apart from enum
 * kvio_dev_hist and enum kvio_bt_hist. */
enum kvio_failed_hist {
    KVIO_H_FAILED_READ = 48,
    KVIO_H_FAILED_WRITE,
    KVIO_H_FAILED_OTHER, /* flush, discard, write zeroes, driver commands */
    KVIO_H_FAILED_END
};

enum kvio_proc_hist {
    KVIO_H_VFS_READ,
    KVIO_H_VFS_WRITE,
    KVIO_H_FSYNC,
    KVIO_H_WRITE_FSYNC_GAP,
    KVIO_H_FADVISE_READ_GAP,
    KVIO_H_AIO_SUBMIT,    /* io_submit latency on storage (the submission path of libaio) */
    KVIO_H_AIO_GETEVENTS, /* io_getevents/io_pgetevents latency on a context that submitted to storage */
    KVIO_PROC_HISTS
};

struct kvio_hist_key {
    __u32 dev; /* kernel dev_t of the whole disk */
    __u16 id;  /* enum kvio_dev_hist */
    __u16 qid; /* NVMe queue for KVIO_H_NVME_D2C_QUEUE, else 0 */
};

struct kvio_hist {
    __u64 slots[KVIO_HIST_SLOTS];
    __u64 sum;
};

/* Every histogram of one device (map slot_hists, per-CPU, indexed by the device's slot). Index by enum
 * kvio_dev_hist; KVIO_H_NVME_D2C_QUEUE is per queue and lives in the dev_hists hash instead. */
struct kvio_dev_hists {
    struct kvio_hist h[KVIO_DEV_HISTS];
};

/* Per-CPU counters (PERCPU_ARRAY index). Userspace sums the CPUs and reports each. */
enum kvio_counter {
    KVIO_CNT_RB_DROPS,           /* ring buffer full: event lost */
    KVIO_CNT_UNMATCHED_COMPLETE, /* complete without a seen issue (in flight before start) */
    KVIO_CNT_NEGATIVE_DELTA,     /* a latency that came out negative: discarded */
    KVIO_CNT_MAP_FULL,           /* in-flight map update failed */
    KVIO_CNT_PARTIAL_COMPLETE,   /* block_rq_complete for part of a request */
    KVIO_CNT_EVENTS,             /* events submitted */
    KVIO_CNT_NO_OWNER,           /* a task filter or --per-process/--per-cgroup active, submitter unknown: request
                                  * not counted (filters) or in no group (groups) */
    KVIO_CNT_STALE,              /* in-flight entry of an earlier life of a request, replaced */
    KVIO_CNT_RESCUED,            /* issue/complete the primary program missed (recursion), handled by the backup */
    KVIO_CNT_LOST_COMPLETE,      /* issued request whose completion no program saw: reported without D2C */
    KVIO_CNT_RQ_SPILLS,          /* requests whose rq_table probes were all in flight: kept in the rq_spill hash */
    KVIO_CNT_OWNER_SPILLS,       /* bio owners whose bio_table probes were all taken: kept in the bio_spill hash */
    KVIO_CNT_COMPLETE_RUNS,      /* completion program runs for a whole request of a traced device (not partial):
                                  * the kernel's completions minus these are completions no program ran for */
    KVIO_CNT_DUTY_BEFORE,        /* --duty: a completion seen of a request issued outside a window (excluded) */
    KVIO_COUNTERS
};

/* Normalised request op and flags (kernel REQ_OP_* values are fixed: include/linux/blk_types.h). */
enum kvio_op {
    KVIO_OP_READ = 0,
    KVIO_OP_WRITE = 1,
    KVIO_OP_FLUSH = 2,
    KVIO_OP_DISCARD = 3,
    KVIO_OP_SECURE_ERASE = 5,
    KVIO_OP_WRITE_ZEROES = 9,
    KVIO_OP_DRV_IN = 34,
    KVIO_OP_DRV_OUT = 35
};
#define KVIO_F_SYNC     (1u << 8)
#define KVIO_F_META     (1u << 9)
#define KVIO_F_FUA      (1u << 10)
#define KVIO_F_PREFLUSH (1u << 11)
#define KVIO_F_RAHEAD   (1u << 12)
#define KVIO_OP_MASK    0xffu

/* --per-process / --per-cgroup (biotop): totals and D2C of block read/write commands per submitter, in map
 * group_stats. Commands whose submitter is unknown are not grouped (the device totals still count them). */
enum kvio_group_by { KVIO_GROUP_NONE = 0, KVIO_GROUP_PROCESS = 1, KVIO_GROUP_CGROUP = 2 };
struct kvio_group_key {
    __u64 id;  /* tgid (process) or cgroup v2 id */
    __u32 dev; /* kernel dev_t, whole disk */
    __u32 op;  /* KVIO_OP_READ or KVIO_OP_WRITE */
};
struct kvio_group_val {
    char comm[KVIO_COMM_LEN]; /* submitter's comm when the group was created (process grouping) */
    __u64 cmds, bytes;
    struct kvio_hist d2c; /* ns, log2 slots */
};

/* --breakdown (bpf/breakdown.bpf.h): block layer events counted per device and direction, map bt_counts. */
enum kvio_bt_kind {
    KVIO_BT_RQ_MERGE,   /* block_rq_merge: a request merged into another (freed without completing) */
    KVIO_BT_BACKMERGE,  /* block_bio_backmerge: a bio appended to a queued request */
    KVIO_BT_FRONTMERGE, /* block_bio_frontmerge: a bio prepended to a queued request */
    KVIO_BT_SPLIT,      /* block_split: a bio split in two (device limits such as max_sectors_kb) */
    KVIO_BT_REQUEUE,    /* block_rq_requeue: a request given back to the queue, to be issued again */
    KVIO_BT_KINDS
};
enum kvio_bt_dir { KVIO_BT_READ, KVIO_BT_WRITE, KVIO_BT_OTHER, KVIO_BT_DIRS };
/* --breakdown: the stages of each block read and write (map bt_hists, key kvio_hist_key, ns, log2 slots). Numbered
 * apart from enum kvio_dev_hist, whose ids index the per-CPU slot_hists. */
enum kvio_bt_hist {
    KVIO_BT_H_Q2G_READ = 64, /* block_bio_queue -> block_getrq */
    KVIO_BT_H_Q2G_WRITE,
    KVIO_BT_H_G2I_READ, /* block_getrq -> block_rq_insert */
    KVIO_BT_H_G2I_WRITE,
    KVIO_BT_H_I2D_READ, /* block_rq_insert -> block_rq_issue */
    KVIO_BT_H_I2D_WRITE,
    KVIO_BT_H_G2D_READ, /* block_getrq -> block_rq_issue, requests issued without insert */
    KVIO_BT_H_G2D_WRITE,
    KVIO_BT_H_D2C_READ, /* block_rq_issue -> block_rq_complete, of the requests in the stages above */
    KVIO_BT_H_D2C_WRITE,
    KVIO_BT_H_Q2C_READ, /* block_bio_queue -> block_rq_complete */
    KVIO_BT_H_Q2C_WRITE,
    KVIO_BT_H_END
};
struct kvio_bt_key {
    __u32 dev;  /* kernel dev_t of the tracepoint record (bio events: the partition's) */
    __u16 kind; /* enum kvio_bt_kind */
    __u16 dir;  /* enum kvio_bt_dir, from the record's rwbs */
};

enum kvio_event_type { KVIO_EV_CMD = 1, KVIO_EV_SYSCALL = 2, KVIO_EV_STAGES = 4 }; /* 3, 5: file_attr.h */
enum kvio_src { KVIO_SRC_BLOCK = 0, KVIO_SRC_NVME = 1 };

/* Who submitted an I/O: the task at block_getrq (or insert/issue outside a kernel thread). */
struct kvio_owner {
    __u32 pid; /* tgid */
    __u32 tid;
    __u64 user_data; /* io_uring SQE user_data active in that task, 0 if none */
    char comm[KVIO_COMM_LEN];
    __u32 passes; /* the task passed -p/-c/--cgroup when it was recorded (1 without filters) */
    __u32 pad;
};

/* In-flight state of one block request: one 64-byte slot of map rq_table (an array: its lookups are inlined by
 * the verifier, with no lock and no hash function), found by open addressing on a hash of the struct request *.
 * A slot keeps the pointer of the last request that used it (requests are preallocated per tag and come back),
 * so a request usually finds its own slot at the first probe. A request whose probes all hold other requests in
 * flight goes to the rq_spill hash instead (counted: KVIO_CNT_RQ_SPILLS). Userspace reads what is left at stop:
 * live, issued slots are commands whose completion was never seen. */
#define KVIO_RQ_SLOTS    8192 /* default table size (a power of two); more in flight than this is spilled */
#define KVIO_SLOT_PROBES 4    /* slots a key may use: its hash and the next three */
#define KVIO_SLOT_LIVE   1ULL /* low bit of kvio_rq_state.key: in flight (pointers are 8-byte aligned) */
struct kvio_rq_state {
    __u64 key;     /* struct request * | KVIO_SLOT_LIVE while in flight; only the owning request changes a live slot */
    __u32 gen;     /* low 32 bits of request->start_time_ns at allocation: tells a reused request from the one we saw */
    __u32 file_id; /* --files: the file of a direct-I/O request of one bio, found at its issue (file_attr.bpf.h
                    * files_at_issue: in this line, which the completion reads anyway); 0: none found then */
    __u64 ts_insert, ts_issue; /* CLOCK_MONOTONIC ns; 0 = not seen */
    __u64 sector;              /* 512-byte units, whole disk */
    __u32 dev, opf, bytes, qd;
    __u8 ignored; /* filtered out: kept only so its completion is not "unmatched" */
    __u8 issued;
    __u8 has_owner;
    __u8 slot;       /* index into slot_hists / slot_depths, KVIO_SLOT_NONE: the dev-keyed hashes */
    __u32 qd_weight; /* commands qd stands for in the QD histograms (qd_sample_every), 0: depth not sampled */
};

/* Who submitted a request, beside its rq_table slot (map rq_owners, same index) or in its rq_spill entry; written
 * only when something reports it (events, --per-process, --per-cgroup): a task filter needs only the verdict. */
struct kvio_rq_owner {
    struct kvio_owner owner;
    __u64 cgroup; /* --per-cgroup: the submitter's cgroup v2 id (cgroup directory inode), else 0 */
};

/* A spilled request (map rq_spill, keyed by struct request *): its state and owner together. */
struct kvio_rq_spilled {
    struct kvio_rq_state s;
    struct kvio_rq_owner o;
};

/* Who submitted a bio, from block_getrq until its request takes it (insert or issue): a 64-byte slot of map
 * bio_table, open addressing on the struct bio * like rq_table, or the bio_spill LRU hash when the probes are
 * taken (counted: KVIO_CNT_OWNER_SPILLS). */
#define KVIO_BIO_SLOTS 8192
struct kvio_bio_owner {
    __u64 key; /* struct bio * | KVIO_SLOT_LIVE until a request took the owner */
    __u64 pad; /* unused, keeps the slot at 64 bytes. A live slot no request took (its bio merged away) stays
                * live until that bio pointer comes back to block_getrq (on_getrq): there is no age limit */
    struct kvio_owner owner;
    __u64 cgroup; /* --per-cgroup: the submitter's cgroup v2 id, else 0 */
};

/* One completed device command (block request or NVMe command). */
struct kvio_cmd_event {
    __u8 type; /* KVIO_EV_CMD */
    __u8 src;  /* enum kvio_src */
    __u8 has_insert;
    __u8 has_user_data;
    __u32 dev;                              /* kernel dev_t, whole disk */
    __u32 opf;                              /* kvio op | KVIO_F_* */
    __u32 bytes;                            /* block: request bytes; nvme: 0 (userspace: nlb * LBA size) */
    __u64 sector;                           /* 512-byte units, whole disk */
    __u64 ts_insert, ts_issue, ts_complete; /* CLOCK_MONOTONIC ns */
    __u32 qd;                               /* in flight at dispatch, this one included */
    __s32 error;                            /* blk_status_t (block) or NVMe status (nvme) */
    struct kvio_owner owner;
    /* NVMe only */
    __u16 qid, cid;
    __u32 nsid;
    __u8 opcode;
    __u8 complete_lost; /* the completion was never seen: no D2C; ts_complete is when the tracer found it lost (the
                         * request's next life, or a merge), 0 when found at stop */
    __u16 nparts;       /* --files with --events: file parts the kernel wrote for this command in kvio_parts_event
                         * records before it (bpf/file_attr.h), 0: its bytes are one file's or no file's */
    __u32 nlb;          /* number of LBAs (cdw12[15:0] + 1) */
    __u64 slba;
};

/* --breakdown with --events: the stages of one completed block read or write (bpf/breakdown.bpf.h, bt_rq_complete),
 * the very stamps its bt_* histogram values were taken from, so the stream's stages and the histograms count the
 * same requests with the same values (docs/formats.md, "Block stages record"). Stamps: CLOCK_MONOTONIC ns of the
 * breakdown programs' own runs (block_bio_queue, block_getrq, block_rq_insert, the last block_rq_issue, the final
 * block_rq_complete), not the "cmd" record's (other programs of the same tracepoints: a few microseconds apart). */
struct kvio_stages_event {
    __u8 type;       /* KVIO_EV_STAGES */
    __u8 has_insert; /* block_rq_insert was seen: G2I + I2D; else G2D (issued without insert) */
    __u16 pad;
    __u32 dev;                                                  /* kernel dev_t, whole disk */
    __u32 opf;                                                  /* kvio op | KVIO_F_*: a read or a write */
    __u32 bytes;                                                /* request bytes at completion */
    __u64 sector;                                               /* 512-byte units, whole disk */
    __u64 ts_queue, ts_getrq, ts_insert, ts_issue, ts_complete; /* ts_insert 0 without has_insert */
};

enum kvio_syscall {
    KVIO_SYS_READ,
    KVIO_SYS_WRITE,
    KVIO_SYS_PREAD64,
    KVIO_SYS_PWRITE64,
    KVIO_SYS_READV,
    KVIO_SYS_WRITEV,
    KVIO_SYS_PREADV,
    KVIO_SYS_PWRITEV,
    KVIO_SYS_PREADV2,
    KVIO_SYS_PWRITEV2,
    KVIO_SYS_FSYNC,
    KVIO_SYS_FDATASYNC,
    KVIO_SYS_FADVISE64,
    KVIO_SYS_IO_URING_ENTER,
    KVIO_SYS_IO_SUBMIT,    /* libaio: io_submit(ctx, nr, iocbpp); its file is the first iocb's aio_fildes */
    KVIO_SYS_IO_GETEVENTS, /* io_getevents and io_pgetevents(ctx, min_nr, nr, ...) on a context io_submit used */
    KVIO_SYSCALLS
};

/* kvio_syscall_event.flags */
#define KVIO_SYSF_FILE   1u /* ino, fs_dev, gen, file_size and KVIO_SYSF_DIRECT were recorded */
#define KVIO_SYSF_DIRECT 2u /* the file was open with O_DIRECT */
#define KVIO_SYSF_POS    4u /* read/write/readv/writev: offset is where in the file the call started (f_pos) */

/* Which syscall records carry `offset` and `count` (docs/formats.md): the positioned calls and fadvise64 an
 * offset, and read/write/readv/writev when KVIO_SYSF_POS; every call but the sync calls and io_uring_enter a
 * count. The JSON writer and the readers share these. */
KVIO_SLOT_FN int kvio_syscall_has_offset(__u32 nr, __u32 flags)
{
    return (flags & KVIO_SYSF_POS) || nr == KVIO_SYS_PREAD64 || nr == KVIO_SYS_PWRITE64 || nr == KVIO_SYS_PREADV ||
           nr == KVIO_SYS_PWRITEV || nr == KVIO_SYS_PREADV2 || nr == KVIO_SYS_PWRITEV2 || nr == KVIO_SYS_FADVISE64;
}
KVIO_SLOT_FN int kvio_syscall_has_count(__u32 nr)
{
    return nr != KVIO_SYS_FSYNC && nr != KVIO_SYS_FDATASYNC && nr != KVIO_SYS_IO_URING_ENTER;
}

/* One traced syscall. Captures (kvio.events.bin/1) of an earlier kvio hold the first KVIO_SYSCALL_EVENT_V1_BYTES
 * of it, with pad where flags is now: readers take them as flags 0. */
struct kvio_syscall_event {
    __u8 type;  /* KVIO_EV_SYSCALL */
    __u8 nr;    /* enum kvio_syscall */
    __u8 flags; /* KVIO_SYSF_* */
    __u8 pad;
    __s32 fd;
    __u64 ts_enter, ts_exit;
    __s64 ret;
    __u64 offset; /* positioned calls: their offset; KVIO_SYSF_POS: the file position at entry; fadvise: offset */
    __u64 count;  /* bytes requested (read/write), iovcnt (v-calls), fadvise: len */
    __u32 pid, tid;
    char comm[KVIO_COMM_LEN];
    /* KVIO_SYSF_FILE: the file fd named at entry */
    __u64 ino;       /* i_ino */
    __u64 file_size; /* i_size at exit, bytes (a block device node: the device's size) */
    __u32 fs_dev;    /* kernel dev_t of the inode's filesystem (i_sb->s_dev) */
    __u32 gen;       /* i_generation */
};
#define KVIO_SYSCALL_EVENT_V1_BYTES 72 /* sizeof(struct kvio_syscall_event) before ino .. gen */

/* In flight on a device with a slot = issued - completed (slot_depths): two counters 128 bytes apart (a value
 * starts only 8-byte aligned), so each stays in the cache of the CPU that adds to it (the issuing CPU's, and the
 * completing CPU's, often another: a loop device completes on a kworker), where one shared counter's line moved
 * between them twice per command (~150 ns/cmd on a loop device, docs/performance.md). */
struct slot_depth {
    __s64 issued; /* counted issues (issue_depth) */
    __u8 pad0[120];
    __s64 completed; /* of those, completed, requeued or reported lost (inflight_dec); qd_kernel_done: requeued */
    __s64 kbase;     /* qd_kernel_done: the kernel's finished-request count at the trace's first issue, plus the
                      * requests in flight when it began (their issues are not counted here; userspace sets those) */
    __s64 kbase_set; /* kbase holds the finished count (rq_state.bpf.h, kernel_base) */
    __u8 pad1[104];
};

#endif /* KVIO_TRACE_H */
