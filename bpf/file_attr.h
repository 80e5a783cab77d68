/* file_attr.h — what `kvio trace --files` shares between the kernel (bpf/file_attr.bpf.h) and userspace
 * (trace/file_table.h): device commands and syscall bytes per file, in map file_stats (docs/trace.md "Per-file
 * attribution"). A file is its inode: number, generation and the kernel dev_t of its filesystem. A block command
 * record (kvio_cmd_event, src KVIO_SRC_BLOCK) with --files carries its file in the words NVMe records use for their
 * own fields: slba = inode number (0: no file), nlb = the filesystem's kernel dev_t, nsid = i_generation. */
#ifndef KVIO_FILE_ATTR_H
#define KVIO_FILE_ATTR_H

#include "bpf/kvio_trace.h"

#define KVIO_FILE_HIST_SLOTS 48 /* log2 slots of the per-file D2C (ns) and size (bytes) histograms: up to 2^47 */
struct kvio_file_key {
    __u64 ino;
    __u32 fs_dev; /* i_sb->s_dev */
    __u32 gen;    /* i_generation */
};
/* One direction (0 read, 1 write) of one file. Every word is added to atomically by the completing CPU, so each
 * costs a command its cache line: the command count is the size histogram's total and the size histogram's sum is
 * `bytes` (userspace derives both). */
struct kvio_file_dir {
    __u64 bytes;                      /* bytes of the device read/write commands that carried this file's data */
    __u64 d2c_sum;                    /* ns: the exact sum of the d2c histogram */
    __u64 app_calls, app_bytes;       /* read/write-family syscalls on the file and the bytes they returned */
    __u64 d2c[KVIO_FILE_HIST_SLOTS];  /* ns, log2 slots (kvio_log2_slot) */
    __u64 size[KVIO_FILE_HIST_SLOTS]; /* bytes per command, log2 slots: its total is the command count */
};
struct kvio_file_stats {
    struct kvio_file_dir dir[2];
};
enum kvio_file_source {
    KVIO_FILE_SRC_PAGE = 1,
    KVIO_FILE_SRC_SYSCALL = 2,
    KVIO_FILE_SRC_URING = 3,
    KVIO_FILE_SRC_DIO = 4, /* iomap direct I/O: the file of the bio's iocb (file_attr.bpf.h) */
};
/* First sight of a file in file_stats: userspace resolves its path now, before the file may be deleted. */
struct kvio_file_event {
    __u8 type; /* KVIO_EV_FILE */
    __u8 pad[7];
    struct kvio_file_key key;
};
#define KVIO_EV_FILE 3

/* --files with --events: one file's bytes of a block command whose bytes are not all one file's (bios of several
 * files merged into one request, or a file's data with metadata). The kernel writes a command's parts in
 * kvio_parts_event records before its kvio_cmd_event (reserved earlier in the same program run, so read earlier from
 * the ring buffer), up to KVIO_PARTS_PER_EVENT a record; the command's nparts says how many it wrote. A file may
 * come in two records of one command (a request of more files than the walk sums at once): readers add them up. */
#define KVIO_EV_PARTS        5
#define KVIO_PARTS_PER_EVENT 4 /* = KVIO_FILES_RQ_FILES (bpf/file_attr.bpf.h): one record per summed round */
struct kvio_file_part {
    __u64 ino;
    __u32 fs_dev; /* i_sb->s_dev, kernel dev_t */
    __u32 gen;
    __u64 bytes; /* of the command's bios that hold this file's pages (its last part also what no walked bio held) */
};
struct kvio_parts_event {
    __u8 type; /* KVIO_EV_PARTS */
    __u8 n;    /* parts used, 1..KVIO_PARTS_PER_EVENT */
    __u16 pad;
    __u32 dev;         /* the command's kernel dev_t (whole disk), sector and ts_complete: they join the parts to */
    __u64 sector;      /* its kvio_cmd_event */
    __u64 ts_complete; /* CLOCK_MONOTONIC ns */
    struct kvio_file_part part[KVIO_PARTS_PER_EVENT];
};

#endif /* KVIO_FILE_ATTR_H */
