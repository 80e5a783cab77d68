#include "trace/tracer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "bpf/kvio_trace.skel.h"
#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "common/output_file.h"
#include "common/stop_signal.h"
#include "trace/event_format.h"
#include "trace/event_writer.h"
#include "trace/file_table.h"
#include "trace/bpf_stats.h"
#include "trace/command_guard.h"
#include "trace/duty.h"
#include "trace/pid_watch.h"
#include "trace/probe.h"
#include "trace/syscall_hooks.h"
#include "trace/trace_devices.h"
#include "trace/trace_live.h"
#include "trace/trace_report.h"
#include "trace/trace_snapshot.h"

namespace kvio::trace {

namespace {

/// The traced command's exit status as a shell reports it (128 + signal when killed), except 0 when the trace was
/// stopping (--duration, Ctrl-C, SIGTERM, SIGHUP) and the command died of the SIGTERM/SIGINT that stop sent it.
int command_status(int st, bool stopping) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (stopping && (WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGINT)) return 0;
    return 128 + WTERMSIG(st);
}

uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

int libbpf_quiet(enum libbpf_print_level level, const char* fmt, va_list args) {
    if (level == LIBBPF_WARN && std::getenv("KVIO_DEBUG")) return vfprintf(stderr, fmt, args);
    if (level == LIBBPF_DEBUG) return 0;
    return std::getenv("KVIO_DEBUG") ? vfprintf(stderr, fmt, args) : 0;
}

struct SkelDeleter {
    void operator()(kvio_trace_bpf* s) const { kvio_trace_bpf__destroy(s); }
};

/// Writes events as they arrive; counts them.
struct EventSink {
    std::optional<EventWriter> out;  ///< set with --events
    FilePaths* files = nullptr;      ///< --files: paths taken at a file's first sight
};

int on_event(void* ctx, void* data, size_t size) {
    auto* sink = static_cast<EventSink*>(ctx);
    auto type = *static_cast<const uint8_t*>(data);
    if (type == KVIO_EV_FILE && size >= sizeof(kvio_file_event) && sink->files)
        sink->files->seen(static_cast<const kvio_file_event*>(data)->key);
    if (!sink->out) return 0;
    if (type == KVIO_EV_CMD && size >= sizeof(kvio_cmd_event))
        sink->out->cmd(*static_cast<const kvio_cmd_event*>(data));
    else if (type == KVIO_EV_SYSCALL && size >= sizeof(kvio_syscall_event))
        sink->out->syscall(*static_cast<const kvio_syscall_event*>(data));
    else if (type == KVIO_EV_STAGES && size >= sizeof(kvio_stages_event))
        sink->out->stages(*static_cast<const kvio_stages_event*>(data));
    else if (type == KVIO_EV_PARTS && size >= sizeof(kvio_parts_event))
        sink->out->parts(*static_cast<const kvio_parts_event*>(data));
    return 0;
}

std::vector<uint32_t> resolve_devices(const std::vector<std::string>& names) {
    std::vector<uint32_t> out;
    for (const auto& n : names) {
        auto info = find_block_dev(n);
        if (!info) throw Error("-d " + n + ": no such block device (see /proc/partitions)");
        if (info->is_partition)
            std::cerr << "kvio trace: " << n << " is a partition; tracing its disk " << info->whole_disk_name
                      << " (requests are counted per disk, sectors are whole-disk)\n";
        out.push_back(kernel_dev(info->whole_disk));
    }
    if (out.size() > KVIO_MAX_DEVS) throw Error("at most " + std::to_string(KVIO_MAX_DEVS) + " -d filters");
    return out;
}

/// --files: direct I/O's file from the bio's iomap dio at completion where this kernel has iomap_dio_bio_end_io
/// (/proc/kallsyms) and struct iomap_dio names its kiocb (BTF), else from the submitting context
/// (bpf/file_attr.bpf.h). KVIO_TRACE_FILES_FROM_SUBMITTER=1 takes the submitting context anyway: what kernels
/// without iomap run, to compare costs and to test that both give the same table.
void choose_files_source(kvio_trace_bpf* s) {
    auto* ro = s->rodata;
    const char* force = std::getenv("KVIO_TRACE_FILES_FROM_SUBMITTER");
    if ((force && *force && std::string(force) != "0") || !btf_struct_has_field("iomap_dio", "iocb")) return;
    ro->files_dio_end_io = kernel_function_address("iomap_dio_bio_end_io");
    ro->files_chain_end_io = ro->files_dio_end_io ? kernel_function_address("bio_chain_endio") : 0;
}

/// Program pairs attached as tp_btf where BTF describes the tracepoint, else raw_tp.
void choose_block_programs(kvio_trace_bpf* s) {
    bool btf = has_btf_tracepoint("block_rq_issue") && has_btf_tracepoint("block_rq_complete") &&
               has_btf_tracepoint("block_rq_insert") && has_btf_tracepoint("block_getrq");
    // block_getrq only records who submitted a bio: needed for events and task filters, not histograms
    bool owners = s->rodata->need_owner;
    bpf_program__set_autoload(s->progs.block_getrq_btf, btf && owners);
    // --files without the dio source: the file of direct I/O, taken in the submitting thread (bpf/file_attr.bpf.h)
    bpf_program__set_autoload(s->progs.block_getrq_files_btf, btf && files_from_submitter(s));
    bpf_program__set_autoload(s->progs.block_getrq_files_raw, !btf && files_from_submitter(s));
    bpf_program__set_autoload(s->progs.block_rq_insert_btf, btf);
    // --files' dio source reads the file at issue through bpf_rdonly_cast where the kernel has it (6.2+), else by
    // probe reads: two builds of the issue program, one loaded (bpf/block.bpf.h)
    bool cast = btf && s->rodata->files_dio_end_io && kernel_has_btf_function("bpf_rdonly_cast");
    bpf_program__set_autoload(s->progs.block_rq_issue_btf, btf && !cast);
    bpf_program__set_autoload(s->progs.block_rq_issue_cast_btf, cast);
    bpf_program__set_autoload(s->progs.block_rq_complete_btf, btf);
    bpf_program__set_autoload(s->progs.block_getrq_raw, !btf && owners);
    bpf_program__set_autoload(s->progs.block_rq_insert_raw, !btf);
    // raw_tp issue/complete are the backups of the tp_btf ones (see primary_seen in the BPF source): loaded, attached
    // by BackupPrograms once their primary misses a run
    s->rodata->backup_programs = btf;
    bpf_program__set_autoattach(s->progs.block_rq_issue_raw, !btf);
    bpf_program__set_autoattach(s->progs.block_rq_complete_raw, !btf);
    bpf_program__set_autoload(s->progs.block_rq_merge_raw, tracepoint_exists("block", "block_rq_merge"));
    bpf_program__set_autoload(s->progs.block_rq_requeue_raw, tracepoint_exists("block", "block_rq_requeue"));
    // children join the task filter only with `-- COMMAND` or --children: no fork of the machine runs it otherwise
    bpf_program__set_autoload(s->progs.sched_process_fork, s->rodata->follow_forks);
    // Before 5.11 block_rq_insert/issue took (q, rq); BTF tells, the version number does not.
    s->rodata->rq_has_queue_arg = btf_tracepoint_args("block_rq_issue") == 2;
}

/// --breakdown: the merge, split and requeue counters (bpf/breakdown.bpf.h), each where its tracepoint exists.
void choose_breakdown_programs(kvio_trace_bpf* s, bool on) {
    const std::pair<bpf_program*, const char*> progs[] = {{s->progs.bt_rq_merge, "block_rq_merge"},
                                                          {s->progs.bt_rq_requeue, "block_rq_requeue"},
                                                          {s->progs.bt_bio_backmerge, "block_bio_backmerge"},
                                                          {s->progs.bt_bio_frontmerge, "block_bio_frontmerge"},
                                                          {s->progs.bt_split, "block_split"}};
    for (const auto& [p, tp] : progs) bpf_program__set_autoload(p, on && tracepoint_exists("block", tp));
    // the stages (Q2G .. Q2C): raw_tp programs on every stage's tracepoint; without one of them, none
    const std::pair<bpf_program*, const char*> stages[] = {
        {s->progs.bt_bio_queue, "block_bio_queue"}, {s->progs.bt_bio_split, "block_split"},
        {s->progs.bt_getrq, "block_getrq"},         {s->progs.bt_rq_insert, "block_rq_insert"},
        {s->progs.bt_rq_issue, "block_rq_issue"},   {s->progs.bt_rq_requeue_stamp, "block_rq_requeue"},
        {s->progs.bt_rq_merged, "block_rq_merge"},  {s->progs.bt_rq_complete, "block_rq_complete"}};
    bool all = on;
    for (const auto& [p, tp] : stages) all = all && tracepoint_exists("block", tp);
    for (const auto& [p, tp] : stages) bpf_program__set_autoload(p, all);
    // Before 5.11 the bio tracepoints took (q, bio, ...); BTF tells, the version number does not.
    s->rodata->bt_bio_arg = btf_tracepoint_args("block_bio_queue") >= 2 ? 1 : 0;
}

/// The whole disk of kernel dev_t `kdev` (a partition's disk; itself when it is one or is gone).
uint32_t whole_disk_of(uint32_t kdev) {
    try {
        return kernel_dev(block_dev_info(decode_kernel_dev(kdev)).whole_disk);
    } catch (const std::exception&) {
        return kdev;
    }
}

/// Adds map bt_counts to `report`: the events of the -d disks (every disk without -d), a partition's on its disk.
void read_block_events(kvio_trace_bpf* s, const std::vector<uint32_t>& devs, TraceReport& report) {
    report.set_breakdown(true);
    int fd = bpf_map__fd(s->maps.bt_counts);
    kvio_bt_key key{}, next{};
    uint64_t n = 0;
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? nullptr : &key, &next) == 0) {
        first = false;
        key = next;
        if (bpf_map_lookup_elem(fd, &next, &n) != 0) continue;
        kvio_bt_key k = next;
        k.dev = whole_disk_of(next.dev);
        if (!devs.empty() && std::find(devs.begin(), devs.end(), k.dev) == devs.end()) continue;
        report.add_block_events(k, n);
    }
    fd = bpf_map__fd(s->maps.bt_hists);
    kvio_hist_key hkey{}, hnext{};
    static kvio_hist h;  // 1 KiB: not on the stack of every call
    first = true;
    while (bpf_map_get_next_key(fd, first ? nullptr : &hkey, &hnext) == 0) {
        first = false;
        hkey = hnext;
        if (bpf_map_lookup_elem(fd, &hnext, &h) == 0) report.add_dev_hist(hnext, h);
    }
}

