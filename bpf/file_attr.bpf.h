/* file_attr.bpf.h — --files: which file each device command moves, with no help from the traced process
 * (docs/trace.md "Per-file attribution"). Four sources, tried in this order:
 *   dio      direct I/O through iomap (ext4, xfs, btrfs: docs/trace.md "Per-file attribution"): the request's
 *            first bio (or the bio it was split from) ends in iomap_dio_bio_end_io, and its bi_private is the
 *            struct iomap_dio whose iocb names the file; read at issue for a request of one bio (files_at_issue:
 *            the file's number rides in the request's state), else at completion, while the dio holds the bio.
 *            Nothing runs at bio submission: userspace sets files_dio_end_io from /proc/kallsyms, and with it the
 *            syscall and uring sources below are not attached (KVIO_TRACE_FILES_FROM_SUBMITTER=1 forces them);
 *   page     the request's first page is in a regular file's page cache on the same disk (buffered writeback,
 *            readahead, fsync): rq->bio->bi_io_vec[0].bv_page->mapping->host, read at completion, when the bios are
 *            still on the request (block_rq_complete runs at the start of blk_update_request);
 *   syscall  direct I/O: the file the read/write-family syscall in progress named (files.bpf.h file_of_fd, kept
 *            in the thread's syscall state), taken at block_getrq, which runs in the submitting thread;
 *   uring    io_uring: the file of the SQE being submitted (io_kiocb->file at io_uring_submit_req), until the
 *            io_uring_enter it runs in returns.
 * The syscall and uring sources are kept per bio in bio_files (a slot table like bio_table) until the request
 * completes. Per file, map file_stats counts commands, bytes, D2C and sizes per direction, and the bytes the
 * read/write-family syscalls returned on it; a file's first entry is announced to userspace (KVIO_EV_FILE) so it can
 * resolve the path before the file may be deleted. Everything here is compiled out unless track_files is set. */
#ifndef KVIO_FILE_ATTR_BPF_H
#define KVIO_FILE_ATTR_BPF_H

#include "bpf/file_attr.h"
#include "bpf/files.bpf.h"
#include "bpf/core_fixes.bpf.h"
#include "bpf/owner.bpf.h"

const volatile bool track_files = false; /* --files */
/* --files: the addresses of iomap_dio_bio_end_io and bio_chain_endio (/proc/kallsyms), 0: no dio source (the
 * syscall and uring sources instead) */
const volatile __u64 files_dio_end_io = 0;
const volatile __u64 files_chain_end_io = 0;

/* The submitting context's file is wanted (syscall and uring sources): --files without the dio source. */
static __always_inline bool files_from_submitter(void) { return track_files && !files_dio_end_io; }

/* PAGE_MAPPING_ANON and PAGE_MAPPING_MOVABLE (include/linux/page-flags.h): page->mapping of an anonymous or movable
 * page is not a struct address_space * and has one of these low bits set. */
#define KVIO_PAGE_MAPPING_FLAGS 3UL

/* A bio's file from the submitting context (syscall or uring source), until its request completes. */
struct bio_file {
    __u64 key; /* struct bio * | KVIO_SLOT_LIVE */
    struct kvio_file_key file;
    __u64 pad;
};
KVIO_ARRAY(bio_files, BPF_MAP_TYPE_ARRAY, KVIO_BIO_SLOTS, struct bio_file);
/* The file of the SQE the thread is submitting (uring source): task storage, else keyed by tid. */
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct kvio_file_key);
} uring_files SEC(".maps");
KVIO_MAP(uring_files_by_tid, BPF_MAP_TYPE_LRU_HASH, 16384, __u32, struct kvio_file_key);
/* Allocated as files are first seen (userspace sizes it): an update of a known file is in place. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct kvio_file_key);
    __type(value, struct kvio_file_stats);
} file_stats SEC(".maps");
/* [0] commands with no file (metadata, journal, flushes' data-less bios, unknown), [1] files file_stats had no room
 * for, [2..5] commands attributed by the page, syscall, uring and dio sources, [6] write commands of a process the
 * task filter leaves out admitted as writeback of a file the traced processes wrote (files_follow_writeback), [7]
 * files the traced processes wrote that written_files had no room for (their writeback is left out), [8] completing
 * requests of more bios than files_on_complete walks (KVIO_FILES_RQ_BIOS), [9] file parts of commands (--events,
 * kvio_parts_event) the ring buffer had no room for, [10] of [5], the commands whose file was found at issue
 * (files_at_issue). */
enum {
    FILES_NONE,
    FILES_FULL,
    FILES_BY_PAGE,
    FILES_BY_SYSCALL,
    FILES_BY_URING,
    FILES_BY_DIO,
    FILES_WB_FOLLOWED,
    FILES_WRITTEN_FULL,
    FILES_CHAIN_CUT,
    FILES_PARTS_LOST,
    FILES_DIO_AT_ISSUE,
    FILES_COUNTERS
};
KVIO_ARRAY(file_counters, BPF_MAP_TYPE_PERCPU_ARRAY, FILES_COUNTERS, __u64);

