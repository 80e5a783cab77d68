#include "validate/join.h"

#include <algorithm>
#include <unordered_map>

#include "common/error.h"

namespace kvio::validate {

const char* join_mode_name(JoinMode m) {
    switch (m) {
        case JoinMode::Auto:
            return "auto";
        case JoinMode::UserData:
            return "user_data";
        case JoinMode::Key:
            return "key";
        case JoinMode::Offset:
            return "offset";
    }
    return "?";
}

JoinMode parse_join_mode(const std::string& s) {
    if (s == "auto") return JoinMode::Auto;
    if (s == "user_data") return JoinMode::UserData;
    if (s == "key") return JoinMode::Key;
    if (s == "offset") return JoinMode::Offset;
    throw Error("--join: expected auto, user_data, key or offset, got \"" + s + "\"");
}

JoinMode choose_join_mode(const SemanticTrace& t, const std::vector<Command>& first, std::string& why) {
    bool ops_trace_id = false, ops_key = false;
    for (const auto& op : t.ops) {
        ops_trace_id |= op.trace_id != 0;
        ops_key |= !op.key.empty();
    }
    bool cmd_user_data = false, cmd_key = false;
    for (const Command& c : first) {
        cmd_user_data |= c.has_user_data && c.user_data != 0;
        cmd_key |= !c.key.empty();
    }
    const std::string& e = t.meta.engine;
    if (cmd_key && ops_key) {
        why = "commands carry NVMe KV keys";
        return JoinMode::Key;
    }
    if (cmd_user_data && ops_trace_id && (e == "io_uring" || e == "uring_cmd")) {
        why = "commands carry user_data, ops carry trace_id, engine " + e;
        return JoinMode::UserData;
    }
    why = "engine " + e + (cmd_user_data ? "" : ", commands carry no user_data") + ": byte ranges and issue times";
    return JoinMode::Offset;
}

uint64_t size_fingerprint(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void OpTally::add(uint64_t size) {
    ++cmds;
    bytes += size;
    min = std::min(min, size);
    max = std::max(max, size);
    mhash += size_fingerprint(size);
}

void OpTally::merge(const OpTally& o) {
    cmds += o.cmds;
    bytes += o.bytes;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    mhash += o.mhash;
}

static inline unsigned floor_log2(uint64_t v) { return 63u - unsigned(__builtin_clzll(v)); }

namespace {

enum class Match { Joined, Untagged, Tie, Straddle, Mismatch };

// Ops grouped by a join key (one extent, one NVMe key, one trace_id), each group sorted by ts_start,
// with a running maximum of the end time so a stabbing query walks back only over windows that can
// still contain the time.
struct TimeGroups {
    std::vector<uint32_t> op;        // op index
    std::vector<uint64_t> ts_start;  // of op[i]
    std::vector<uint64_t> pmax_ts;   // max ts over the group up to i
    struct Group {
        uint32_t first = 0, count = 0;
    };

    // `items` = (group id, op index) pairs; returns one Group per distinct id, in id order.
    template <class Id>
    std::vector<std::pair<Id, Group>> build(std::vector<std::pair<Id, uint32_t>>& items,
                                            const std::vector<ObjectOp>& ops) {
        std::sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
            if (a.first != b.first) return a.first < b.first;
            return ops[a.second].ts_start < ops[b.second].ts_start;
        });
        std::vector<std::pair<Id, Group>> out;
        for (size_t i = 0; i < items.size(); ++i) {
            const ObjectOp& o = ops[items[i].second];
            if (out.empty() || !(out.back().first == items[i].first)) {
                out.push_back({items[i].first, Group{uint32_t(op.size()), 0}});
                pmax_ts.push_back(o.ts);
            } else {
                pmax_ts.push_back(std::max(pmax_ts.back(), o.ts));
            }
            op.push_back(items[i].second);
            ts_start.push_back(o.ts_start);
            ++out.back().second.count;
        }
        return out;
    }

    // Calls f(op) for each op of group g whose [ts_start, ts] contains t.
    template <class F>
    void at_time(Group g, uint64_t t, const std::vector<ObjectOp>& ops, F&& f) const {
        auto b = ts_start.begin() + g.first, e = b + g.count;
        ptrdiff_t k = (std::upper_bound(b, e, t) - ts_start.begin()) - 1;
        for (; k >= ptrdiff_t(g.first) && pmax_ts[k] >= t; --k)
            if (ops[op[k]].ts >= t) f(op[k]);
    }
};

// Distinct extents of one device, sorted by start, with the running maximum of their ends.
struct DevRegions {
    uint32_t dev = 0;
    std::vector<uint64_t> start, end, pmax_end;
    std::vector<TimeGroups::Group> group;
};

struct Sink {
    std::vector<OpTally> ops;
    std::array<std::array<uint64_t, kSizeBins>, kOpKinds> bins{};
    CmdBytes joined, untagged, ties, straddles, mismatch;
    void merge(const Sink& o) {
        for (size_t i = 0; i < ops.size(); ++i)
            if (o.ops[i].cmds) ops[i].merge(o.ops[i]);
        for (int k = 0; k < kOpKinds; ++k)
            for (int b = 0; b < kSizeBins; ++b) bins[k][b] += o.bins[k][b];
        joined.merge(o.joined);
        untagged.merge(o.untagged);
        ties.merge(o.ties);
        straddles.merge(o.straddles);
        mismatch.merge(o.mismatch);
    }
};

// Direct-mapped memory of recent command identities: a record equal to one of the last ~64 k
// (same slot) is a duplicate. Constant memory; a real repeat within the window is never missed unless
// another command hashed to the same slot in between.
struct RecentCommands {
    static constexpr size_t kSlots = 1 << 16;
    std::vector<uint64_t> slot = std::vector<uint64_t>(kSlots, 0);
    bool seen_before(const Command& c) {
        uint64_t h = size_fingerprint(c.dev ^ (uint64_t(c.nvme) << 40) ^ (uint64_t(c.op) << 48));
        h = size_fingerprint(h ^ c.offset);
        h = size_fingerprint(h ^ c.bytes);
        h = size_fingerprint(h ^ c.ts_issue) | 1;
        uint64_t& s = slot[h & (kSlots - 1)];
        if (s == h) return true;
        s = h;
        return false;
    }
};

}  // namespace