/// Attaches the programs that end a command's life first and those that start it last: completions, then
/// everything else through the skeleton (getrq owners, insert, io_uring user_data) and the syscall programs, then
/// issue (block issue, NVMe setup). So every command issued after attach has its completion program and its submitter's
/// owner record in place. Attached in lifecycle order instead, a request issued while its completion program
/// was not yet attached stayed in flight and came out as complete_lost (a new-user test saw 3 at the start of
/// a busy trace; after: none issued in the first 50 ms in 6 traces of a QD 16 fio read at ~240 k IOPS), and one
/// allocated before block_getrq was attached had no submitter ("unattributed"). Returns 0 or a negative errno.
int attach_in_order(kvio_trace_bpf* s, SyscallPrograms& syscalls) {
    struct Step {
        bpf_program* prog;
        bpf_link** link;
    };
    auto attach = [](const Step& st) {
        if (!bpf_program__autoload(st.prog) || !bpf_program__autoattach(st.prog)) return 0;
        bpf_link* l = bpf_program__attach(st.prog);
        if (!l) return -errno;
        *st.link = l;
        return 0;
    };
    const Step completions[] = {
        {s->progs.block_rq_complete_btf, &s->links.block_rq_complete_btf},
        {s->progs.block_rq_complete_raw, &s->links.block_rq_complete_raw},
        {s->progs.nvme_complete_rq, &s->links.nvme_complete_rq},
    };
    const Step issues[] = {
        {s->progs.block_rq_issue_btf, &s->links.block_rq_issue_btf},
        {s->progs.block_rq_issue_cast_btf, &s->links.block_rq_issue_cast_btf},
        {s->progs.block_rq_issue_raw, &s->links.block_rq_issue_raw},
        {s->progs.nvme_setup_cmd, &s->links.nvme_setup_cmd},
    };
    for (const auto& st : completions)
        if (int err = attach(st)) return err;
    bool autoattach[std::size(issues)];
    for (size_t i = 0; i < std::size(issues); ++i) {
        autoattach[i] = bpf_program__autoattach(issues[i].prog);
        bpf_program__set_autoattach(issues[i].prog, false);
    }
    if (int err = kvio_trace_bpf__attach(s)) return err;  // skips the linked and the non-autoattach programs
    if (int err = syscalls.attach()) return err;
    for (size_t i = 0; i < std::size(issues); ++i) {
        bpf_program__set_autoattach(issues[i].prog, autoattach[i]);
        if (int err = attach(issues[i])) return err;
    }
    return 0;
}

uint64_t prog_recursion_misses(bpf_program* p) {
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    int fd = bpf_program__fd(p);
    return fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.recursion_misses : 0;
}

/// The backups of block issue and completion (primary_seen in the BPF source). Each costs a program run per
/// request and nested runs are rare, so a backup is attached only once its primary has missed a run (the kernel's
/// recursion_misses), or from the start with the test hook KVIO_TRACE_TEST_SKIP_EVERY (test build). A miss before that
/// is a counted lost or unmatched completion.
class BackupPrograms {
public:
    BackupPrograms(kvio_trace_bpf* s, bool always) : always_(always) {
        if (!s->rodata->backup_programs) return;
        hooks_ = {{"issue",
                   bpf_program__autoload(s->progs.block_rq_issue_btf) ? s->progs.block_rq_issue_btf
                                                                      : s->progs.block_rq_issue_cast_btf,
                   s->progs.block_rq_issue_raw, &s->links.block_rq_issue_raw, false},
                  {"complete", s->progs.block_rq_complete_btf, s->progs.block_rq_complete_raw,
                   &s->links.block_rq_complete_raw, false}};
    }
    /// Attaches the backup of each primary that missed a run; one warning when the kernel refuses (the misses
    /// stay counted as lost or unmatched completions).
    void service() {
        for (auto& h : hooks_) {
            if (*h.link || h.refused || (!always_ && prog_recursion_misses(h.primary) == 0)) continue;
            *h.link = bpf_program__attach(h.backup);
            if (*h.link) continue;
            h.refused = true;
            std::cerr << "kvio trace: warning: attaching the backup of block " << h.name << " failed ("
                      << std::strerror(errno) << "): the runs its primary misses stay missed (counted)\n";
        }
    }
    /// The hooks whose backup is attached ("issue", "complete").
    nlohmann::json attached() const {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& h : hooks_)
            if (*h.link) out.push_back(h.name);
        return out;
    }

private:
    struct Hook {
        const char* name;
        bpf_program* primary;
        bpf_program* backup;
        bpf_link** link;
        bool refused = false;
    };
    std::vector<Hook> hooks_;
    bool always_;
};

/// A test hook's value from the environment: 0 when unset; a malformed one is an error naming it.
uint32_t env_hook(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return 0;
    char* end = nullptr;
    unsigned long n = std::strtoul(v, &end, 10);
    if (*end || n > (1ul << 20)) throw Error(std::string(name) + "=" + v + ": not a number up to 2^20");
    return uint32_t(n);
}

/// The hooks of the test build (bpf/test_hooks.bpf.h, linked as build/kvio-test-hooks; build/kvio has none and
/// ignores them): KVIO_TRACE_TEST_SKIP_EVERY=N has each primary skip every Nth run. Returns whether the backups
/// attach from the start.
bool set_test_hooks([[maybe_unused]] kvio_trace_bpf* s) {
#ifdef KVIO_BPF_TEST_HOOKS
    s->rodata->test_skip_every = env_hook("KVIO_TRACE_TEST_SKIP_EVERY");
    s->rodata->test_lose_every = env_hook("KVIO_TRACE_TEST_LOSE_EVERY");  // no backups: lost for good
    return s->rodata->test_skip_every > 0;
#else
    return false;
#endif
}

static_assert(sizeof(kvio_rq_state) == 64 && sizeof(kvio_bio_owner) == 64,
              "a slot is one 64-byte cache line (kvio_trace.h)");

/// Issues per queue-depth sample (BPF qd_sample_every): 1 with events (each record's qd is exact), else
/// KVIO_TRACE_QD_SAMPLE_EVERY (the bench: a power of two) or --qd-sample (default 1: every command).
uint32_t qd_sample_every(const TraceOptions& opts, bool events) {
    uint32_t n = env_hook("KVIO_TRACE_QD_SAMPLE_EVERY");
    if (n & (n - 1)) throw Error("KVIO_TRACE_QD_SAMPLE_EVERY=" + std::to_string(n) + ": not a power of two");
    if (events) return 1;
    return n ? n : opts.qd_sample;
}

/// Slot tables (kvio_trace.h): rq_table, and with owners bio_table, of KVIO_RQ_SLOTS / KVIO_BIO_SLOTS entries, or
/// of KVIO_TRACE_SLOTS (a test hook: a power of two; small tables exercise the spill hashes).
void size_slot_tables(kvio_trace_bpf* s) {
    uint32_t slots = env_hook("KVIO_TRACE_SLOTS");
    if (slots && (slots & (slots - 1)))
        throw Error("KVIO_TRACE_SLOTS=" + std::to_string(slots) + ": not a power of two");
    uint32_t rq = slots ? slots : KVIO_RQ_SLOTS, bio = slots ? slots : KVIO_BIO_SLOTS;
    auto* ro = s->rodata;
    ro->rq_slot_mask = rq - 1;
    ro->bio_slot_mask = bio - 1;
    bpf_map__set_max_entries(s->maps.rq_table, rq);
    bpf_map__set_max_entries(s->maps.rq_owners, ro->need_owner_detail ? rq : 1);
    bpf_map__set_max_entries(s->maps.bio_table, ro->need_owner ? bio : 1);
}