/* --files under a task filter (-p, -c, --cgroup, -- COMMAND): the files the traced processes wrote (a write-family
 * syscall returned bytes on them), so that their writeback, which flusher threads, kswapd or another process's sync
 * submit, counts for the trace (docs/trace.md, "Writeback under a command filter"). Allocated as files are written
 * (userspace sizes it, 1 entry without a task filter); a file it has no room for is counted (FILES_WRITTEN_FULL). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct kvio_file_key);
    __type(value, __u8);
} written_files SEC(".maps");

static const struct kvio_file_stats zero_file_stats;

static __always_inline void files_count_n(__u32 which, __u64 n)
{
    __u64 *c = bpf_map_lookup_elem(&file_counters, &which);
    if (c)
        *c += n;
}

static __always_inline void files_count(__u32 which) { files_count_n(which, 1); }

/* The address_space of the first page of `bio` (through the head page of a large folio), as a number; 0 for
 * anonymous memory (a direct-I/O buffer), a swap or KSM page, or no page. 3 or 4 probe reads. */
static __always_inline __u64 bio_page_mapping(struct bio *bio)
{
    struct page *page = BPF_CORE_READ(bio, bi_io_vec, bv_page);
    if (!page)
        return 0;
    unsigned long head = BPF_CORE_READ(page, compound_head);
    if (head & 1)
        page = (struct page *)(head - 1);
    __u64 m = (__u64)BPF_CORE_READ(page, mapping);
    return (m & KVIO_PAGE_MAPPING_FLAGS) ? 0 : m;
}

/* The inode whose page cache holds the first page of `bio`; NULL when bio_page_mapping has none. 4 probe reads. */
static __always_inline struct inode *bio_page_host(struct bio *bio)
{
    __u64 m = bio_page_mapping(bio);
    return m ? BPF_CORE_READ((struct address_space *)m, host) : NULL;
}

/* The regular file `host` (an inode, or NULL), when it lives on disk `dev`: its key in *fk. 5 probe reads. */
static __always_inline bool file_of_host(struct inode *host, __u32 dev, struct kvio_file_key *fk)
{
    if (!host || (BPF_CORE_READ(host, i_mode) & S_IFMT) != S_IFREG)
        return false;
    struct super_block *sb = BPF_CORE_READ(host, i_sb);
    if (!sb || gendisk_dev(BPF_CORE_READ(sb, s_bdev, bd_disk), false) != dev)
        return false;
    fk->ino = BPF_CORE_READ(host, i_ino);
    fk->fs_dev = BPF_CORE_READ(sb, s_dev);
    fk->gen = BPF_CORE_READ(host, i_generation);
    return fk->ino != 0;
}

/* The regular file whose page cache holds the first page of `bio`, when that file lives on disk `dev` (so an
 * O_DIRECT buffer mapped from tmpfs or another disk's file, and the block device's own cache of metadata, are not
 * taken for the file the I/O is about). False: no such page. A tail page of a large folio (compound_head bit 0 set)
 * stands for its head, whose mapping is the folio's. Probe reads throughout (the page pointer is a number here):
 * 8 of them for a file's page. */
static __always_inline bool file_of_bio_page(struct bio *bio, __u32 dev, struct kvio_file_key *fk)
{
    return bio && file_of_host(bio_page_host(bio), dev, fk);
}

/* Is the first page of `bio` in the page cache of disk `dev`: a regular file's on it (file_of_bio_page finds the file
 * at completion) or a block device's own (filesystem metadata, the journal: no file's data)? False for a direct-I/O
 * buffer: anonymous memory, or a page of another filesystem's file. 5 to 8 probe reads. */
static __always_inline bool bio_page_in_disk_cache(struct bio *bio, __u32 dev)
{
    struct inode *host = bio_page_host(bio);
    if (!host)
        return false;
    __u32 fmt = BPF_CORE_READ(host, i_mode) & S_IFMT;
    if (fmt == S_IFBLK)
        return true;
    return fmt == S_IFREG && gendisk_dev(BPF_CORE_READ(host, i_sb, s_bdev, bd_disk), false) == dev;
}

/* The file of the syscall the current thread is in (its state from on_sys_enter, which records the file with
 * track_files), or of the io_uring SQE it is submitting. *src: KVIO_FILE_SRC_SYSCALL or KVIO_FILE_SRC_URING. */
static __always_inline bool file_of_current(struct kvio_file_key *fk, __u8 *src)
{
    struct sys_state *st;
    struct kvio_file_key *u;
    if (task_storage) {
        struct thread_io *t = current_thread_io(false);
        st = t && t->sys.ts ? &t->sys : 0;
        u = bpf_task_storage_get(&uring_files, bpf_get_current_task_btf(), 0, 0);
    } else {
        __u32 tid = (__u32)bpf_get_current_pid_tgid();
        st = bpf_map_lookup_elem(&sys_starts, &tid);
        u = bpf_map_lookup_elem(&uring_files_by_tid, &tid);
    }
    if (st && (st->flags & KVIO_SYSF_FILE) && st->ino) {
        fk->ino = st->ino;
        fk->fs_dev = st->fs_dev;
        fk->gen = st->gen;
        *src = KVIO_FILE_SRC_SYSCALL;
        return true;
    }
    if (u && u->ino) {
        *fk = *u;
        *src = KVIO_FILE_SRC_URING;
        return true;
    }
    return false;
}