struct Joiner::Impl {
    const SemanticTrace& t;
    JoinMode mode;
    TimeGroups groups;
    std::vector<DevRegions> regions;                              // offset
    std::unordered_map<std::string, TimeGroups::Group> by_key;    // key
    std::unordered_map<uint32_t, TimeGroups::Group> by_trace_id;  // user_data
    Sink main, deferred;
    bool deferred_used = false;
    RecentCommands recent;
    JoinResult res;
    // scratch: (op, bytes of the command inside that op's extent, fully contained?)
    struct Hit {
        uint32_t op;
        uint64_t overlap;
    };
    std::vector<Hit> hits;

    Impl(const SemanticTrace& tr, JoinMode m) : t(tr), mode(m) {
        main.ops.resize(t.ops.size());
        switch (mode) {
            case JoinMode::Offset:
                build_offset();
                break;
            case JoinMode::Key:
                build_key();
                break;
            case JoinMode::UserData:
                build_user_data();
                break;
            case JoinMode::Auto:
                throw Error("internal: Joiner needs a concrete join mode");
        }
    }

    void build_offset() {
        struct Rid {
            uint32_t dev;
            uint64_t start, end;
            bool operator<(const Rid& o) const { return std::tie(dev, start, end) < std::tie(o.dev, o.start, o.end); }
            bool operator==(const Rid& o) const { return dev == o.dev && start == o.start && end == o.end; }
        };
        std::vector<std::pair<Rid, uint32_t>> items;
        for (uint32_t i = 0; i < t.ops.size(); ++i)
            for (const Extent& e : t.ops[i].extents)
                if (e.len) items.push_back({Rid{t.ops[i].dev, e.off, e.off + e.len}, i});
        for (const auto& [rid, g] : groups.build(items, t.ops)) {
            if (regions.empty() || regions.back().dev != rid.dev)
                regions.push_back(DevRegions{rid.dev, {}, {}, {}, {}});
            DevRegions& d = regions.back();
            d.pmax_end.push_back(d.end.empty() ? rid.end : std::max(d.pmax_end.back(), rid.end));
            d.start.push_back(rid.start);
            d.end.push_back(rid.end);
            d.group.push_back(g);
        }
    }

    void build_key() {
        std::vector<std::pair<std::string, uint32_t>> items;
        for (uint32_t i = 0; i < t.ops.size(); ++i)
            if (!t.ops[i].key.empty()) items.push_back({t.ops[i].key, i});
        for (auto& [k, g] : groups.build(items, t.ops)) by_key.emplace(k, g);
    }

    void build_user_data() {
        std::vector<std::pair<uint32_t, uint32_t>> items;
        for (uint32_t i = 0; i < t.ops.size(); ++i) {
            uint64_t id = t.ops[i].trace_id;
            if (!id) continue;
            if (id > 0xffffffffULL)
                throw Error(t.path + ":" + std::to_string(t.ops[i].line) + ": field 'trace_id': " + std::to_string(id) +
                            " does not fit in the 32 upper bits of user_data");
            items.push_back({uint32_t(id), i});
        }
        for (auto& [k, g] : groups.build(items, t.ops)) by_trace_id.emplace(k, g);
    }

    static bool kind_matches(OpKind k, CmdOp op) { return (k == OpKind::Store) == (op == CmdOp::Write); }