void choose_optional_programs(kvio_trace_bpf* s, bool& nvme_present) {
    nvme_present = tracepoint_exists("nvme", "nvme_setup_cmd") && tracepoint_exists("nvme", "nvme_complete_rq");
    bpf_program__set_autoload(s->progs.nvme_setup_cmd, nvme_present);
    bpf_program__set_autoload(s->progs.nvme_complete_rq, nvme_present);
    // io_uring_submit_sqe was renamed io_uring_submit_req in 6.4; tracefs says which this kernel has.
    // They give each request its SQE user_data and passthrough owner: only events and filters use them.
    // With NVMe present they also give passthrough commands their submitter (task filters).
    bool owners = s->rodata->need_owner;
    bool wanted = s->rodata->need_user_data || (owners && nvme_present) || files_from_submitter(s);
    bool submit_req = wanted && tracepoint_exists("io_uring", "io_uring_submit_req");
    bool submit_sqe = wanted && !submit_req && tracepoint_exists("io_uring", "io_uring_submit_sqe");
    // tp_btf where BTF gives the tracepoint the io_kiocb first (6.0+): no trace record is built for the program.
    // Before 6.0 io_uring_submit_sqe took (ctx, req, opcode, user_data, ...): the tp/ program reads that record.
    bool btf_req = submit_req && btf_tracepoint_args("io_uring_submit_req") == 1;
    bool btf_sqe = submit_sqe && btf_tracepoint_args("io_uring_submit_sqe") == 2;
    bpf_program__set_autoload(s->progs.io_uring_submit_req_btf, btf_req);
    bpf_program__set_autoload(s->progs.io_uring_submit_sqe_btf, btf_sqe);
    bpf_program__set_autoload(s->progs.io_uring_submit_req, submit_req && !btf_req);
    bpf_program__set_autoload(s->progs.io_uring_submit_sqe, submit_sqe && !btf_sqe);
    // io_uring_complete only forgets the per-request owner that NVMe passthrough commands look up.
    s->rodata->uring_owner_by_req = nvme_present;
    bpf_program__set_autoload(s->progs.io_uring_complete,
                              owners && nvme_present && tracepoint_exists("io_uring", "io_uring_complete"));
}

/// Per-thread syscall and io_uring state: task local storage where every program type may use it, else the
/// tid-keyed hashes (then the storage map, never used, is a one-slot array: kernels before 5.11 lack the type).
/// KVIO_TRACE_THREAD_HASHES=1 takes the hashes anyway: what such kernels run, to compare costs and to test it.
void choose_thread_state(kvio_trace_bpf* s) {
    const char* force = std::getenv("KVIO_TRACE_THREAD_HASHES");
    s->rodata->task_storage = !(force && *force && std::string(force) != "0") && task_storage_everywhere();
    if (s->rodata->task_storage) {  // the hashes stay unused: one slot each instead of 16384 preallocated
        for (bpf_map* m : {s->maps.cur_udata, s->maps.sys_starts, s->maps.last_write_exit, s->maps.last_fadvise_exit,
                           s->maps.uring_files_by_tid})
            bpf_map__set_max_entries(m, 1);
        return;
    }
    for (bpf_map* m : {s->maps.thread_ios, s->maps.uring_files}) {
        bpf_map__set_type(m, BPF_MAP_TYPE_ARRAY);
        bpf_map__set_map_flags(m, 0);
        bpf_map__set_max_entries(m, 1);
    }
}

/// The per-CPU wakeup period of event_submit (a power of two minus one): all CPUs together wake the collector
/// about every 256 KiB of records (2048 of 128 bytes), each at least every 64 records.
uint32_t wakeup_mask(int ncpus) {
    uint32_t per_cpu = 2048 / uint32_t(std::max(ncpus, 1));
    uint32_t p = 64;
    while (p * 2 <= per_cpu) p *= 2;
    return p - 1;
}

/// While it lives the tracer is a child subreaper (PR_SET_CHILD_SUBREAPER): a process of the traced command whose
/// parent exits (a double fork, a daemon) is adopted by the tracer, not by init, so a stop still finds it
/// (end_command) — docs/trace.md, "Stopping a traced command".
struct SubreaperScope {
    SubreaperScope() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
    ~SubreaperScope() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
    SubreaperScope(const SubreaperScope&) = delete;
    SubreaperScope& operator=(const SubreaperScope&) = delete;
};

/// Forks the command stopped on a pipe, so it is in the filter before it runs.
/// `stdout_to_stderr`: the command's standard output goes to our standard error (the events stream owns stdout).
pid_t spawn_stopped(const std::vector<std::string>& argv, int& release_fd, bool stdout_to_stderr) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
    pid_t pid = fork();
    if (pid < 0) throw Error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        close(p[1]);
        char c;
        if (read(p[0], &c, 1) != 1) _exit(127);  // the tracer died before releasing us
        if (stdout_to_stderr) dup2(2, 1);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "kvio trace: cannot run %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    close(p[0]);
    release_fd = p[1];
    return pid;
}

/// Ends the traced command and every process it started, also those the trace adopted as their subreaper (children
/// of ours other than `child` and `guard`; docs/trace.md, "Stopping"): the tree is stopped and
/// collected first (a shell's children are reparented away once it exits) and let go on (SIGCONT), the command gets
/// SIGTERM; when it has not exited within kStopGraceNs (a command can hang in its own shutdown: fio 3.33 with `loops`
/// did so in 2 of 12 SIGINTs here), SIGKILL to it and every process below it; once it is reaped, SIGKILL to whatever
/// of the tree is still alive (a shell's background child, a subprocess the command did not end), so nothing the
/// command started writes after the trace ends. Keeps draining `rb` meanwhile. Returns the wait status.
int end_command(pid_t child, pid_t guard, ring_buffer* rb) {
    constexpr uint64_t kStopGraceNs = 5'000'000'000;
    std::vector<pid_t> adopted = children_of(getpid());  // orphans of the command (the trace is their subreaper)
    std::erase_if(adopted, [&](pid_t p) { return p == child || p == guard; });
    const StoppedTree tree(child, adopted);
    kill(child, SIGTERM);  // the command ends its own children if it can (fio does)
    tree.signal(SIGCONT);
    kill(child, SIGCONT);
    const uint64_t t0 = now_ns();
    int st = 0;
    while (waitpid(child, &st, WNOHANG) == 0) {
        if (now_ns() - t0 >= kStopGraceNs) {
            std::cerr
                << "kvio trace: the traced command did not exit within 5 s of SIGTERM: killing it and its children\n";
            kill(child, SIGSTOP);  // it cannot exit 0 between its children's SIGKILL and its own
            const std::vector<pid_t> below = descendants(child);
            kill(child, SIGKILL);
            for (pid_t p : below) kill(p, SIGKILL);
            waitpid(child, &st, 0);
            break;
        }
        ring_buffer__poll(rb, 50);
    }
    // Once the command is reaped, what is left of its tree is the trace's (its subreaper), also processes adopted
    // while the tree ran on (one that forked its successor and exited): those first, then any held one not adopted.
    const size_t adopted_left = kill_adopted(guard);
    if (const size_t left = adopted_left + tree.kill_all())
        std::cerr << "kvio trace: " << left << (left == 1 ? " process" : " processes")
                  << " the traced command started outlived it: killed\n";
    return st;
}

/// Sum of the kernel's per-program recursion_misses (events a program was skipped for because it
/// was already running on that CPU). Issue/complete misses are covered by the backup programs.
uint64_t recursion_misses(kvio_trace_bpf* s) {
    uint64_t total = 0;
    bpf_program* p = nullptr;
    bpf_object__for_each_program(p, s->obj) {
        int fd = bpf_program__fd(p);
        if (fd < 0) continue;
        bpf_prog_info info{};
        uint32_t len = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) total += info.recursion_misses;
    }
    return total;
}

/// Adds the histograms of the maps to `report` and sums the counters. `slot_devs[i]`: the device of slot i.
void read_maps(kvio_trace_bpf* s, const std::vector<uint32_t>& slot_devs, TraceReport& report,
               uint64_t (&counters)[KVIO_COUNTERS]) {
    int fd = bpf_map__fd(s->maps.dev_hists);
    kvio_hist_key key{}, next{};
    kvio_hist val{};
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? nullptr : &key, &next) == 0) {
        first = false;
        if (bpf_map_lookup_elem(fd, &next, &val) == 0) report.add_dev_hist(next, val);
        key = next;
    }
    int ncpus = libbpf_num_possible_cpus();
    // slot_hists' CPUs, then rescue_hists', then issue_hists' (--d2c-sample; one entry, unused, without it)
    const size_t third = size_t(ncpus > 0 ? ncpus : 1);
    std::vector<kvio_dev_hists> cpus(3 * third);
    const int own_fd = bpf_map__fd(s->maps.slot_hists), rescue_fd = bpf_map__fd(s->maps.rescue_hists);
    const int issue_fd = bpf_map__fd(s->maps.issue_hists);
    for (uint32_t slot = 0; slot < slot_devs.size(); ++slot) {
        if (bpf_map_lookup_elem(own_fd, &slot, cpus.data()) != 0 ||
            bpf_map_lookup_elem(rescue_fd, &slot, cpus.data() + third) != 0)
            continue;
        if (bpf_map_lookup_elem(issue_fd, &slot, cpus.data() + 2 * third) != 0)
            std::fill(cpus.begin() + std::ptrdiff_t(2 * third), cpus.end(), kvio_dev_hists{});
        for (uint16_t id = 0; id < KVIO_DEV_HISTS; ++id) {
            if (id == KVIO_H_NVME_D2C_QUEUE) continue;  // per queue: in dev_hists
            kvio_hist sum{};
            for (const auto& c : cpus) {
                for (int i = 0; i < KVIO_HIST_SLOTS; ++i) sum.slots[i] += c.h[id].slots[i];
                sum.sum += c.h[id].sum;
            }
            bool any = false;
            for (auto v : sum.slots) any = any || v;
            if (any) report.add_dev_hist(kvio_hist_key{slot_devs[slot], id, 0}, sum);
        }
    }
    std::vector<kvio_hist> proc_cpus(ncpus > 0 ? ncpus : 1);  // per-CPU: summed here
    fd = bpf_map__fd(s->maps.proc_hists);
    for (uint32_t i = 0; i < KVIO_PROC_HISTS; ++i) {
        if (bpf_map_lookup_elem(fd, &i, proc_cpus.data()) != 0) continue;
        kvio_hist sum{};
        for (const auto& c : proc_cpus) {
            for (int k = 0; k < KVIO_HIST_SLOTS; ++k) sum.slots[k] += c.slots[k];
            sum.sum += c.sum;
        }
        report.add_proc_hist(i, sum);
    }
    int ncpu = libbpf_num_possible_cpus();
    std::vector<uint64_t> percpu(ncpu > 0 ? ncpu : 1);
    fd = bpf_map__fd(s->maps.counters);
    for (uint32_t i = 0; i < KVIO_COUNTERS; ++i) {
        counters[i] = 0;
        if (bpf_map_lookup_elem(fd, &i, percpu.data()) == 0)
            for (auto v : percpu) counters[i] += v;
    }
}