/* block_getrq, in the submitting thread: a bio whose pages are in no page cache of the disk (direct I/O) takes the
 * file of the syscall or SQE in progress; metadata a syscall reads on its way (the block device's cache) does not. A
 * live slot of the same bio pointer is an earlier life's: overwritten. */
static __always_inline int files_on_getrq(struct bio *bio, bool typed)
{
    if (!bio)
        return 0;
    __u32 dev = bio_dev(bio, typed);
    if (targ_ndevs && !dev_passes(dev))
        return 0;
    /* the thread's file first: most bios are submitted outside a traced syscall or SQE (writeback, other tasks), and
     * it costs two task-storage lookups where the page costs eight probe reads */
    struct kvio_file_key fk = {};
    __u8 src = 0;
    if (!file_of_current(&fk, &src) || bio_page_in_disk_cache(bio, dev))
        return 0;
    __u64 key = typed ? ptr_number(NUM_GETRQ, bio) : (__u64)bio;
    if (!key)
        return 0;
    __u32 idx = 0;
    __u64 *k = slot_find(&bio_files, bio_slot_mask, key, &idx);
    if (!slot_live(k))
        k = slot_claim(&bio_files, bio_slot_mask, key, k, &idx);
    if (!k) {
        files_count(FILES_FULL);
        return 0;
    }
    struct bio_file *b = (struct bio_file *)k;
    b->file = fk;
    b->pad = src;
    return 0;
}

/* bpf_rdonly_cast (a kfunc of 6.2+): a kernel address as a typed pointer whose fields are read by plain loads, which
 * the JIT guards as it guards probe reads, at a fraction of a helper call's cost. Weak: a kernel without it loads
 * the object, never the one program that calls it (block_rq_issue_cast_btf, chosen by userspace). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* The file of direct-I/O `dio` (a struct iomap_dio, as a number) into *fk: through bpf_rdonly_cast when `cast` (6
 * plain loads), else 6 probe reads. */
static __always_inline bool file_of_dio(__u64 dio, bool cast, struct kvio_file_key *fk)
{
    if (cast) {
        struct iomap_dio *d = bpf_rdonly_cast((void *)dio, bpf_core_type_id_kernel(struct iomap_dio));
        struct inode *ci = d->iocb->ki_filp->f_inode;
        if (!ci)
            return false;
        fk->ino = ci->i_ino;
        fk->fs_dev = ci->i_sb->s_dev;
        fk->gen = ci->i_generation;
        return fk->ino != 0;
    }
    struct inode *inode = BPF_CORE_READ((struct iomap_dio *)dio, iocb, ki_filp, f_inode);
    if (!inode)
        return false;
    fk->ino = BPF_CORE_READ(inode, i_ino);
    fk->fs_dev = BPF_CORE_READ(inode, i_sb, s_dev);
    fk->gen = BPF_CORE_READ(inode, i_generation);
    return fk->ino != 0;
}

/* The file of an iomap direct-I/O bio: bio->bi_end_io is iomap_dio_bio_end_io and bi_private its struct iomap_dio,
 * whose iocb (struct kiocb) names the file; a bio split off one (bio_chain_endio) is looked at through the bio it
 * was split from, its bi_private (a split of a split chains to the same remainder: one level). False: not such a
 * bio. The function pointer and bi_private are numbers to the verifier even in tp_btf: file_of_dio from there on
 * (probe reads unless `cast`; 2 more for a split). */
static __always_inline bool file_of_dio_bio(struct bio *bio, bool typed, bool cast, struct kvio_file_key *fk)
{
    if (!files_dio_end_io)
        return false;
    __u64 end_io = (__u64)KREAD(typed, bio, bi_end_io);
    __u64 priv = (__u64)KREAD(typed, bio, bi_private);
    if (end_io == files_chain_end_io && files_chain_end_io && priv) {
        struct bio *parent = (struct bio *)priv;
        end_io = (__u64)BPF_CORE_READ(parent, bi_end_io);
        priv = (__u64)BPF_CORE_READ(parent, bi_private);
    }
    return end_io == files_dio_end_io && priv && file_of_dio(priv, cast, fk);
}

static __always_inline bool file_key_eq(const struct kvio_file_key *a, const struct kvio_file_key *b)
{
    return a->ino == b->ino && a->fs_dev == b->fs_dev && a->gen == b->gen;
}

