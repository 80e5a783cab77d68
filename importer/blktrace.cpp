#include "importer/blktrace.h"

#include <linux/blktrace_api.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <ostream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/input_file.h"

namespace kvio::importer {

namespace {

constexpr size_t kRecordBytes = 48;  // sizeof(struct blk_io_trace)
static_assert(sizeof(blk_io_trace) == kRecordBytes, "struct blk_io_trace is 48 bytes");

uint32_t get32(const char* p, bool swap) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}
uint64_t get64(const char* p, bool swap) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return swap ? __builtin_bswap64(v) : v;
}
uint16_t get16(const char* p, bool swap) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return swap ? __builtin_bswap16(v) : v;
}

}  // namespace

std::vector<BlkRecord> parse_blktrace(std::string_view b, const std::string& path, uint64_t& truncated) {
    std::vector<BlkRecord> out;
    size_t pos = 0;
    uint64_t n = 0;
    bool swap = false;
    while (pos < b.size()) {
        ++n;
        auto fail = [&](const char* field, const std::string& what) {
            throw Error(path + ": record " + std::to_string(n) + " at byte " + std::to_string(pos) + ": field '" +
                        field + "': " + what);
        };
        if (b.size() - pos < kRecordBytes) {
            ++truncated;
            break;
        }
        const char* p = b.data() + pos;
        uint32_t magic = get32(p, false);
        if (n == 1 && (magic & 0xffffff00u) != BLK_IO_TRACE_MAGIC &&
            (__builtin_bswap32(magic) & 0xffffff00u) == BLK_IO_TRACE_MAGIC)
            swap = true;
        magic = get32(p, swap);
        if ((magic & 0xffffff00u) != BLK_IO_TRACE_MAGIC) {
            char hex[16];
            std::snprintf(hex, sizeof hex, "0x%08x", magic);
            fail("magic", std::string("expected 0x656174NN (blk_io_trace), got ") + hex +
                              (n == 1 ? " (not a blktrace file?)" : ""));
        }
        if ((magic & 0xff) != BLK_IO_TRACE_VERSION)
            fail("version",
                 std::to_string(magic & 0xff) + ", this reader reads version " + std::to_string(BLK_IO_TRACE_VERSION));
        BlkRecord r;
        r.sequence = get32(p + 4, swap);
        r.time = get64(p + 8, swap);
        r.sector = get64(p + 16, swap);
        r.bytes = get32(p + 24, swap);
        r.action = get32(p + 28, swap);
        r.pid = get32(p + 32, swap);
        r.device = get32(p + 36, swap);
        r.cpu = get32(p + 40, swap);
        r.error = get16(p + 44, swap);
        const uint16_t pdu_len = get16(p + 46, swap);
        if (b.size() - pos - kRecordBytes < pdu_len) {
            ++truncated;
            break;
        }
        if (r.action >> BLK_TC_SHIFT & BLK_TC_NOTIFY) r.pdu.assign(p + kRecordBytes, pdu_len);
        out.push_back(std::move(r));
        pos += kRecordBytes + pdu_len;
    }
    return out;
}

std::vector<std::string> blktrace_files(const std::string& arg) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<std::string> files;
    if (fs::is_directory(arg, ec)) {
        std::string name;
        for (const auto& e : fs::directory_iterator(arg, ec)) {
            const std::string f = e.path().filename().string();
            const size_t at = f.rfind(".blktrace.");
            if (at == std::string::npos || at == 0 || f.size() == at + 10) continue;
            if (f.find_first_not_of("0123456789", at + 10) != std::string::npos) continue;
            if (!name.empty() && f.compare(0, at, name) != 0)
                throw Error(arg + ": holds the blktrace files of " + name + " and " + f.substr(0, at) +
                            ": give a prefix (" + arg + "/NAME)");
            name = f.substr(0, at);
            files.push_back(e.path().string());
        }
        if (files.empty()) throw Error(arg + ": no NAME.blktrace.<cpu> files in this directory");
    } else if (fs::is_regular_file(arg, ec)) {
        files.push_back(arg);
    } else {
        for (int cpu = 0; cpu < 4096; ++cpu) {
            const std::string f = arg + ".blktrace." + std::to_string(cpu);
            if (fs::exists(f, ec)) files.push_back(f);
        }
        if (files.empty())
            throw Error(arg + ": neither a file, a directory nor the prefix of " + arg + ".blktrace.<cpu> files");
    }
    std::sort(files.begin(), files.end());
    return files;
}