    // Ops of group g that the command can belong to: window contains ts_issue (always when the group has one op
    // and `single_ok`), direction matches. Mismatched direction is remembered in `mismatch`.
    void group_hits(TimeGroups::Group g, const Command& c, bool single_ok, uint64_t overlap, bool& mismatch) {
        auto take = [&](uint32_t o) {
            if (!kind_matches(t.ops[o].kind, c.op)) {
                mismatch = true;
                return;
            }
            for (auto& h : hits)
                if (h.op == o) {
                    h.overlap += overlap;
                    return;
                }
            hits.push_back({o, overlap});
        };
        if (single_ok && g.count == 1)
            take(groups.op[g.first]);
        else
            groups.at_time(g, c.ts_issue, t.ops, take);
    }

    const DevRegions* dev_regions(uint32_t dev) const {
        for (const auto& d : regions)
            if (d.dev == dev) return &d;
        return nullptr;
    }

    Match match(const Command& c, uint32_t& op) {
        hits.clear();
        bool mismatch = false;
        switch (mode) {
            case JoinMode::UserData: {
                if (!c.has_user_data) return Match::Untagged;
                uint32_t id = uint32_t(c.user_data >> 32);
                if (!id) return Match::Untagged;
                auto it = by_trace_id.find(id);
                if (it == by_trace_id.end()) return Match::Untagged;
                group_hits(it->second, c, true, c.bytes, mismatch);
                break;
            }
            case JoinMode::Key: {
                if (c.key.empty()) return Match::Untagged;
                auto it = by_key.find(c.key);
                if (it == by_key.end()) return Match::Untagged;
                group_hits(it->second, c, false, c.bytes, mismatch);
                break;
            }
            case JoinMode::Offset: {
                const DevRegions* d = dev_regions(c.dev);
                if (!d) return Match::Untagged;
                uint64_t a = c.offset, b = c.offset + c.bytes;
                ptrdiff_t i = (std::upper_bound(d->start.begin(), d->start.end(), a) - d->start.begin()) - 1;
                for (ptrdiff_t j = i; j >= 0 && d->pmax_end[j] > a; --j)
                    if (d->end[j] > a) group_hits(d->group[j], c, false, std::min(b, d->end[j]) - a, mismatch);
                for (size_t j = size_t(i + 1); j < d->start.size() && d->start[j] < b; ++j)
                    group_hits(d->group[j], c, false, std::min(b, d->end[j]) - d->start[j], mismatch);
                break;
            }
            case JoinMode::Auto:
                break;
        }
        if (hits.empty()) return mismatch ? Match::Mismatch : Match::Untagged;
        size_t full = 0;
        for (const auto& h : hits) full += h.overlap >= c.bytes;
        if (hits.size() == 1) {
            op = hits[0].op;
            return full ? Match::Joined : Match::Straddle;
        }
        return full ? Match::Tie : Match::Straddle;
    }

    int64_t add(const Command& c) {
        res.records.add(c.bytes);
        if (c.nvme) ++res.nvme_rows;
        if ((c.op != CmdOp::Read && c.op != CmdOp::Write) || c.bytes == 0) {
            res.non_data.add(c.bytes);
            return -1;
        }
        if (recent.seen_before(c)) {
            res.duplicates.add(c.bytes);
            return -1;
        }
        Sink* s = &main;
        // On NVMe every command shows twice, as a block row and as an nvme row: block rows wait
        // until the end and count only when the trace has no nvme rows at all.
        if (!c.nvme) {
            if (!deferred_used) {
                deferred.ops.resize(t.ops.size());
                deferred_used = true;
            }
            s = &deferred;
        }
        uint32_t op = 0;
        switch (match(c, op)) {
            case Match::Joined:
                s->ops[op].add(c.bytes);
                if (!t.ops[op].failed) ++s->bins[int(t.ops[op].kind)][floor_log2(c.bytes)];
                s->joined.add(c.bytes);
                return int64_t(op);
            case Match::Untagged:
                s->untagged.add(c.bytes);
                break;
            case Match::Tie:
                s->ties.add(c.bytes);
                break;
            case Match::Straddle:
                s->straddles.add(c.bytes);
                break;
            case Match::Mismatch:
                s->mismatch.add(c.bytes);
                break;
        }
        return -1;
    }

    JoinResult finish() {
        if (deferred_used) {
            if (res.nvme_rows) {
                for (const CmdBytes* x :
                     {&deferred.joined, &deferred.untagged, &deferred.ties, &deferred.straddles, &deferred.mismatch})
                    res.passthrough_block_skipped.merge(*x);
            } else {
                main.merge(deferred);
            }
        }
        res.mode = mode;
        res.ops = std::move(main.ops);
        res.bins = main.bins;
        res.joined = main.joined;
        res.untagged = main.untagged;
        res.ties = main.ties;
        res.straddles = main.straddles;
        res.direction_mismatch = main.mismatch;
        return std::move(res);
    }
};

Joiner::Joiner(const SemanticTrace& t, JoinMode mode) : impl_(std::make_unique<Impl>(t, mode)) {}
Joiner::~Joiner() = default;
int64_t Joiner::add(const Command& c) { return impl_->add(c); }
JoinResult Joiner::finish() { return impl_->finish(); }

}  // namespace kvio::validate