/* --files: a number for each file a request's issue found (files_at_issue), so that the request's state carries
 * 4 bytes instead of the 16 of its key. file_ids: key -> number, taken from next_file_id on first sight (numbers
 * start at 1; 0: none); file_keys: number -> key (userspace gives it file_stats' size, or KVIO_TRACE_FILE_IDS: a
 * test hook). A number is never reused. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct kvio_file_key);
    __type(value, __u32);
} file_ids SEC(".maps");
KVIO_ARRAY(file_keys, BPF_MAP_TYPE_ARRAY, 65536, struct kvio_file_key);
const volatile __u32 file_ids_max = 65536; /* file_keys' size (userspace sets both) */
__u32 next_file_id = 1;
/* The last file this CPU numbered, and its number: consecutive commands are mostly one file's (a block's file read
 * or written in several commands; one file in a benchmark), and a hash lookup costs an issue ~100 ns here. */
struct file_id_cached {
    struct kvio_file_key key;
    __u32 id;
    __u32 pad;
};
KVIO_ARRAY(file_id_cache, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct file_id_cached);

/* The number of file `fk`, given on first sight; 0 when file_keys or file_ids has no room (the completion then
 * reads the file itself). Two CPUs meeting a new file at once each take a number; the one whose file_ids insert
 * loses uses the winner's (its own stays unused). */
static __always_inline __u32 file_id_lookup(const struct kvio_file_key *fk)
{
    __u32 *have = bpf_map_lookup_elem(&file_ids, fk);
    if (have)
        return *have;
    if (next_file_id >= file_ids_max) /* all given: never add on (the counter would wrap and give numbers again) */
        return 0;
    __u32 id = __sync_fetch_and_add(&next_file_id, 1);
    struct kvio_file_key *k = bpf_map_lookup_elem(&file_keys, &id);
    if (!k)
        return 0;
    *k = *fk; /* before the number is published: a completion that finds the number finds its key */
    if (!bpf_map_update_elem(&file_ids, fk, &id, BPF_NOEXIST))
        return id;
    have = bpf_map_lookup_elem(&file_ids, fk);
    return have ? *have : 0;
}

/* file_id_lookup through this CPU's file_id_cache. */
static __always_inline __u32 file_id_of(const struct kvio_file_key *fk)
{
    __u32 zero = 0;
    struct file_id_cached *c = bpf_map_lookup_elem(&file_id_cache, &zero);
    if (c && c->id && file_key_eq(&c->key, fk))
        return c->id;
    __u32 id = file_id_lookup(fk);
    if (c && id) {
        c->key = *fk;
        c->id = id;
    }
    return id;
}

/* --files at the issue of request `rq`: the number of the file of a direct-I/O request of one bio (file_of_dio_bio),
 * kept in the request's state; 0 (none) leaves the search to the completion. Issue runs in the submitting thread
 * (mostly), whose CPU has just written the iomap_dio, kiocb, file and inode the file is read from; at completion
 * they are often in another CPU's cache, where the same reads cost a command ~250 ns more on this VM, and 16 bytes
 * of key in a line of its own ~70 ns more (docs/performance.md, "Where --files' cost was"). After issue no bio joins
 * the request, so its file stands. */
static __always_inline __u32 files_at_issue(struct request *rq, bool typed, bool cast)
{
    struct kvio_file_key fk = {};
    struct bio *bio = KREAD(typed, rq, bio);
    if (!bio || KREAD(typed, bio, bi_next) || !file_of_dio_bio(bio, typed, cast, &fk))
        return 0;
    return file_id_of(&fk);
}

/* The stats entry of file `fk`, created (and announced to userspace) on first sight. NULL: the map is full. */
static __always_inline struct kvio_file_stats *file_stats_of(const struct kvio_file_key *fk)
{
    bool created;
    struct kvio_file_stats *fs = map_lookup_or_init(&file_stats, fk, &zero_file_stats, &created);
    if (!fs) {
        files_count(FILES_FULL);
        return 0;
    }
    if (created) {
        struct kvio_file_event *e = EVENT_RESERVE(struct kvio_file_event);
        if (e) {
            e->type = KVIO_EV_FILE;
            e->key = *fk;
            bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP); /* rare: the path is wanted before an unlink */
        }
    }
    return fs;
}

/* A completed read or write of `bytes` into its file's stats; d2c counted when `timed`. */
static __always_inline void files_account(const struct kvio_file_key *fk, __u8 src, __u32 op, __u64 bytes, __u64 d2c,
                                          bool timed)
{
    if (!fk->ino) {
        files_count(FILES_NONE);
        return;
    }
    files_count(src == KVIO_FILE_SRC_PAGE      ? FILES_BY_PAGE
                : src == KVIO_FILE_SRC_SYSCALL ? FILES_BY_SYSCALL
                : src == KVIO_FILE_SRC_DIO     ? FILES_BY_DIO
                                               : FILES_BY_URING);
    if (op != KVIO_OP_READ && op != KVIO_OP_WRITE)
        return;
    struct kvio_file_stats *fs = file_stats_of(fk);
    if (!fs)
        return;
    struct kvio_file_dir *d = &fs->dir[op == KVIO_OP_WRITE];
    __u32 s = kvio_log2_slot(bytes);
    if (s >= KVIO_FILE_HIST_SLOTS)
        s = KVIO_FILE_HIST_SLOTS - 1;
    __sync_fetch_and_add(&d->bytes, bytes);
    __sync_fetch_and_add(&d->size[s], 1);
    if (!timed)
        return;
    s = kvio_log2_slot(d2c);
    if (s >= KVIO_FILE_HIST_SLOTS)
        s = KVIO_FILE_HIST_SLOTS - 1;
    __sync_fetch_and_add(&d->d2c_sum, d2c);
    __sync_fetch_and_add(&d->d2c[s], 1);
}