/// The cgroup v2 path (below /sys/fs/cgroup) whose directory inode is `id`; "?" when none is found (gone).
/// Found by walking the hierarchy once per unknown id, then remembered.
std::string cgroup_path(uint64_t id) {
    static std::map<uint64_t, std::string> known;
    if (auto it = known.find(id); it != known.end()) return it->second;
    namespace fs = std::filesystem;
    const fs::path root = "/sys/fs/cgroup";
    std::string found = "?";
    struct stat st {};
    if (stat(root.c_str(), &st) == 0 && st.st_ino == id) found = "/";
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
         found == "?" && !ec && it != end; it.increment(ec))
        if (it->is_directory(ec) && stat(it->path().c_str(), &st) == 0 && st.st_ino == id)
            found = "/" + fs::relative(it->path(), root).string();
    return known[id] = found;
}

/// Adds the --per-process / --per-cgroup groups of map group_stats to `report`.
void read_groups(kvio_trace_bpf* s, kvio_group_by by, TraceReport& report) {
    report.set_group_by(by);
    if (by == KVIO_GROUP_NONE) return;
    int fd = bpf_map__fd(s->maps.group_stats);
    kvio_group_key key{}, next{};
    static kvio_group_val val;  // 1 KiB: not on the stack of every call
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? nullptr : &key, &next) == 0) {
        first = false;
        key = next;
        if (bpf_map_lookup_elem(fd, &next, &val) != 0) continue;
        std::string name =
            by == KVIO_GROUP_CGROUP ? cgroup_path(next.id) : std::string(val.comm, strnlen(val.comm, sizeof val.comm));
        report.add_group(next, val, name);
    }
}

/// --files: the per-file table of map file_stats ("files" in the summary) and how commands were attributed
/// ("files_attribution": commands by source, without a file, and those of files the map had no room for). Returns
/// the stop signal that cut --group-by's matching short (the table is then per file), 0 when none did.
int read_files(kvio_trace_bpf* s, FilePaths& paths, const TraceOptions& opts, nlohmann::json& summary) {
    std::vector<FileEntry> files;
    int fd = bpf_map__fd(s->maps.file_stats);
    kvio_file_key key{}, next{};
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? nullptr : &key, &next) == 0) {
        first = false;
        key = next;
        FileEntry f;
        f.key = next;
        if (bpf_map_lookup_elem(fd, &next, &f.stats) == 0) files.push_back(std::move(f));
    }
    std::vector<kvio_file_key> keys;
    for (const auto& f : files) keys.push_back(f.key);
    paths.finish(keys);
    for (auto& f : files) f.path = paths.path(f.key);
    // a stop while --group-by matches (the trace's own handlers are gone by now) writes the table ungrouped
    StopSignal stop;
    bool grouping_stopped = false;
    summary["files"] =
        file_table_json(files, FileTableOptions{opts.files_under, opts.files_group_by, stop.flag()}, &grouping_stopped);
    if (grouping_stopped) {
        summary["files_group_by_stopped"] = true;
        std::cerr << "kvio trace: warning: --group-by '" << opts.files_group_by
                  << "' did not finish (a stop signal came while it matched, or its matching crashed): the files "
                     "table is per file, ungrouped\n";
    }
    int ncpu = libbpf_num_possible_cpus();
    std::vector<uint64_t> percpu(ncpu > 0 ? ncpu : 1);
    // in the order of bpf/file_attr.bpf.h's FILES_* counters
    const char* names[] = {"no_file",
                           "map_full",
                           "by_page",
                           "by_syscall",
                           "by_uring",
                           "by_dio",
                           "writeback_followed",
                           "written_files_full",
                           "bio_chains_cut",
                           "parts_lost",
                           "dio_at_issue"};
    nlohmann::json counts = nlohmann::json::object();
    for (uint32_t i = 0; i < std::size(names); ++i) {
        uint64_t n = 0;
        if (bpf_map_lookup_elem(bpf_map__fd(s->maps.file_counters), &i, percpu.data()) == 0)
            for (auto v : percpu) n += v;
        counts[names[i]] = n;
    }
    counts["files_seen"] = files.size();
    summary["files_attribution"] = counts;
    return grouping_stopped ? stop.signo() : 0;
}

/// What the snapshot reads and how it labels it.
struct SnapshotSource {
    kvio_trace_bpf* skel = nullptr;
    std::vector<uint32_t> slot_devs;  ///< device of each histogram slot
    std::vector<uint32_t> devs;       ///< -d devices: present in the report even when idle
    uint64_t lba_bucket_bytes = 0;
    kvio_group_by group_by = KVIO_GROUP_NONE;
    bool nvme_present = false;
    bool stats_on = false;
    std::string syscall_scope;
    uint64_t t0_ns = 0;
    double start_unix_s = 0;
    uint32_t qd_sample_every = 1;
    bool breakdown = false;         ///< --breakdown: read bt_counts
    uint32_t d2c_sample_every = 1;  ///< --d2c-sample
    bool qd_kernel_done = false;    ///< the in-flight count uses the kernel's finished counts
};

TraceSnapshot take_snapshot(const SnapshotSource& src) {
    TraceSnapshot snap(src.lba_bucket_bytes);
    snap.report.set_qd_sample_every(src.qd_sample_every);
    snap.report.set_d2c_sample_every(src.d2c_sample_every);
    snap.report.set_qd_source(src.qd_kernel_done ? "kernel_finished" : "programs");
    if (!src.syscall_scope.empty()) snap.report.set_syscall_scope(src.syscall_scope);
    for (uint32_t d : src.devs) snap.report.touch_device(d);
    read_maps(src.skel, src.slot_devs, snap.report, snap.counters);
    read_groups(src.skel, src.group_by, snap.report);
    if (src.breakdown) read_block_events(src.skel, src.devs, snap.report);
    snap.nvme_present = src.nvme_present;
    snap.stats_on = src.stats_on;
    if (src.stats_on) snap.progs = prog_stats(src.skel->obj);
    snap.recursion_misses = recursion_misses(src.skel);
    snap.taken_ns = now_ns();
    snap.elapsed_s = double(snap.taken_ns - src.t0_ns) / 1e9;
    snap.start_unix_s = src.start_unix_s;
    return snap;
}

/// One command whose state is still live at stop, issued and traced: its completion was not seen. `late`: it is
/// still in flight (the caller counts it in in_flight_at_stop), else its completion came where no program ran and its
/// request was not reused since (lost_completes). Reported as the programs report a lost completion: size, QD and LBA
/// histograms and an event with "complete_lost" (no "ts_lost": found at stop).
void report_unfinished(const kvio_rq_state& st, const kvio_owner& owner, bool late, EventSink& sink,
                       TraceReport& report, uint64_t (&counters)[KVIO_COUNTERS]) {
    if (!late) ++counters[KVIO_CNT_LOST_COMPLETE];
    uint32_t op = st.opf & KVIO_OP_MASK;
    if (op == KVIO_OP_READ || op == KVIO_OP_WRITE) {
        bool rd = op == KVIO_OP_READ;
        report.add_dev_value(st.dev, rd ? KVIO_H_BSSPLIT_READ : KVIO_H_BSSPLIT_WRITE, st.bytes);
        if (st.qd_weight) report.add_dev_value(st.dev, rd ? KVIO_H_QD_READ : KVIO_H_QD_WRITE, st.qd, st.qd_weight);
        report.add_dev_value(st.dev, rd ? KVIO_H_LBA_READ : KVIO_H_LBA_WRITE, st.sector * 512);
    } else {
        report.add_dev_value(st.dev, KVIO_H_OTHER_CMDS, st.bytes);
        if (op == KVIO_OP_FLUSH) report.add_dev_value(st.dev, KVIO_H_FLUSH_CMDS, st.bytes);
        if (op == KVIO_OP_DISCARD || op == KVIO_OP_SECURE_ERASE)
            report.add_dev_value(st.dev, KVIO_H_DISCARD_CMDS, st.bytes);
    }
    if (!sink.out) return;
    kvio_cmd_event e{};
    e.type = KVIO_EV_CMD;
    e.src = KVIO_SRC_BLOCK;
    e.dev = st.dev;
    e.opf = st.opf;
    e.bytes = st.bytes;
    e.sector = st.sector;
    e.ts_insert = st.ts_insert;
    e.has_insert = st.ts_insert != 0;
    e.ts_issue = st.ts_issue;
    e.complete_lost = 1;
    e.qd = st.qd;
    e.owner = owner;
    e.has_user_data = owner.user_data != 0;
    on_event(&sink, &e, sizeof e);
}

uint64_t sysfs_block_field(const DevId& id, const char* file, size_t index);  // below

/// Requests the kernel has in flight on disk `dev` (kernel encoding) now: its `inflight` reads + writes, 0 when the
/// disk is gone.
uint64_t kernel_inflight(uint32_t dev) {
    try {
        const DevId id = decode_kernel_dev(dev);
        return sysfs_block_field(id, "inflight", 0) + sysfs_block_field(id, "inflight", 1);
    } catch (const Error&) {
        return 0;
    }
}

