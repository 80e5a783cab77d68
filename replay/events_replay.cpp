#include "replay/events_replay.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>

#include "common/devinfo.h"
#include "common/error.h"
#include "replay/compare.h"
#include "replay/safety.h"
#include "replay/stream.h"
#include "workload/engine.h"
#include "workload/execute.h"
#include "workload/gen.h"
#include "workload/target.h"

namespace kvio::replay {

namespace {

/// One command to reissue.
struct Item {
    uint32_t dev = 0;  ///< index into the device list (and fds)
    bool write = false;
    uint64_t offset = 0, len = 0;
    uint64_t ts_issue = 0, ts_complete = 0;
};

/// Sleeps until `mono_ns` or, when `stop` is set, until a stop signal interrupted the sleep.
void sleep_until(uint64_t mono_ns, const volatile sig_atomic_t* stop) {
    timespec ts{time_t(mono_ns / 1000000000ull), long(mono_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR && !(stop && *stop)) {}
}

/// Page-aligned I/O buffers (O_DIRECT), filled with a constant non-zero byte so written ranges read back
/// as replayed data.
struct Buffers {
    std::vector<void*> bufs;
    std::vector<uint16_t> free;
    Buffers(size_t n, size_t bytes) {
        const size_t page = size_t(::sysconf(_SC_PAGESIZE));
        bytes = (bytes + page - 1) / page * page;
        for (size_t i = 0; i < n; ++i) {
            void* p = nullptr;
            if (posix_memalign(&p, page, bytes) != 0) throw Error("cannot allocate replay I/O buffers");
            ::madvise(p, bytes, MADV_NOHUGEPAGE);
            std::memset(p, 0x6b, bytes);
            bufs.push_back(p);
            free.push_back(uint16_t(n - 1 - i));
        }
        size_ = bytes;
    }
    ~Buffers() {
        for (void* p : bufs) std::free(p);
    }
    std::vector<iovec> iovecs() const {
        std::vector<iovec> v;
        for (void* p : bufs) v.push_back({p, size_});
        return v;
    }
    size_t size_ = 0;
};

/// Adds the device `di` of the replay: `path` (a block device or regular file; --force skips the checks that it holds
/// no data) replays the commands of `src_dev` ("" : the capture's only device) in o.events. Its data commands that
/// fit the target's LBA size become `items` (offsets wrapped into the target), the others are counted in `s`; its
/// entry goes to s.devices and its target to `targets`.
void add_device(const EventsOptions& o, uint32_t di, const std::string& src_dev, const std::string& path,
                EventsSummary& s, std::vector<Item>& items, std::vector<workload::TargetInfo>& targets) {
    // Target first: a missing target is refused before the (possibly large) capture is read.
    workload::TargetInfo t = workload::inspect_target(path);
    if (t.kind != workload::TargetKind::BlockDevice && t.kind != workload::TargetKind::RegularFile)
        throw Error("replay target " + path + " is " + workload::target_kind_phrase(t.kind) +
                    "; device-level replay needs a block device or a regular file");
    {
        CheckComm comm;  // the check reads the first MiB
        workload::check_device_safe(t, o.force);
    }
    DeviceStream st = load_stream(o.events, src_dev);
    DeviceReplay d;
    d.source_dev = st.dev;
    d.source_disk = st.disk;
    d.target = path;
    d.nvme_rows = st.nvme_rows;
    s.source_rows += st.cmds.size();
    s.other_src_rows += st.other_src_rows;
    const uint64_t align = std::max<uint32_t>(t.lba_bytes, 512);
    uint64_t need = 0;
    for (const auto& c : st.cmds)
        if (is_data(c)) need = std::max(need, c.sector * 512 + c.bytes);
    d.target_bytes = t.capacity_bytes;
    if (t.kind == workload::TargetKind::RegularFile && t.capacity_bytes < need) d.target_bytes = need;
    std::vector<std::pair<uint64_t, uint64_t>> writes;
    for (const auto& c : st.cmds) {
        if (!is_data(c)) {
            ++s.skipped_non_data;
            continue;
        }
        const uint64_t off = c.sector * 512;
        if (off % align || c.bytes % align) {
            ++s.skipped_unaligned;
            continue;
        }
        auto m = map_offset(off, c.bytes, d.target_bytes, align);
        if (!m) {
            ++s.skipped_too_large;
            continue;
        }
        if (*m != off) ++d.wrapped;
        Item it;
        it.dev = di;
        it.write = c.op == kvio::Op::Write;
        it.offset = *m;
        it.len = c.bytes;
        it.ts_issue = c.ts_issue;
        it.ts_complete = c.ts_complete;
        if (it.write) writes.push_back({it.offset, it.len});
        items.push_back(it);
    }
    if (!o.force) d.checked_bytes = check_zero(path, merge_ranges(std::move(writes)), "", UINT64_MAX);
    s.devices.push_back(d);
    targets.push_back(t);
}

/// Grows each regular-file target smaller than the offsets it replays to (DeviceReplay::grown_to).
void grow_files(const std::vector<workload::TargetInfo>& targets, EventsSummary& s) {
    for (size_t i = 0; i < targets.size(); ++i)
        if (targets[i].kind == workload::TargetKind::RegularFile &&
            s.devices[i].target_bytes > targets[i].capacity_bytes) {
            workload::preallocate(targets[i].path, s.devices[i].target_bytes);
            s.devices[i].grown_to = s.devices[i].target_bytes;
        }
}

/// Queues command `index` (`it`) on `engine` with a free buffer of `pool`; returns the buffer's index.
uint16_t queue_item(workload::Engine& engine, const Item& it, size_t index, Buffers& pool,
                    const std::vector<int>& fds) {
    uint16_t b = pool.free.back();
    pool.free.pop_back();
    workload::IoUnit u;
    u.fd = fds[it.dev];
    u.write = it.write;
    u.offset = it.offset;
    u.len = uint32_t(it.len);
    u.buf = pool.bufs[b];
    u.buf_index = b;
    u.user_data = index;
    engine.queue(u);
    return b;
}

/// Counts the completion `c` of `it` (on target `path`) in `s`: a read or write, or an error (the first one named).
void count_completion(const workload::IoCompletion& c, const Item& it, const std::string& path, EventsSummary& s) {
    if (c.res < 0 || uint64_t(c.res) != it.len) {
        ++s.errors;
        if (s.first_error.empty())
            s.first_error =
                std::string(it.write ? "write" : "read") + " of " + std::to_string(it.len) + " bytes at " +
                std::to_string(it.offset) + " on " + path + ": " +
                (c.res < 0 ? std::strerror(int(-c.res)) : "short transfer of " + std::to_string(c.res) + " bytes");
    } else if (it.write) {
        ++s.writes, s.write_bytes += it.len;
    } else {
        ++s.reads, s.read_bytes += it.len;
    }
}

}  // namespace

/// Sets queue/nomerges to 2 (no merging at all) on a block-device target's disk for the replay, and back to what it
/// was at destruction: the captured commands reach the device as they were captured, not merged (measured in
/// docs/replay.md, "Commands the device saw": 2048 sequential 4 KiB writes reached a loop device as 86-90 commands
/// with merging, as 2048 without).
class NoMerges {
public:
    explicit NoMerges(const workload::TargetInfo& t) {
        if (t.kind != workload::TargetKind::BlockDevice) return;
        path_ = "/sys/dev/block/" + dev_string(t.dev.whole_disk) + "/queue/nomerges";
        std::ifstream in(path_);
        if (!(in >> old_) || old_ == "2" || !(std::ofstream(path_) << "2\n")) path_.clear();
    }
    ~NoMerges() {
        if (!path_.empty()) std::ofstream(path_) << old_ << "\n";
    }
    NoMerges(const NoMerges&) = delete;
    NoMerges& operator=(const NoMerges&) = delete;

private:
    std::string path_, old_;
};

EventsSummary replay_events(const EventsOptions& o) {
    if (o.engine != "io_uring" && o.engine != "posix")
        throw Error("--engine " + o.engine + ": device-level replay runs on io_uring or posix");
    std::vector<std::pair<std::string, std::string>> maps = o.maps;
    if (maps.empty()) {
        if (o.target.empty()) throw Error("replay --events needs --target PATH (or --map-dev MAJ:MIN=PATH)");
        maps.push_back({"", o.target});
    }
    EventsSummary s;
    std::vector<Item> items;
    std::vector<workload::TargetInfo> targets;
    for (uint32_t di = 0; di < maps.size(); ++di) {
        const auto& [src_dev, path] = maps[di];
        add_device(o, di, src_dev, path, s, items, targets);
    }
    grow_files(targets, s);
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.ts_issue < b.ts_issue; });
    const size_t n = items.size();
    s.to_replay = n;
    if (n == 0) return s;