/* Bios walked per completing request (files_on_complete): a longer chain is counted (FILES_CHAIN_CUT) and the bytes
 * of the bios not walked go to the last file seen. The block layer caps a request at max_segments bios' worth of
 * segments (128 on virtio-blk and NVMe here), so 256 leaves room. */
#define KVIO_FILES_RQ_BIOS 256
/* Distinct files a request's bios are summed for before they are accounted; a request of more files is accounted
 * in rounds of 4 (a file seen again in a later round counts the command again). With --events each round of a
 * command whose bytes are not all one file's is also one kvio_parts_event (bpf/file_attr.h). */
#define KVIO_FILES_RQ_FILES 4
_Static_assert(KVIO_FILES_RQ_FILES == KVIO_PARTS_PER_EVENT, "a parts record holds one round");

/* One file's share of a completing request: its bytes, and the source that named it. */
struct files_rq_part {
    struct kvio_file_key fk;
    __u64 bytes;
    __u64 src;
};

/* The walk over a completing request's bios (bpf_loop callback context, files_bio_step). */
struct files_rq_walk {
    __u64 bio;     /* the next bio, a number (probe reads) */
    __u64 mapping; /* the previous bio's page mapping and what it resolved to: skips re-reading the inode */
    struct kvio_file_key map_fk;
    __u64 map_ok;
    __u64 walked; /* bytes of the bios walked */
    __u64 d2c;
    __u32 dev, op;
    __u32 nparts;
    bool timed, written_only;
    /* --events: the command's sector and completion time (they join its parts records to its "cmd" record), and the
     * parts written for it so far */
    __u64 sector, ts;
    __u32 emitted;
    struct kvio_file_key first; /* the first file seen: the command's file in the events stream */
    struct files_rq_part part[KVIO_FILES_RQ_FILES];
};
/* The walk's state, in a map rather than on the stack: the verifier then treats its counts as unknown numbers and
 * verifies the bpf_loop step once or twice, where exact stack values made it walk every count. [1] for the tp_btf
 * complete program, [0] for its raw_tp backup, which can run nested in it on the same CPU. */
KVIO_ARRAY(files_walks, BPF_MAP_TYPE_PERCPU_ARRAY, 2, struct files_rq_walk);

/* The file block_getrq kept for the bio keyed `key` (the submitter sources), its slot released; *src the source. */
static __always_inline bool file_of_bio_slot(__u64 key, struct kvio_file_key *fk, __u8 *src)
{
    __u32 idx = 0;
    __u64 *k = slot_find(&bio_files, bio_slot_mask, key, &idx);
    if (!slot_live(k))
        return false;
    struct bio_file *b = (struct bio_file *)k;
    *fk = b->file;
    *src = (__u8)b->pad;
    slot_release(k, key);
    return fk->ino != 0;
}

/* The file of one bio of a completing request (`bio` a number): its iomap direct I/O, else its first page (the
 * previous bio's answer when the mapping is the same), else what block_getrq kept for it (the slot is released).
 * With `written_only` (a write request under a task filter) a page's file counts only when the traced processes
 * wrote it (written_files): an outsider's writeback merged into the request is no file's for the trace. */
static __always_inline bool files_of_bio(struct files_rq_walk *w, struct bio *bio, struct kvio_file_key *fk, __u64 *src)
{
    if (file_of_dio_bio(bio, false, false, fk)) {
        *src = KVIO_FILE_SRC_DIO;
        return true;
    }
    __u64 m = bio_page_mapping(bio);
    if (m && m == w->mapping) {
        *fk = w->map_fk;
        *src = KVIO_FILE_SRC_PAGE;
        return w->map_ok;
    }
    if (m) {
        struct kvio_file_key pk = {};
        bool ok = file_of_host(BPF_CORE_READ((struct address_space *)m, host), w->dev, &pk) &&
                  (!w->written_only || bpf_map_lookup_elem(&written_files, &pk));
        w->mapping = m;
        w->map_fk = pk;
        w->map_ok = ok;
        if (ok) {
            *fk = pk;
            *src = KVIO_FILE_SRC_PAGE;
            return true;
        }
    }
    __u8 s = 0;
    bool ok = files_from_submitter() && file_of_bio_slot((__u64)bio, fk, &s);
    *src = s;
    return ok;
}

/* Part `i` of walk `w` into its file's stats, with the command's D2C. A global function: the verifier checks it once,
 * not at each of files_rq_flush's call sites in the bpf_loop step (which made the complete program too large). */