/// The live states at stop, issued and traced: slots of rq_table (their owners in rq_owners, same index) and the
/// entries of rq_spill.
std::vector<std::pair<kvio_rq_state, kvio_owner>> live_states(kvio_trace_bpf* s) {
    std::vector<std::pair<kvio_rq_state, kvio_owner>> out;
    const int table = bpf_map__fd(s->maps.rq_table), owners = bpf_map__fd(s->maps.rq_owners);
    const bool detail = s->rodata->need_owner_detail;
    for (uint32_t i = 0; i < bpf_map__max_entries(s->maps.rq_table); ++i) {
        kvio_rq_state st{};
        kvio_rq_owner o{};
        if (bpf_map_lookup_elem(table, &i, &st) != 0 || !(st.key & KVIO_SLOT_LIVE) || !st.issued || st.ignored)
            continue;
        if (detail) bpf_map_lookup_elem(owners, &i, &o);
        out.emplace_back(st, o.owner);
    }
    int fd = bpf_map__fd(s->maps.rq_spill);
    uint64_t key = 0, next = 0;
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? nullptr : &key, &next) == 0) {
        first = false;
        key = next;
        kvio_rq_spilled v{};
        if (bpf_map_lookup_elem(fd, &next, &v) != 0 || !v.s.issued || v.s.ignored) continue;
        out.emplace_back(v.s, v.o.owner);
    }
    return out;
}

/// The commands whose completion was not seen by the stop (report_unfinished). A live state is a command still in
/// flight or one whose completion no program ran for (docs/formats.md, "Lost completions"); per device, as many as
/// the kernel has in flight now, the latest issued, are the former, the rest the latter. Exact on a device whose
/// requests in flight all have state (every one traced, issued after the start: no --d2c-sample, no task filter).
/// Returns the commands still in flight (in_flight_at_stop).
uint64_t sweep_unfinished(kvio_trace_bpf* s, EventSink& sink, TraceReport& report,
                          uint64_t (&counters)[KVIO_COUNTERS]) {
    auto left = live_states(s);
    std::sort(left.begin(), left.end(), [](const auto& a, const auto& b) {
        return a.first.dev != b.first.dev ? a.first.dev < b.first.dev : a.first.ts_issue > b.first.ts_issue;
    });
    std::map<uint32_t, uint64_t> in_flight;  // per device: the kernel's in-flight requests not yet matched
    uint64_t late_total = 0;
    for (const auto& [st, owner] : left) {
        auto it = in_flight.find(st.dev);
        if (it == in_flight.end()) it = in_flight.emplace(st.dev, kernel_inflight(st.dev)).first;
        const bool late = it->second > 0;
        if (late) {
            --it->second;
            ++late_total;
        }
        report_unfinished(st, owner, late, sink, report, counters);
    }
    return late_total;
}

/// Refuses -c filters the BPF programs cannot hold: more than KVIO_MAX_COMMS, or a comm of 16 characters or more.
void check_comms(const TraceOptions& opts) {
    if (opts.comms.size() > KVIO_MAX_COMMS) throw Error("at most " + std::to_string(KVIO_MAX_COMMS) + " -c filters");
    for (const auto& c : opts.comms)
        if (c.size() >= KVIO_COMM_LEN) throw Error("-c " + c + ": a task comm has at most 15 characters");
}

/// Whether every disk counts its I/O in its stats (queue/iostats not 0): only those requests carry the flag and
/// the finished count qd_kernel_done relies on (bpf/rq_state.bpf.h).
bool iostats_on(const std::vector<uint32_t>& disks) {
    for (uint32_t kdev : disks) {
        DevId id = decode_kernel_dev(kdev);
        std::ifstream in("/sys/dev/block/" + std::to_string(id.major) + ":" + std::to_string(id.minor) +
                         "/queue/iostats");
        int v = 0;
        if (!(in >> v) || v == 0) return false;
    }
    return !disks.empty();
}

/// --duty: refused (a kvio::Error saying why) where a window would cut what a mode reports: anything beside
/// histograms of block commands (syscalls, events, owners, files, --breakdown's counters), the live outputs (their
/// rates would fall to 0 between windows), and --d2c-sample where the in-flight count is the programs' own (a
/// completion in a window of a request issued before it would take one off the count: only the kernel's finished
/// counts start each window right, trace/duty.h).
void check_duty(const TraceOptions& opts, const kvio_trace_bpf* s) {
    if (opts.duty.empty()) return;
    const auto& ro = *s->rodata;
    parse_duty(opts.duty);  // its own errors first
    const std::string no = "--duty " + opts.duty + ": ";
    if (ro.need_owner || ro.track_files || opts.breakdown)
        throw Error(no +
                    "needs histogram mode: no --events, --perfetto, -p, -c, --cgroup, -- COMMAND, "
                    "--per-process, --per-cgroup, --files or --breakdown");
    if (!opts.block_only) throw Error(no + "needs --block-only (syscall histograms are not cycled)");
    if (opts.interval_s > 0 || !opts.listen.empty() || !opts.prom_textfile.empty())
        throw Error(no +
                    "not with INTERVAL, --listen or --prom-textfile (their rates would drop to 0 between windows)");
    if (ro.rq_sample_every > 1 && !ro.qd_kernel_done)
        throw Error(no +
                    "with --d2c-sample needs the kernel's finished counts (BTF and the disk's queue/iostats "
                    "on, docs/performance.md): use --qd-sample instead");
}

/// Sets the BPF object's configuration for `opts` before it loads: the -d (`devs`, kernel dev_t), -c, -p and --cgroup
/// filters, what is recorded (events, owners, syscalls, groups), the storage devices whose fds the syscall histograms
/// count, the histogram slots (returned: the -d disks, else every disk present now), the queue-depth sampling and the
/// LBA bucket. `backups_from_start`: the test hooks ask for the backup programs from the start.
std::vector<uint32_t> configure(kvio_trace_bpf* s, const TraceOptions& opts, const std::vector<uint32_t>& devs,
                                bool& backups_from_start) {
    auto* ro = s->rodata;
    ro->targ_ndevs = uint32_t(devs.size());
    for (size_t i = 0; i < devs.size(); ++i) ro->targ_devs[i] = devs[i];
    ro->targ_ncomms = uint32_t(opts.comms.size());
    for (size_t i = 0; i < opts.comms.size(); ++i)
        std::strncpy(ro->targ_comms[i], opts.comms[i].c_str(), KVIO_COMM_LEN - 1);
    ro->filter_pid = !opts.pids.empty() || !opts.command.empty();
    ro->follow_forks = !opts.command.empty() || opts.children;
    ro->emit_events = !opts.events_path.empty();
    ro->group_by = opts.group_by == GroupBy::Process  ? KVIO_GROUP_PROCESS
                   : opts.group_by == GroupBy::Cgroup ? KVIO_GROUP_CGROUP
                                                      : KVIO_GROUP_NONE;
    ro->need_owner = ro->emit_events || ro->filter_pid || !opts.comms.empty() || !opts.cgroup.empty() || ro->group_by;
    ro->need_owner_detail = ro->emit_events || ro->group_by;
    backups_from_start = set_test_hooks(s);
    size_slot_tables(s);
    ro->need_user_data = ro->emit_events && !opts.block_only;  // its end is io_uring_enter's exit: a syscall program
    ro->emit_syscalls = !opts.events_path.empty() && opts.syscall_events;
    ro->track_files = opts.files;
    if (opts.files) choose_files_source(s);
    bpf_map__set_max_entries(s->maps.bio_files, opts.files ? ro->bio_slot_mask + 1 : 1);
    // numbers of the files direct I/O's issue finds (bpf/file_attr.bpf.h), one per file; fewer with the test hook
    uint32_t ids = env_hook("KVIO_TRACE_FILE_IDS");
    ro->file_ids_max = !opts.files ? 1 : ids ? ids : bpf_map__max_entries(s->maps.file_stats);
    bpf_map__set_max_entries(s->maps.file_keys, ro->file_ids_max);
    if (!opts.files)  // unused: one entry each
        for (bpf_map* m : {s->maps.file_stats, s->maps.file_ids, s->maps.uring_files_by_tid})
            bpf_map__set_max_entries(m, 1);
    // the files the traced processes wrote, whose writeback follows them: only under a task filter
    if (!opts.files || !(ro->filter_pid || !opts.comms.empty() || !opts.cgroup.empty()))
        bpf_map__set_max_entries(s->maps.written_files, 1);
    // The open flags syscall records report (bpf/files.bpf.h), from this architecture's <fcntl.h>.
    ro->o_direct_flag = O_DIRECT;
    ro->o_append_flag = O_APPEND;
    // Syscall histograms count fds on the traced disks (their partitions, stacked devices and filesystems) only.
    auto storage = storage_devices(devs);
    if (storage.size() > KVIO_MAX_STORAGE_DEVS) storage.resize(KVIO_MAX_STORAGE_DEVS);
    ro->targ_nstorage = uint32_t(storage.size());
    std::copy(storage.begin(), storage.end(), ro->targ_storage);
    // Histogram slots: the -d disks, else every disk present now (one hist set and in-flight count each).
    std::vector<uint32_t> slot_devs = devs.empty() ? present_disks(KVIO_MAX_DEV_SLOTS) : devs;
    bpf_map__set_max_entries(s->maps.slot_hists, uint32_t(std::max<size_t>(slot_devs.size(), 1)));
    bpf_map__set_max_entries(s->maps.slot_depths, uint32_t(std::max<size_t>(slot_devs.size(), 1)));
    ro->qd_sample_every = qd_sample_every(opts, ro->emit_events);
    // --d2c-sample: only where no request's state is needed for anything but its timing (bpf/rq_state.bpf.h)
    if (opts.d2c_sample > 1 && (ro->need_owner || ro->track_files))
        throw Error("--d2c-sample " + std::to_string(opts.d2c_sample) +
                    " needs histogram mode: no --events, --perfetto, -p, -c, --cgroup, -- COMMAND, --per-process, "
                    "--per-cgroup or --files (they need every request's state)");
    ro->rq_sample_every = opts.d2c_sample ? opts.d2c_sample : 1;
    // --d2c-sample's in-flight count from the kernel's own finished counts where BTF shows them
    // (KVIO_TRACE_QD_KERNEL=0: the counts of the programs alone, for comparison)
    const char* qd_kernel = std::getenv("KVIO_TRACE_QD_KERNEL");
    const int ncpus = libbpf_num_possible_cpus();
    ro->kernel_ncpus = ncpus > 0 ? uint32_t(ncpus) : 1;
    ro->qd_kernel_done = ro->rq_sample_every > 1 && !(qd_kernel && std::string(qd_kernel) == "0") && ncpus > 0 &&
                         ncpus <= KVIO_MAX_KERNEL_CPUS && kernel_finished_counts() && iostats_on(slot_devs);
    bpf_map__set_max_entries(s->maps.issue_hists,
                             ro->rq_sample_every > 1 ? uint32_t(std::max<size_t>(slot_devs.size(), 1)) : 1);
    ro->lba_bucket_bytes = opts.lba_bucket_bytes ? opts.lba_bucket_bytes : (10ULL << 30);
    check_duty(opts, s);
    if (!opts.cgroup.empty()) {
        struct stat st {};
        if (stat(opts.cgroup.c_str(), &st) != 0) throw Error("--cgroup " + opts.cgroup + ": does not exist");
        ro->targ_cgroup = st.st_ino;  // cgroup v2: the directory's inode number is the cgroup id
    }
    return slot_devs;
}