    std::vector<uint64_t> tsi(n), tsc(n);
    uint64_t max_len = 0;
    for (size_t i = 0; i < n; ++i) {
        tsi[i] = items[i].ts_issue;
        tsc[i] = std::max(items[i].ts_complete, items[i].ts_issue);
        max_len = std::max(max_len, items[i].len);
    }
    Dependencies dep = dependencies(tsi, tsc);
    s.captured_overlap = dep.max_inflight;
    s.depth =
        o.engine == "posix" ? 1 : std::max<uint32_t>(1, std::min(dep.max_inflight, std::max<uint32_t>(o.max_qd, 1)));
    s.source_span_ns = tsi.back() - tsi.front();
    if (max_len > (1u << 30)) throw Error("a captured command is larger than 1 GiB");

    workload::EngineConfig ec;
    ec.name = o.engine;
    ec.qd = s.depth;
    std::unique_ptr<workload::Engine> engine = workload::make_engine(ec);
    Buffers pool(s.depth, max_len);
    engine->register_buffers(pool.iovecs());
    std::vector<int> fds;
    for (const auto& t : targets) fds.push_back(engine->open(t.path, workload::OpenFor::Both, false));
    std::vector<std::optional<DiskStat>> stat0;  // block-device targets: what the device completes (docs/replay.md)
    std::vector<std::unique_ptr<NoMerges>> no_merges;  // the captured command boundaries kept
    for (const auto& t : targets) {
        stat0.push_back(t.kind == workload::TargetKind::BlockDevice ? read_disk_stat(t.dev.dev) : std::nullopt);
        no_merges.push_back(std::make_unique<NoMerges>(t));
    }

