/* files.bpf.h — from a file descriptor of the current task to its struct file, and the facts of that file a
 * syscall record carries (inode, its filesystem device and generation, O_DIRECT, the file position, the size).
 * Used by the syscall programs (syscalls.bpf.h); kept apart so other programs can name the file of an fd too. */
#ifndef KVIO_FILES_BPF_H
#define KVIO_FILES_BPF_H

#include "bpf/config.bpf.h"

#define S_IFMT  00170000
#define S_IFREG 0100000
#define S_IFBLK 0060000

/* The struct file `fd` names in the current task's fd table, NULL when fd is negative, not below the table's
 * max_fds, or closed. `typed` (tp_btf, tp): the task's files and fd table with plain loads; from the fd array on
 * (a pointer the verifier gives no type) every read is a probe read, as in raw_tp. Cost: 2 loads + 2 probe reads
 * (typed) or 5 probe reads. */
static __always_inline struct file *file_of_fd(int fd, bool typed)
{
    if (fd < 0)
        return 0;
    struct file **fdarr;
    unsigned int max;
    if (typed) {
        struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
        fdarr = fdt->fd;
        max = fdt->max_fds;
    } else {
        struct task_struct *t = (struct task_struct *)bpf_get_current_task();
        struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
        fdarr = BPF_CORE_READ(fdt, fd);
        max = BPF_CORE_READ(fdt, max_fds);
    }
    if (!fdarr || (unsigned int)fd >= max)
        return 0;
    struct file *f = 0;
    bpf_probe_read_kernel(&f, sizeof(f), &fdarr[fd]);
    return f;
}

/* What a syscall record says about its file (kvio_syscall_event: ino, fs_dev, gen, KVIO_SYSF_DIRECT), read at
 * entry; `size_inode`: the inode whose i_size is the file's size (the block device's own inode for a device node,
 * whose f_inode is the node's), read at exit. */
struct file_facts {
    __u64 ino;
    __u64 size_inode; /* struct inode * */
    __u32 fs_dev;     /* kernel dev_t of the inode's filesystem (i_sb->s_dev) */
    __u32 gen;        /* i_generation */
    __u32 f_flags;    /* open flags (O_DIRECT, O_APPEND, ...) */
    __u32 fmt;        /* i_mode & S_IFMT */
};

/* The facts of `inode` (f's f_inode, of format `fmt`). 5 probe reads, 7 for a block device node. */
static __always_inline void file_facts_of(struct file *f, struct inode *inode, __u32 fmt, struct file_facts *ff)
{
    ff->ino = BPF_CORE_READ(inode, i_ino);
    ff->fs_dev = BPF_CORE_READ(inode, i_sb, s_dev);
    ff->gen = BPF_CORE_READ(inode, i_generation);
    ff->f_flags = BPF_CORE_READ(f, f_flags);
    ff->fmt = fmt;
    ff->size_inode = fmt == S_IFBLK ? (__u64)BPF_CORE_READ(f, f_mapping, host) : (__u64)inode;
}

/* The size in bytes of the inode file_facts_of kept (i_size), 0 when it cannot be read. */
static __always_inline __u64 file_size_of(__u64 size_inode)
{
    if (!size_inode)
        return 0;
    return BPF_CORE_READ((struct inode *)size_inode, i_size);
}

#endif /* KVIO_FILES_BPF_H */