namespace {

/// The disk name blktrace gave the files: NAME of NAME.blktrace.N.
std::string disk_of(const std::string& file) {
    std::string f = std::filesystem::path(file).filename().string();
    const size_t at = f.rfind(".blktrace.");
    return at == std::string::npos ? f : f.substr(0, at);
}

/// blkparse's rwbs letters from the category bits, with a flush request as the kernel writes it ("F", not "FN").
std::string rwbs_of(uint32_t cat, uint32_t bytes, const char** op) {
    const bool w = cat & BLK_TC_WRITE, discard = cat & BLK_TC_DISCARD, flush = cat & BLK_TC_FLUSH;
    std::string s;
    if (discard) {
        if (flush) s += 'F';
        s += 'D';
        *op = "discard";
    } else if (w) {
        if (flush) s += 'F';
        s += 'W';
        *op = "write";
    } else if (bytes) {
        if (flush) s += 'F';
        s += 'R';
        *op = "read";
    } else if (flush) {
        s += 'F';
        *op = "flush";
    } else {
        s += 'N';
        *op = "other";
    }
    if (cat & BLK_TC_FUA) s += 'F';
    if (cat & BLK_TC_AHEAD) s += 'A';
    if (cat & BLK_TC_SYNC) s += 'S';
    if (cat & BLK_TC_META) s += 'M';
    return s;
}

struct Pending {
    uint64_t ts_issue = 0, ts_insert = 0;
    bool has_insert = false;
    uint64_t sector = 0;  ///< start sector at issue
    uint32_t bytes = 0, remaining = 0;
    uint32_t cat = 0, tid = 0, qd = 0, device = 0;
};

using Key = std::pair<uint32_t, uint64_t>;  // device, sector

/// Pairs blktrace's actions of one request (queue, getrq, insert, issue, requeue, complete; partial completions
/// continue at the next sector) into one kvio.events/1 cmd record, written to `out` at its completion and counted in
/// `s`; process notes name the threads. Records must come in time order.
class CommandJoiner {
public:
    CommandJoiner(std::ostream& out, std::string disk, BlktraceImport& s) : out_(out), disk_(std::move(disk)), s_(s) {}

    void add(const BlkRecord& r) {
        const uint32_t cat = r.action >> BLK_TC_SHIFT, act = r.action & 0xff;
        if (cat & BLK_TC_NOTIFY) {
            if (act == __BLK_TN_PROCESS) note_process(r);
            return;
        }
        const Key k{r.device, r.sector};
        switch (act) {
            case __BLK_TA_QUEUE:
                queue_tid_[k] = r.pid;
                break;
            case __BLK_TA_GETRQ:
                getrq_tid_[k] = r.pid;
                break;
            case __BLK_TA_INSERT:
                insert_ts_[k] = r.time;
                break;
            case __BLK_TA_ISSUE:
                issue(r, cat, k);
                break;
            case __BLK_TA_REQUEUE:
                requeue(r, k);
                break;
            case __BLK_TA_COMPLETE:
                complete(r, k);
                break;
            default:
                break;
        }
    }

    /// The requests never completed, in issue order: complete_lost records.
    void finish() {
        std::vector<Pending> left;
        for (auto& [k, q] : inflight_)
            for (auto& p : q) left.push_back(p);
        std::sort(left.begin(), left.end(), [](const Pending& a, const Pending& b) { return a.ts_issue < b.ts_issue; });
        for (const auto& p : left) {
            emit(p, 0, true, 0);
            ++s_.lost_completes;
        }
    }

private:
    /// A process note: the thread's name (after the cgroup id when the note carries one).
    void note_process(const BlkRecord& r) {
        std::string_view name = r.pdu;
        if (r.action & __BLK_TN_CGROUP) name.remove_prefix(std::min<size_t>(8, name.size()));  // cgroup id first
        comm_[r.pid] = std::string(name.substr(0, std::min(name.find('\0'), name.size())));
    }