    std::vector<char> completed(n, 0);
    std::vector<uint16_t> buf_of(n, 0);
    std::vector<workload::IoCompletion> comps;
    size_t next = 0, done = 0, inflight = 0, prefix = 0;
    const uint64_t t0 = workload::monotonic_ns();
    uint64_t first_sub = 0, last_sub = 0, last_done = t0;
    auto stopping = [&] { return o.stop && *o.stop; };
    while (done < n) {
        if (stopping() && inflight == 0) break;  // the commands issued so far are complete
        bool queued = false;
        uint64_t due = 0;
        bool time_blocked = false;
        while (!stopping() && next < n && inflight < s.depth && prefix >= dep.need[next]) {
            due = t0 + scheduled_ns(tsi[next], tsi[0], o.timing);
            uint64_t now = workload::monotonic_ns();
            if (now < due) {
                time_blocked = true;
                break;
            }
            buf_of[next] = queue_item(*engine, items[next], next, pool, fds);
            s.late_ns_max = std::max(s.late_ns_max, now - due);
            if (!first_sub) first_sub = now;
            last_sub = now;
            ++next;
            ++inflight;
            queued = true;
        }
        if (queued) engine->commit();
        comps.clear();
        if (inflight == 0) {
            if (time_blocked) sleep_until(due, o.stop);
            continue;
        }
        if (time_blocked && !stopping()) {
            // Waiting for the clock with commands in flight: collect what is done, nap briefly.
            if (engine->reap(0, comps) == 0) sleep_until(std::min(due, workload::monotonic_ns() + 50000), o.stop);
        } else if (!queued || inflight >= s.depth || stopping() || (next < n && prefix < dep.need[next])) {
            engine->reap(1, comps);
        } else {
            engine->reap(0, comps);
        }
        for (const auto& c : comps) {
            const size_t i = size_t(c.user_data);
            count_completion(c, items[i], targets[items[i].dev].path, s);
            completed[i] = 1;
            pool.free.push_back(buf_of[i]);
            --inflight;
            ++done;
            last_done = workload::monotonic_ns();
        }
        while (prefix < n && completed[dep.completion_order[prefix]]) ++prefix;
    }
    for (int fd : fds) engine->close(fd);
    for (size_t i = 0; i < targets.size(); ++i) {
        const auto end = stat0[i] ? read_disk_stat(targets[i].dev.dev) : std::nullopt;
        if (!end) continue;
        s.devices[i].device_counted = true;
        s.devices[i].device_ios = (end->read_ios - stat0[i]->read_ios) + (end->write_ios - stat0[i]->write_ios);
        s.devices[i].device_merges =
            (end->read_merges - stat0[i]->read_merges) + (end->write_merges - stat0[i]->write_merges);
    }
    if (done < n) s.stopped_by = int(*o.stop);
    s.replayed = s.reads + s.writes + s.errors;
    s.replay_span_ns = last_sub - first_sub;
    s.source_span_issued_ns = next ? tsi[next - 1] - tsi[0] : 0;
    s.elapsed_ns = last_done - t0;
    return s;
}