/// One field of a disk's /sys/dev/block/MAJ:MIN/`file` (whitespace-separated unsigned numbers, 0-based `index`).
uint64_t sysfs_block_field(const DevId& id, const char* file, size_t index) {
    std::string path = "/sys/dev/block/" + std::to_string(id.major) + ":" + std::to_string(id.minor) + "/" + file;
    std::ifstream in(path);
    uint64_t v = 0;
    for (size_t i = 0; i <= index; ++i)
        if (!(in >> v)) throw Error(path + ": field " + std::to_string(index + 1) + " is missing or not a number");
    return v;
}

/// qd_kernel_done: each slot's `kbase` starts as the requests in flight on the disk now (`inflight`), whose
/// completions the kernel will count but whose issues no program saw; the first issue adds the kernel's finished count
/// to it (bpf/rq_state.bpf.h, kernel_base). Read before attaching.
void set_kernel_baselines(kvio_trace_bpf* s, const std::vector<uint32_t>& slot_devs) {
    if (!s->rodata->qd_kernel_done) return;
    for (uint32_t slot = 0; slot < slot_devs.size(); ++slot) {
        DevId id = decode_kernel_dev(slot_devs[slot]);
        struct slot_depth d {};
        d.kbase = int64_t(sysfs_block_field(id, "inflight", 0) + sysfs_block_field(id, "inflight", 1));
        bpf_map__update_elem(s->maps.slot_depths, &slot, sizeof slot, &d, sizeof d, BPF_ANY);
    }
}

/// Loads the configured BPF object (a failure points at KVIO_DEBUG=1 for the verifier log), then fills the syscall
/// number map and, when every disk is traced (`all_disks`: no -d), the device -> histogram slot map.
void load_programs(kvio_trace_bpf* s, SyscallPrograms& syscalls, bool all_disks,
                   const std::vector<uint32_t>& slot_devs) {
    if (int err = kvio_trace_bpf__load(s))
        throw Error(std::string("loading the BPF programs failed (") + std::strerror(-err) +
                    "); rerun with KVIO_DEBUG=1 for the verifier log");
    syscalls.fill_syscall_map();
    if (all_disks)
        for (uint32_t slot = 0; slot < slot_devs.size(); ++slot)
            bpf_map__update_elem(s->maps.dev_slots, &slot_devs[slot], sizeof(uint32_t), &slot, sizeof slot, BPF_ANY);
}

/// Adds `pid` to the BPF process filter.
void filter_pid(kvio_trace_bpf* s, uint32_t pid) {
    uint8_t one = 1;
    bpf_map__update_elem(s->maps.pid_filter, &pid, sizeof pid, &one, sizeof one, BPF_ANY);
}

/// --children: adds the processes below each -p pid now (fio's job processes); the fork tracepoint adds later ones.
/// Called before and once more after attaching: a fork between this scan and the tracepoint's attach would be missed.
void add_children(kvio_trace_bpf* s, const TraceOptions& opts) {
    if (!opts.children) return;
    for (uint32_t pid : opts.pids)
        for (pid_t d : descendants(pid_t(pid))) filter_pid(s, uint32_t(d));
}

/// Writes the --json summary whole or not at all (write_json_file). A failure of the --events file (`events_error`)
/// and one of the --json file are both named: "EVENTS: write failed: REASON; JSON: write failed: REASON".
void write_summary_json(const TraceOptions& opts, const nlohmann::json& summary, std::exception_ptr& events_error) {
    if (opts.json_path.empty()) return;
    try {
        write_json_file(opts.json_path, summary);
    } catch (const Error& e) {
        if (!events_error) throw;
        try {
            std::rethrow_exception(events_error);
        } catch (const Error& ev) {
            throw Error(std::string(ev.what()) + "; " + e.what());
        }
    }
}

/// Kills and reaps the traced command before it was released (it waits for the tracer to start it); nothing for 0.
void kill_unreleased(pid_t child) {
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
    }
}

/// Lets the traced command run (it waits for the tracer to start it); from now a stop of the trace ends it
/// (end_command).
void release_command(int release_fd) {
    if (write(release_fd, "x", 1) != 1) throw Error("cannot start the traced command");
    close(release_fd);
}

/// What the summary says the syscall histograms cover: "" (every regular file and block device), the -d devices,
/// or none (--block-only).
std::string syscall_scope(const TraceOptions& opts) {
    std::string scope;
    if (!opts.devices.empty()) {
        scope = "regular files and block devices on";
        for (const auto& d : opts.devices) scope += " " + d;
        scope += " (partitions, stacked devices and their filesystems included)";
    }
    if (opts.block_only) scope = "none: --block-only, no syscall is traced";
    return scope;
}

/// Starts the live outputs asked for (INTERVAL lines, --listen, --prom-textfile) into `live`, reading snapshots of
/// `src`; a failure (a bad or busy --listen address) kills the command not yet released (`child`) and is thrown.
void start_live(const TraceOptions& opts, const SnapshotSource& src, std::ostream& human, pid_t child,
                std::optional<LiveOutputs>& live) {
    if (opts.interval_s <= 0 && opts.listen.empty() && opts.prom_textfile.empty()) return;
    try {
        live.emplace(
            LiveOptions{opts.interval_s, opts.interval_count, opts.listen, opts.prom_textfile},
            [&src] { return take_snapshot(src); }, human);
    } catch (const Error&) {
        kill_unreleased(child);
        throw;
    }
    if (!live->bound().empty())
        std::cerr << "kvio trace: serving Prometheus metrics on http://" << live->bound() << "/metrics\n";
}

/// --ready-file: written once the programs are attached (and --listen is bound), so a parent that started the trace
/// waits for it instead of a fixed delay.
void write_ready_file(const TraceOptions& opts) {
    if (opts.ready_file.empty()) return;
    std::ofstream ready(opts.ready_file, std::ios::trunc);
    ready << "ready\n";
    if (!ready.flush()) throw Error("--ready-file " + opts.ready_file + ": cannot write: " + std::strerror(errno));
}

/// What the trace loop works on while it runs.
struct TraceLoop {
    const TraceOptions& opts;
    const StopSignal& stop;
    ring_buffer* rb;
    std::optional<LiveOutputs>& live;
    BackupPrograms& backups;
    EventSink& sink;
    std::optional<PidWatch>& pid_watch;
    uint64_t t0_ns;                  ///< CLOCK_MONOTONIC at the trace's start
    std::optional<DutyCycle>& duty;  ///< --duty: opens and closes the windows
    pid_t guard = 0;                 ///< the command's guard process (CommandGuard), 0 without a command
};