__noinline int files_part_account(struct files_rq_walk *w, __u32 i)
{
    if (!w)
        return 0;
    struct files_rq_part *p = &w->part[i & (KVIO_FILES_RQ_FILES - 1)];
    /* the key on the stack: a global function's pointer argument is plain memory to the verifier, which 6.1's does
     * not take as a map key (bpf_map_lookup_elem: "R2 type=mem expected=fp, ..."; newer kernels do) */
    struct kvio_file_key fk = p->fk;
    files_account(&fk, p->src, w->op, p->bytes, w->d2c, w->timed);
    return 0;
}

/* --events: the parts summed so far, as one kvio_parts_event of the command (sector and ts of the walk); a record
 * the ring buffer has no room for counts its parts lost (FILES_PARTS_LOST). A global function, checked once (as
 * files_part_account). */
__noinline int files_parts_emit(struct files_rq_walk *w)
{
    if (!w)
        return 0;
    __u32 n = w->nparts;
    if (n > KVIO_FILES_RQ_FILES)
        n = KVIO_FILES_RQ_FILES;
    if (!n)
        return 0;
    w->emitted += n;
    struct kvio_parts_event *e = EVENT_RESERVE(struct kvio_parts_event);
    if (!e) {
        files_count_n(FILES_PARTS_LOST, n);
        return 0;
    }
    e->type = KVIO_EV_PARTS;
    e->n = n;
    e->dev = w->dev;
    e->sector = w->sector;
    e->ts_complete = w->ts;
#pragma unroll
    for (int i = 0; i < KVIO_FILES_RQ_FILES; i++) {
        if (i < n) {
            e->part[i].ino = w->part[i].fk.ino;
            e->part[i].fs_dev = w->part[i].fk.fs_dev;
            e->part[i].gen = w->part[i].fk.gen;
            e->part[i].bytes = w->part[i].bytes;
        }
    }
    event_submit(e);
    return 0;
}

/* The files summed so far into their stats, each once for this command, with the command's D2C; with `parts`
 * (--events, a command not all one file's) also onto the events stream. */
static __always_inline void files_rq_flush(struct files_rq_walk *w, bool parts)
{
    if (emit_events && parts)
        files_parts_emit(w);
#pragma unroll
    for (int i = 0; i < KVIO_FILES_RQ_FILES; i++)
        if (i < w->nparts)
            files_part_account(w, i);
    w->nparts = 0;
}

/* `bytes` of file `fk` into the request's sums: the file's part, else a new one (after a flush when all are taken). */
static __always_inline void files_rq_add(struct files_rq_walk *w, const struct kvio_file_key *fk, __u64 src,
                                         __u64 bytes)
{
#pragma unroll
    for (int i = 0; i < KVIO_FILES_RQ_FILES; i++) {
        if (i < w->nparts && file_key_eq(&w->part[i].fk, fk)) {
            w->part[i].bytes += bytes;
            return;
        }
    }
    if (w->nparts >= KVIO_FILES_RQ_FILES)
        files_rq_flush(w, true); /* a fifth file: the command is not all one file's */
    __u32 n = w->nparts & (KVIO_FILES_RQ_FILES - 1);
    w->part[n].fk = *fk;
    w->part[n].bytes = bytes;
    w->part[n].src = src;
    w->nparts = n + 1;
    if (!w->first.ino)
        w->first = *fk;
}

/* bpf_loop step (ctx: the address of a struct files_rq_walk *): one bio of the request, its bytes to its file; 1 (stop)
 * at the end of the chain. */
static long files_bio_step(__u32 i, void *ctx)
{
    struct files_rq_walk *w = *(struct files_rq_walk **)ctx;
    struct bio *bio = (struct bio *)w->bio;
    if (!bio)
        return 1;
    __u64 bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
    struct kvio_file_key fk = {};
    __u64 src = 0;
    if (bytes && files_of_bio(w, bio, &fk, &src))
        files_rq_add(w, &fk, src, bytes);
    w->walked += bytes;
    w->bio = (__u64)BPF_CORE_READ(bio, bi_next);
    return 0;
}

/* The file of a request's only bio (`typed`: read through the tp_btf pointer, no probe reads for its own fields):
 * files_of_bio's sources in the same order, without the walk. `written_only` as in files_rq_walk. */
static __always_inline bool files_of_sole_bio(struct bio *bio, __u32 dev, bool typed, bool written_only,
                                              struct kvio_file_key *fk, __u8 *src)
{
    if (file_of_dio_bio(bio, typed, false, fk)) {
        *src = KVIO_FILE_SRC_DIO;
        return true;
    }
    if (file_of_bio_page(bio, dev, fk)) {
        *src = KVIO_FILE_SRC_PAGE;
        return !written_only || bpf_map_lookup_elem(&written_files, fk);
    }
    return files_from_submitter() && file_of_bio_slot(typed ? ptr_number(NUM_COMPLETE, bio) : (__u64)bio, fk, src);
}

/* What files_on_complete tells the command's event record: its first file and its parts on the stream. */
struct files_cmd {
    struct kvio_file_key first; /* the first file seen (ino 0: none) */
    __u32 nparts;               /* --events: parts written in kvio_parts_event records (0: all one file's or none) */
};