void print_events_summary(std::ostream& os, const EventsOptions& o, const EventsSummary& s) {
    char line[512];
    for (const auto& d : s.devices) {
        std::snprintf(line, sizeof line, "kvio replay: %s %s (%s rows) -> %s (%llu bytes%s)\n", d.source_disk.c_str(),
                      d.source_dev.c_str(), d.nvme_rows ? "nvme" : "block", d.target.c_str(),
                      (unsigned long long)d.target_bytes, d.grown_to ? ", file grown to fit" : "");
        os << line;
        if (d.wrapped)
            os << "  offsets: " << d.wrapped
               << " commands wrapped modulo the target size (the target is smaller than the source)\n";
        else
            os << "  offsets: unchanged (sector × 512 from the target's start)\n";
        if (o.force) os << "  --force: bytes where writes land were not checked\n";
    }
    std::snprintf(line, sizeof line, "  replayed %llu commands: %llu reads (%llu bytes), %llu writes (%llu bytes)%s\n",
                  (unsigned long long)s.replayed, (unsigned long long)s.reads, (unsigned long long)s.read_bytes,
                  (unsigned long long)s.writes, (unsigned long long)s.write_bytes,
                  s.errors ? (", " + std::to_string(s.errors) + " FAILED").c_str() : "");
    os << line;
    if (s.stopped_by)
        os << "  stopped by signal " << s.stopped_by << ": " << s.replayed << " of " << s.to_replay
           << " commands replayed\n";
    for (const auto& d : s.devices)  // the block layer merges adjacent commands: say what the device saw
        if (d.device_counted)
            os << "  " << d.target << " completed " << d.device_ios << " commands"
               << (d.device_merges ? " (the block layer merged " + std::to_string(d.device_merges) +
                                         " submitted commands into others; docs/replay.md)"
                                   : " (none merged)")
               << "\n";
    std::snprintf(
        line, sizeof line,
        "  skipped: %llu non-read/write, %llu unaligned to the target's logical block, %llu larger than the target",
        (unsigned long long)s.skipped_non_data, (unsigned long long)s.skipped_unaligned,
        (unsigned long long)s.skipped_too_large);
    os << line;
    if (s.other_src_rows) os << "; " << s.other_src_rows << " rows of the other src (same commands) ignored";
    os << "\n";
    // A stopped replay compares with the captured span of the commands it issued, not the whole capture's.
    std::string span;
    if (s.stopped_by) {
        std::snprintf(
            line, sizeof line, "captured issue span of the %llu commands replayed %.3f ms (whole capture %.3f ms)",
            (unsigned long long)s.replayed, double(s.source_span_issued_ns) / 1e6, double(s.source_span_ns) / 1e6);
        span = line;
    } else {
        std::snprintf(line, sizeof line, "captured issue span %.3f ms", double(s.source_span_ns) / 1e6);
        span = line;
    }
    std::snprintf(line, sizeof line,
                  "  timing %s, engine %s, depth %u (captured overlap %u): %s, replay %.3f ms (%+.2f%%), "
                  "latest submission %.3f ms behind schedule; all done in %.3f ms\n",
                  timing_name(o.timing).c_str(), o.engine.c_str(), s.depth, s.captured_overlap, span.c_str(),
                  double(s.replay_span_ns) / 1e6, pct_diff(double(s.source_span_issued_ns), double(s.replay_span_ns)),
                  double(s.late_ns_max) / 1e6, double(s.elapsed_ns) / 1e6);
    os << line;
}

}  // namespace kvio::replay