/// Drains the ring buffer and services the live outputs and the backup programs until a stop signal, --duration,
/// COUNT intervals, a failing events file, the exit of every -p process, or the command's exit (its status goes to
/// res.command_status and `child` becomes 0). Returns the live outputs' error that stopped it, if one did.
std::exception_ptr trace_loop(const TraceLoop& t, pid_t& child, TraceResult& res) {
    while (!t.stop.stopped()) {
        const int poll_ms = t.duty ? t.duty->timeout_ms(now_ns(), 100) : 100;
        // Programs wake us only about every 256 KiB of records (wakeup_mask): drain what is there on every timeout too.
        if (t.live) {
            std::vector<pollfd> fds{{ring_buffer__epoll_fd(t.rb), POLLIN, 0}};
            t.live->add_poll_fds(fds);
            poll(fds.data(), fds.size(), t.live->timeout_ms(now_ns(), poll_ms));
            ring_buffer__consume(t.rb);
            try {
                t.live->service(now_ns());
            } catch (const Error&) {
                return std::current_exception();
            }
            if (t.live->done()) break;
        } else {
            ring_buffer__poll(t.rb, poll_ms);
        }
        ring_buffer__consume(t.rb);
        if (t.duty) t.duty->service(now_ns());
        if (!t.duty || t.duty->open()) t.backups.service();  // a backup joins its primary's windows
        if (t.sink.out) t.sink.out->flush_idle(now_ns());
        if (t.sink.out && t.sink.out->failed()) {  // close() reports it again at the end
            std::cerr << "kvio trace: " << t.sink.out->path()
                      << ": write failed: " << std::strerror(t.sink.out->error())
                      << (child > 0 ? ": the trace cannot go on; ending the traced command" : ": the trace stops")
                      << "\n";
            break;
        }
        if (t.opts.duration_s > 0 && double(now_ns() - t.t0_ns) / 1e9 >= t.opts.duration_s) break;
        if (t.pid_watch && child == 0 &&
            t.pid_watch->all_exited()) {  // like a COMMAND's exit (which ends a trace of both)
            std::cerr << "kvio trace: " << t.pid_watch->exit_reason() << ": trace stopped\n";
            break;
        }
        if (child > 0) {
            int st = 0;
            pid_t r = waitpid(child, &st, WNOHANG);
            if (r == child) {
                res.command_status = command_status(st, t.stop.stopped());
                child = 0;
                break;
            }
            reap_adopted(child, t.guard);
        }
    }
    return nullptr;
}