/* --files at the full completion of request `rq` (`bytes` long from `sector`, op `op`, `d2c` ns when `timed`,
 * completed at `ts`) of disk `dev`: each of its bios' bytes to that bio's file (block_rq_complete runs at the start of
 * blk_update_request, before any bio is ended: every bio is on rq->bio ... bi_next). A file's stats count the command
 * once, with the command's D2C, however many of its bios it held. Bytes of the request no walked bio holds (a chain
 * longer than KVIO_FILES_RQ_BIOS, or bios a partial completion already ended) go to the last file seen. out->first:
 * the first file seen (0: none), which the events stream carries; with --events, a command whose bytes are not all
 * one file's (several files, or a file and bios of none) also has its parts written (out->nparts). A request with no
 * file's bio counts as FILES_NONE. `typed`: the tp_btf program (its own walk state). A request of one bio is not
 * walked: its file is the one found at issue (`file_id` != 0: direct I/O), else read as files_of_sole_bio
 * does, through the typed pointer (the walk's probe reads cost a direct-I/O command ~110 ns, docs/performance.md). */
static __always_inline void files_on_complete(struct request *rq, __u32 dev, __u32 op, __u64 bytes, __u64 sector,
                                              __u64 ts, __u64 d2c, bool timed, bool typed, __u32 file_id,
                                              struct files_cmd *out)
{
    struct kvio_file_key *at_issue = file_id ? bpf_map_lookup_elem(&file_keys, &file_id) : 0;
    if (at_issue && at_issue->ino) { /* a direct-I/O request of one bio, its file found at issue (files_at_issue) */
        struct kvio_file_key fk = *at_issue;
        files_count(FILES_DIO_AT_ISSUE);
        files_account(&fk, KVIO_FILE_SRC_DIO, op, bytes, d2c, timed);
        out->first = fk;
        return;
    }
    struct bio *bio = KREAD(typed, rq, bio);
    bool written_only = op == KVIO_OP_WRITE && task_filter_active();
    if (bio && !KREAD(typed, bio, bi_next)) { /* one bio (direct I/O, mostly): no walk */
        struct kvio_file_key fk = {};
        __u8 src = 0;
        if (files_of_sole_bio(bio, dev, typed, written_only, &fk, &src)) {
            files_account(&fk, src, op, bytes, d2c, timed);
        } else {
            fk.ino = 0; /* an outsider's page under a task filter: no file for the events stream either */
            files_count(FILES_NONE);
        }
        out->first = fk;
        return;
    }
    __u32 at = typed;
    struct files_rq_walk *w = bpf_map_lookup_elem(&files_walks, &at);
    if (!w)
        return;
    w->bio = (__u64)BPF_CORE_READ(rq, bio);
    w->mapping = 0;
    w->walked = 0;
    w->nparts = 0;
    w->first.ino = 0;
    w->dev = dev;
    w->op = op;
    w->d2c = d2c;
    w->timed = timed;
    w->written_only = written_only;
    if (emit_events) {
        w->sector = sector;
        w->ts = ts;
        w->emitted = 0;
    }
    bpf_loop(KVIO_FILES_RQ_BIOS, files_bio_step, &w, 0); /* bpf_loop passes a stack address: w's */
    if (w->bio)
        files_count(FILES_CHAIN_CUT);
    if (w->nparts && bytes > w->walked)
        w->part[(w->nparts - 1) & (KVIO_FILES_RQ_FILES - 1)].bytes += bytes - w->walked;
    if (!w->first.ino)
        files_count(FILES_NONE);
    /* parts on the stream unless the command is all one file's: one part of all its bytes, no round before */
    bool parts = emit_events && (w->emitted || w->nparts > 1 || (w->nparts == 1 && w->part[0].bytes != bytes));
    files_rq_flush(w, parts);
    out->first = w->first;
    if (emit_events)
        out->nparts = w->emitted;
}

/* A traced process wrote file `fk`: its writeback is the trace's from now on (written_files). A lookup first: most
 * writes are to a file already there, and an update would allocate. */
static __always_inline void files_note_written(const struct kvio_file_key *fk)
{
    if (bpf_map_lookup_elem(&written_files, fk))
        return;
    __u8 one = 1;
    long err = bpf_map_update_elem(&written_files, fk, &one, BPF_NOEXIST);
    if (err && err != -17 /* EEXIST: another CPU added it */)
        files_count(FILES_WRITTEN_FULL);
}

/* The walk of files_follow_writeback (bpf_loop callback context, files_follow_step). */
struct files_follow_walk {
    __u64 bio;     /* the next bio, a number */
    __u64 mapping; /* the last page mapping looked up */
    __u32 dev;
    __u32 found;
};

/* bpf_loop step: is this bio's first page a written file's (on the walk's disk)? 1 (stop) when found or at the end. */
static long files_follow_step(__u32 i, void *ctx)
{
    struct files_follow_walk *w = ctx;
    struct bio *bio = (struct bio *)w->bio;
    if (!bio)
        return 1;
    w->bio = (__u64)BPF_CORE_READ(bio, bi_next);
    __u64 m = bio_page_mapping(bio);
    if (!m || m == w->mapping)
        return 0;
    w->mapping = m;
    struct kvio_file_key fk = {};
    if (file_of_host(BPF_CORE_READ((struct address_space *)m, host), w->dev, &fk) &&
        bpf_map_lookup_elem(&written_files, &fk)) {
        w->found = 1;
        return 1;
    }
    return 0;
}