    void issue(const BlkRecord& r, uint32_t cat, const Key& k) {
        Pending p;
        p.ts_issue = r.time;
        p.sector = r.sector;
        p.bytes = p.remaining = r.bytes;
        p.cat = cat;
        p.device = r.device;
        if (auto it = insert_ts_.find(k); it != insert_ts_.end()) {
            p.has_insert = it->second <= r.time;
            p.ts_insert = it->second;
            insert_ts_.erase(it);
        }
        if (auto g = getrq_tid_.find(k); g != getrq_tid_.end())
            p.tid = g->second, getrq_tid_.erase(g);
        else if (auto q = queue_tid_.find(k); q != queue_tid_.end())
            p.tid = q->second;
        else
            p.tid = r.pid;
        queue_tid_.erase(k);
        p.qd = ++depth_[r.device];
        inflight_[k].push_back(p);
    }

    void requeue(const BlkRecord& r, const Key& k) {
        auto it = inflight_.find(k);
        if (it == inflight_.end()) return;
        it->second.pop_front();
        if (it->second.empty()) inflight_.erase(it);
        --depth_[r.device];
        ++s_.requeued;
    }

    void complete(const BlkRecord& r, const Key& k) {
        auto it = inflight_.find(k);
        if (it == inflight_.end()) {
            ++s_.unmatched_completes;
            return;
        }
        Pending p = it->second.front();
        it->second.pop_front();
        if (it->second.empty()) inflight_.erase(it);
        if (r.bytes && r.bytes < p.remaining) {  // partial completion: the rest continues at the next sector
            p.remaining -= r.bytes;
            inflight_[{r.device, r.sector + r.bytes / 512}].push_back(p);
            return;
        }
        --depth_[r.device];
        emit(p, r.time, false, r.error);
    }

    void emit(const Pending& p, uint64_t ts_complete, bool lost, uint16_t error) {
        const char* op = "other";
        std::string rwbs = rwbs_of(p.cat, p.bytes, &op);
        nlohmann::json j = {{"type", "cmd"},      {"src", "block"},   {"dev", dev_string(decode_kernel_dev(p.device))},
                            {"disk", disk_},      {"op", op},         {"rwbs", rwbs},
                            {"sector", p.sector}, {"bytes", p.bytes}, {"ts_issue", p.ts_issue},
                            {"qd", p.qd},         {"pid", 0},         {"tid", p.tid}};
        auto c = comm_.find(p.tid);
        j["comm"] = c == comm_.end() ? "" : c->second;
        if (lost)
            j["complete_lost"] = true;
        else {
            j["ts_complete"] = ts_complete;
            j["d2c_ns"] = ts_complete - p.ts_issue;
        }
        if (p.has_insert) {
            j["ts_insert"] = p.ts_insert;
            j["q2d_ns"] = p.ts_issue - p.ts_insert;
        }
        if (error) j["error"] = error;
        out_ << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        ++s_.cmds;
    }

    std::ostream& out_;
    const std::string disk_;
    BlktraceImport& s_;
    std::unordered_map<uint32_t, std::string> comm_;  // tid -> name (process notes)
    std::map<Key, uint32_t> getrq_tid_, queue_tid_;
    std::map<Key, uint64_t> insert_ts_;
    std::map<Key, std::deque<Pending>> inflight_;
    std::unordered_map<uint32_t, uint32_t> depth_;  // device -> requests in flight
};

}  // namespace

BlktraceImport import_blktrace(const std::string& arg, std::ostream& out) {
    BlktraceImport s;
    s.files = blktrace_files(arg);
    std::vector<BlkRecord> all;
    for (const auto& f : s.files) {
        auto recs = parse_blktrace(read_input(f), f, s.truncated);
        all.insert(all.end(), std::make_move_iterator(recs.begin()), std::make_move_iterator(recs.end()));
    }
    s.records = all.size();
    std::stable_sort(all.begin(), all.end(), [](const BlkRecord& a, const BlkRecord& b) {
        return a.time != b.time ? a.time < b.time : a.cpu != b.cpu ? a.cpu < b.cpu : a.sequence < b.sequence;
    });
    CommandJoiner joiner(out, disk_of(s.files.front()), s);
    for (const auto& r : all) joiner.add(r);
    joiner.finish();
    nlohmann::json sum = {{"type", "summary"},    {"events", s.cmds},
                          {"dropped", 0},         {"unmatched_completes", s.unmatched_completes},
                          {"negative_deltas", 0}, {"lost_completes", s.lost_completes},
                          {"source", "blktrace"}};
    out << sum.dump() << '\n';
    return s;
}

}  // namespace kvio::importer