/// The programs attached at the end of the trace (skeleton links, the syscall programs, backups attached on the
/// way), sorted, each name once: kvio.trace/1 "programs_attached", so a test sees which programs a mode pays for.
nlohmann::json attached_programs(const kvio_trace_bpf* s, const SyscallPrograms& syscalls) {
    std::vector<std::string> names = syscalls.attached();
    const bpf_object_skeleton* sk = s->skeleton;
    for (int i = 0; i < sk->prog_cnt; ++i) {
        const auto* p = reinterpret_cast<const bpf_prog_skeleton*>(reinterpret_cast<const char*>(sk->progs) +
                                                                   size_t(i) * size_t(sk->prog_skel_sz));
        if (p->link && *p->link) names.push_back(p->name);
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

/// Fills res.summary (kvio.trace/1) from the final snapshot: the report, recursion misses, backups, syscall hooks
/// and, with --stats, the programs' run time per traced command; res.dropped and res.events. Returns the number of
/// device commands traced.
uint64_t fill_summary(TraceResult& res, TraceSnapshot& fin, double duration, const TraceOptions& opts,
                      const kvio_trace_bpf* s, const BackupPrograms& backups, const SyscallPrograms& syscalls,
                      const EventSink& sink) {
    res.summary = fin.report.to_json(duration, fin.counters, fin.nvme_present);
    res.summary["recursion_misses"] = fin.recursion_misses;
    res.summary["backups_attached"] = backups.attached();
    res.summary["syscall_hooks"] = syscall_hooks_name(syscalls.hooks());
    res.summary["programs_attached"] = attached_programs(s, syscalls);
    uint64_t cmds = 0;  // device commands traced: what the per-command cost is divided by
    for (const auto& d : res.summary["devices"])
        cmds += d["read"]["cmds"].get<uint64_t>() + d["write"]["cmds"].get<uint64_t>();
    if (opts.stats) res.summary["bpf_stats"] = stats_json(fin.progs, cmds);
    res.dropped = fin.counters[KVIO_CNT_RB_DROPS];
    res.events = sink.out ? sink.out->written() : 0;
    return cmds;
}

/// A new trace's identity: 64 random bits as 16 lowercase hex digits, written in the kvio.trace/1 summary and the
/// events stream's summary record so readers given both can tell they belong together (docs/formats.md).
std::string new_trace_id() {
    std::random_device rd;
    const uint64_t v = uint64_t(rd()) << 32 | rd();
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

/// Ends the --events file with its summary record and closes it; returns the error instead of throwing it, so the
/// JSON summary is still written. The record carries `trace_id` (the kvio.trace/1 summary's) and the traced devices'
/// queue settings (`queues`, "MAJ:MIN" -> the `queue` object of the kvio.trace/1 device) for the file level's --verify
/// (docs/distill.md). With --files (`files_attribution`, the summary's object, else null) the record says how the
/// commands' file parts were joined (`files_parts`, docs/formats.md), and so does files_attribution.
std::exception_ptr close_events(EventSink& sink, const uint64_t (&counters)[KVIO_COUNTERS], uint64_t in_flight_at_stop,
                                const nlohmann::json& devices, nlohmann::json* files_attribution,
                                const std::string& trace_id) {
    if (!sink.out) return nullptr;
    nlohmann::json parts;
    if (files_attribution) {
        sink.out->end_parts();
        const PartsJoin& pj = sink.out->parts_join();
        parts = {{"cmds", pj.joined()},
                 {"incomplete", pj.incomplete()},
                 {"orphaned", pj.orphaned()},
                 {"lost", files_attribution->value("parts_lost", uint64_t(0))}};
        (*files_attribution)["parts_joined"] = pj.joined();
        (*files_attribution)["parts_incomplete"] = pj.incomplete();
        (*files_attribution)["parts_orphaned"] = pj.orphaned();
    }
    nlohmann::json queues = nlohmann::json::object();
    for (const auto& d : devices)
        if (d.contains("queue")) queues[d["dev"].get<std::string>()] = d["queue"];
    try {
        nlohmann::json summary{{"type", "summary"},
                               {"trace_id", trace_id},
                               {"queues", queues},
                               {"events", sink.out->written()},
                               {"dropped", counters[KVIO_CNT_RB_DROPS]},
                               {"unmatched_completes", counters[KVIO_CNT_UNMATCHED_COMPLETE]},
                               {"negative_deltas", counters[KVIO_CNT_NEGATIVE_DELTA]},
                               {"lost_completes", counters[KVIO_CNT_LOST_COMPLETE]},
                               {"in_flight_at_stop", in_flight_at_stop}};
        if (sink.out->stages_written()) summary["stages"] = sink.out->stages_written();  // --breakdown
        if (!parts.is_null()) summary["files_parts"] = parts;
        sink.out->line(summary);
        sink.out->close();
    } catch (const Error&) {
        return std::current_exception();
    }
    return nullptr;
}

/// The what() of a kvio::Error held by `e`.
std::string message_of(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const Error& ev) {
        return ev.what();
    }
}

/// --stats: the programs' run time and how the syscalls were hooked.
void print_bpf_stats(std::ostream& os, const std::vector<ProgStats>& stats, uint64_t cmds, SyscallHooks h) {
    print_stats(os, stats, cmds);
    os << "  syscalls "
       << (h == SyscallHooks::PerSyscall
               ? "hooked by per-syscall tracepoints (syscalls:sys_enter_NAME, traced syscalls only)"
           : h == SyscallHooks::RawSyscalls ? "hooked by raw_syscalls sys_enter/sys_exit (every syscall of the machine)"
                                            : "not hooked (--block-only)")
       << "\n";
}

/// The warnings after a trace: -d devices without a command, completions never seen, dropped events, and -p
/// processes that issued nothing (`cmds` traced in all).
void warn_after_trace(const TraceOptions& opts, const std::vector<uint32_t>& devs, const TraceReport& report,
                      const uint64_t (&counters)[KVIO_COUNTERS], uint64_t in_flight_at_stop, uint64_t dropped,
                      const std::optional<PidWatch>& pid_watch, uint64_t cmds) {
    for (uint32_t d : devs)
        if (report.device_empty(d))
            std::cerr << "kvio trace: warning: no commands seen on " << dev_string(decode_kernel_dev(d))
                      << " (filtered device)\n";
    if (uint64_t lost = counters[KVIO_CNT_LOST_COMPLETE])
        std::cerr << "kvio trace: warning: " << lost
                  << " commands' completions were not seen (completed where the kernel ran no BPF program, "
                     "docs/formats.md \"Lost completions\"); they are reported without D2C\n";
    if (in_flight_at_stop)
        std::cerr << "kvio trace: " << in_flight_at_stop
                  << " commands were still in flight when the trace stopped; they are reported without D2C\n";
    if (dropped)
        std::cerr << "kvio trace: warning: " << dropped
                  << " events dropped (ring buffer full); histograms are complete\n";
    if (pid_watch && cmds == 0)
        std::cerr << "kvio trace: 0 commands from " << pid_watch->names()
                  << (opts.children
                          ? " or the processes below"
                          : "; forked processes are not included (fio's jobs are forked): add --children, or run "
                            "the program under `kvio trace -- COMMAND`")
                  << "\n";
}

/// What take_snapshot reads for this trace (the configured BPF object's rodata, the devices, --stats).
SnapshotSource snapshot_source(kvio_trace_bpf* skel, const TraceOptions& opts, const std::vector<uint32_t>& slot_devs,
                               const std::vector<uint32_t>& devs, bool nvme_present, bool stats_on) {
    const auto* ro = skel->rodata;
    SnapshotSource s{skel,     slot_devs, devs, ro->lba_bucket_bytes,  kvio_group_by(ro->group_by), nvme_present,
                     stats_on, "",        0,    double(time(nullptr)), ro->qd_sample_every};
    s.syscall_scope = syscall_scope(opts);
    s.breakdown = opts.breakdown;
    s.d2c_sample_every = ro->rq_sample_every;
    s.qd_kernel_done = ro->qd_kernel_done;
    return s;
}

/// A stop signal `signo` that came while the tracer was being set up: the command was never started.
[[noreturn]] void throw_stopped_in_setup(int signo) {
    throw Stopped(signo, "trace: stopped by signal " + std::to_string(signo) + " (" + strsignal(signo) +
                             ") while the tracer was being set up: the command was not started");
}

/// "tracing ...; Ctrl-C to stop" on stderr, for a trace without a command.
void say_tracing(const TraceOptions& opts) {
    std::cerr << "kvio trace: tracing" << (opts.duration_s > 0 ? " for " + std::to_string(opts.duration_s) + " s" : "")
              << "; Ctrl-C to stop\n";
}

/// The error of a trace whose events file failed: what failed, and what the --json summary still covers.
std::string events_failure_message(const std::exception_ptr& events_error, const TraceOptions& opts) {
    return message_of(events_error) + ": no events file was written" +
           (opts.json_path.empty()
                ? ""
                : "; " + opts.json_path + " covers the trace until the failure and records it (events_error)");
}

}  // namespace

TraceResult run_trace(const TraceOptions& opts) {
    // Handlers first: a stop that comes while the BPF objects load (seconds on a loaded machine) must not be lost. A
    // shell starts a background job with SIGINT ignored, so a SIGINT before sigaction() would vanish and the trace
    // then run until a second one (seen in ValidateE2E under load). A stop during setup skips the loop below.
    // A stop signal only stops the loop: end_command then ends the command's whole tree (docs/trace.md, "Stopping a
    // traced command"). A SIGTERM sent to the command from the handler would let its children be reparented first.
    std::optional<StopSignal> stop(std::in_place, StopSignal::Options{});
    signal(SIGPIPE, SIG_IGN);  // a reader that went away: the write fails with EPIPE and is reported
    ensure_tracing_ready();
    libbpf_set_print(libbpf_quiet);
    check_comms(opts);
    auto devs = resolve_devices(opts.devices);
    if (opts.children && opts.pids.empty()) throw Error("--children follows the processes of -p PID: give -p");
    std::optional<PidWatch>
        pid_watch;  // before any BPF work, like the other option checks: -p of no process is refused
    if (!opts.pids.empty()) pid_watch.emplace(opts.pids);

    std::unique_ptr<kvio_trace_bpf, SkelDeleter> skel(kvio_trace_bpf__open());
    if (!skel) throw Error(std::string("cannot open the BPF object: ") + std::strerror(errno));
    auto* ro = skel->rodata;
    bool backups_from_start = false;
    const std::vector<uint32_t> slot_devs = configure(skel.get(), opts, devs, backups_from_start);
    choose_block_programs(skel.get());
    choose_breakdown_programs(skel.get(), opts.breakdown);
    bool nvme_present = false;
    choose_optional_programs(skel.get(), nvme_present);
    SyscallPrograms syscalls(skel.get(), !opts.block_only);
    // Without --events the ring buffer carries only --files' first sight of each file (32 B a file): 256 KiB holds
    // thousands of new files between two drains.
    if (!ro->emit_events) bpf_map__set_max_entries(skel->maps.events, opts.files ? 256 * 1024 : 4096);
    choose_thread_state(skel.get());
    ro->wakeup_mask = wakeup_mask(libbpf_num_possible_cpus());
    load_programs(skel.get(), syscalls, devs.empty(), slot_devs);
    set_kernel_baselines(skel.get(), slot_devs);
    std::optional<BpfStatsEnabled> stats_on;  // before attach: every run of every program is counted
    if (opts.stats) stats_on.emplace();
    for (uint32_t pid : opts.pids) filter_pid(skel.get(), pid);
    add_children(skel.get(), opts);

    EventSink sink;
    std::optional<FilePaths> file_paths;  // --files: paths at first sight, kept for files deleted later
    if (opts.files) sink.files = &file_paths.emplace(opts.files_under);
    if (!opts.events_path.empty()) {
        sink.out.emplace(opts.events_path, size_t(1) << 20, opts.events_bin ? EventsFormat::Bin : EventsFormat::Jsonl);
    }
    if (!opts.json_path.empty()) check_writable(opts.json_path);  // a bad --json path fails before the trace
    int release_fd = -1;
    pid_t child = 0;
    std::optional<SubreaperScope> subreaper;
    if (!opts.command.empty()) {
        subreaper.emplace();
        child =
            spawn_stopped(opts.command, release_fd, !opts.events_path.empty() && events_on_stdout(opts.events_path));
        filter_pid(skel.get(), uint32_t(child));
    }
    std::optional<CommandGuard> guard;  // the command dies with the trace, also when the trace is SIGKILLed
    if (child > 0) guard.emplace(child);
    const bool guard_was_set = child > 0;
    if (int err = attach_in_order(skel.get(), syscalls)) {
        kill_unreleased(child);
        throw Error(std::string("attaching the BPF programs failed (") + std::strerror(-err) + ")");
    }
    add_children(skel.get(), opts);
    BackupPrograms backups(skel.get(), backups_from_start);
    backups.service();
    std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> rb(
        ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &sink, nullptr), ring_buffer__free);
    if (!rb) throw Error("cannot create the ring buffer reader");

    SnapshotSource snap_src = snapshot_source(skel.get(), opts, slot_devs, devs, nvme_present, stats_on.has_value());
    TraceResult res;
    // With the events on stdout the human output goes to stderr, so the JSONL stream stays clean.
    std::ostream& human = events_on_stdout(opts.events_path) ? std::cerr : std::cout;
    std::optional<LiveOutputs> live;  // INTERVAL lines, --listen, --prom-textfile
    snap_src.t0_ns = now_ns();
    std::optional<DutyCycle> duty;  // --duty: the first window is now
    if (!opts.duty.empty()) duty.emplace(skel.get(), parse_duty(opts.duty), slot_devs, snap_src.t0_ns);
    start_live(opts, snap_src, human, child, live);
    write_ready_file(opts);

    if (child > 0 && stop->stopped()) {  // stopped during set-up: the command never runs, nothing was traced
        kill_unreleased(child);
        guard.reset();
        throw_stopped_in_setup(stop->signo());
    }
    if (child > 0) release_command(release_fd);
    if (!opts.quiet && child == 0) say_tracing(opts);
    // A textfile that cannot be written stops the trace; the summary is still written.
    std::exception_ptr live_error = trace_loop(TraceLoop{opts, *stop, rb.get(), live, backups, sink, pid_watch,
                                                         snap_src.t0_ns, duty, guard ? guard->pid() : 0},
                                               child, res);
    if (child > 0) {  // stopped by a signal or --duration while the command runs: end it, wait for it
        res.command_status = command_status(end_command(child, guard ? guard->pid() : 0, rb.get()), true);
    }
    guard.reset();
    // A stop that came before the end the trace was given is not that end (the first signal names it).
    const bool has_own_end = guard_was_set || pid_watch.has_value() || opts.duration_s > 0 || opts.interval_count > 0;
    if (stop->stopped() && has_own_end) res.stopped_by = stop->signo();
    double duration = double(now_ns() - snap_src.t0_ns) / 1e9;
    ring_buffer__consume(rb.get());
    // In-flight requests complete within a few ms; give them a moment so the last commands are not lost.
    usleep(20000);
    ring_buffer__consume(rb.get());
    TraceSnapshot fin = take_snapshot(snap_src);
    stats_on.reset();  // statistics back as the administrator had them
    stop.reset();      // the dispositions the trace started with: a further signal takes its usual action

    if (duty) duty->finish(now_ns());  // logs a window open now before its requests in flight are swept below
    const uint64_t in_flight_at_stop = sweep_unfinished(skel.get(), sink, fin.report, fin.counters);
    if (live) {
        try {
            live->finish(fin);
        } catch (const Error&) {
            if (!live_error) live_error = std::current_exception();
        }
    }
    const uint64_t cmds = fill_summary(res, fin, duration, opts, skel.get(), backups, syscalls, sink);
    res.summary["trace_id"] = new_trace_id();              // also on the events' summary record (close_events)
    res.summary["in_flight_at_stop"] = in_flight_at_stop;  // late completions, not lost ones (sweep_unfinished)
    if (duty)
        res.summary["duty"] = duty->summary(snap_src.t0_ns + uint64_t(duration * 1e9), res.summary["devices"],
                                            fin.counters[KVIO_CNT_DUTY_BEFORE],
                                            opts.stats ? res.summary["bpf_stats"]["run_time_ns"].get<uint64_t>() : 0);
    if (file_paths) {
        // a stop while --group-by matched: the table is written ungrouped, and the exit says the stop
        const int sig = read_files(skel.get(), *file_paths, opts, res.summary);
        if (sig && !res.stopped_by) res.stopped_by = sig;
    }
    nlohmann::json* files_attribution =
        res.summary.contains("files_attribution") ? &res.summary["files_attribution"] : nullptr;
    std::exception_ptr events_error =
        close_events(sink, fin.counters, in_flight_at_stop, res.summary["devices"], files_attribution,
                     res.summary["trace_id"].get<std::string>());  // the JSON summary is still written
    if (events_error) res.summary["events_error"] = message_of(events_error) + ": the trace ended there";
    write_summary_json(opts, res.summary, events_error);
    if (!opts.quiet) fin.report.print(human, duration, fin.counters, nvme_present);
    if (!opts.quiet && file_paths) print_file_table(human, res.summary["files"], res.summary["files_attribution"]);
    if (opts.stats) print_bpf_stats(opts.quiet ? std::cerr : human, fin.progs, cmds, syscalls.hooks());
    warn_after_trace(opts, devs, fin.report, fin.counters, in_flight_at_stop, res.dropped, pid_watch, cmds);
    // trace_loop said at once why the trace ended; this says what was and was not written.
    if (events_error) throw Error(events_failure_message(events_error, opts));
    if (live_error) std::rethrow_exception(live_error);
    return res;
}

}  // namespace kvio::trace