/* Does write request `rq` of disk `dev`, which the task filter leaves out (its submitter is not traced), carry the
 * page cache of a file the traced processes wrote (written_files), in any of its bios (up to KVIO_FILES_RQ_BIOS)?
 * Then it is their writeback and counts for the trace: whole in the device's histograms, and in the file table for
 * the bios of written files only (files_on_complete). Only writes: a non-traced process's readahead of such a file
 * stays out. Asked when the request is first seen and, for one still left out, again at its issue (bios merged into
 * it after its insert). Per distinct page mapping 5 to 8 probe reads and a hash lookup, for left-out write commands
 * only, under --files with a task filter. */
static __always_inline bool files_follow_writeback(struct request *rq, __u32 dev, bool typed)
{
    if (!track_files || !task_filter_active() || (rq_opf(rq, typed) & KVIO_OP_MASK) != KVIO_OP_WRITE)
        return false;
    struct files_follow_walk w = {.bio = (__u64)BPF_CORE_READ(rq, bio), .dev = dev};
    bpf_loop(KVIO_FILES_RQ_BIOS, files_follow_step, &w, 0);
    if (!w.found)
        return false;
    files_count(FILES_WB_FOLLOWED);
    return true;
}

/* A write-family syscall of a traced thread entered on the file its state names: the file's writeback is the trace's
 * from now on. At entry, not exit: a writer throttled inside the call (balance_dirty_pages) may see a flusher write
 * back the pages it already dirtied before the call returns. */
static __always_inline void files_on_write_enter(const struct sys_state *st)
{
    if (!task_filter_active() || !(st->flags & KVIO_SYSF_FILE) || !st->ino)
        return;
    struct kvio_file_key fk = {.ino = st->ino, .fs_dev = st->fs_dev, .gen = st->gen};
    files_note_written(&fk);
}

/* A read/write-family syscall returned `ret` bytes on the file its state names: the application's own bytes. */
static __always_inline void files_on_sys_exit(const struct sys_state *st, long ret, bool is_read, bool is_write)
{
    if (ret <= 0 || !(is_read || is_write) || !(st->flags & KVIO_SYSF_FILE) || !st->ino)
        return;
    struct kvio_file_key fk = {.ino = st->ino, .fs_dev = st->fs_dev, .gen = st->gen};
    struct kvio_file_stats *fs = file_stats_of(&fk);
    if (!fs)
        return;
    struct kvio_file_dir *d = &fs->dir[is_write];
    __sync_fetch_and_add(&d->app_calls, 1);
    __sync_fetch_and_add(&d->app_bytes, ret);
}

/* io_uring_submit_req: the SQE's file is the thread's until its io_uring_enter returns (files_uring_end). The
 * request's file is assigned when it is issued, after this tracepoint, so a request without one yet names it by the
 * SQE's fd (io_kiocb cqe.fd, set from the SQE before the tracepoint), looked up in the submitter's fd table; a
 * registered (fixed) file (REQ_F_FIXED_FILE, bit 0 of the request's flags, IOSQE_FIXED_FILE_BIT) is not looked up. */
static __always_inline void files_uring_submit(struct io_kiocb *req)
{
    struct kvio_file_key fk = {};
    struct file *f = BPF_CORE_READ(req, file);
    if (!f && !(BPF_CORE_READ(req, flags) & 1))
        f = file_of_fd(BPF_CORE_READ(req, cqe.fd), true);
    if (f) {
        struct inode *inode = BPF_CORE_READ(f, f_inode);
        fk.ino = BPF_CORE_READ(inode, i_ino);
        fk.fs_dev = BPF_CORE_READ(inode, i_sb, s_dev);
        fk.gen = BPF_CORE_READ(inode, i_generation);
    }
    if (task_storage) {
        struct kvio_file_key *u =
            bpf_task_storage_get(&uring_files, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        if (u)
            *u = fk;
        return;
    }
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    bpf_map_update_elem(&uring_files_by_tid, &tid, &fk, BPF_ANY);
}

static __always_inline void files_uring_end(void)
{
    if (task_storage) {
        struct kvio_file_key *u = bpf_task_storage_get(&uring_files, bpf_get_current_task_btf(), 0, 0);
        if (u)
            u->ino = 0;
        return;
    }
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    bpf_map_delete_elem(&uring_files_by_tid, &tid);
}

SEC("tp_btf/block_getrq")
int BPF_PROG(block_getrq_files_btf, struct bio *bio) { return files_on_getrq(bio, true); }
SEC("raw_tp/block_getrq")
int BPF_PROG(block_getrq_files_raw, struct bio *bio) { return files_on_getrq(bio, false); }

#endif /* KVIO_FILE_ATTR_BPF_H */
