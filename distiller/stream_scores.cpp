#include "distiller/stream_scores.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "distiller/fidelity.h"

namespace kvio::distiller {

namespace {

// Command sizes per direction of the commands `keep` selects.
struct Side {
    Dist read, write;
    uint64_t reads = 0, writes = 0;
    void add(const Cmd& c) {
        if (c.op == Op::Read) ++read[c.bytes], ++reads;
        if (c.op == Op::Write) ++write[c.bytes], ++writes;
    }
    double read_share() const { return reads + writes ? 100.0 * double(reads) / double(reads + writes) : 0; }
};

StreamScore scored(const Side& o, const Side& r, bool have_replay) {
    StreamScore s;
    s.orig_reads = o.reads, s.orig_writes = o.writes, s.replay_reads = r.reads, s.replay_writes = r.writes;
    s.read_share_orig = o.read_share();
    s.read_share_replay = r.read_share();
    if (have_replay) {
        s.size_tv_read = tv_distance(o.read, r.read);
        s.size_tv_write = tv_distance(o.write, r.write);
    }
    return s;
}

}  // namespace

std::vector<uint32_t> replay_stream_pids(const std::vector<SyscallRec>& replay_calls, uint32_t fs_dev, size_t streams) {
    std::set<uint32_t> pids;
    for (const auto& c : replay_calls)
        if (c.has_file && c.fs_dev == fs_dev && (c.kind == SysKind::Read || c.kind == SysKind::Write))
            pids.insert(c.pid);
    if (pids.size() != streams) return {};
    return {pids.begin(), pids.end()};
}

std::vector<StreamScore> score_streams(const EventTrace& orig, const FilePattern& p, const EventTrace& replay,
                                       const std::vector<uint32_t>& pids) {
    std::map<uint32_t, size_t> of_tid, of_pid;  // submitter -> stream index
    for (size_t k = 0; k < p.streams.size(); ++k) of_tid[p.streams[k].tid] = k;
    for (size_t k = 0; k < pids.size(); ++k) of_pid[pids[k]] = k;
    const size_t n = p.streams.size();
    std::vector<Side> o(n + 1), r(n + 1);  // the last: the others
    for (const auto& c : orig.cmds) {
        auto it = of_tid.find(c.tid);
        o[it == of_tid.end() ? n : it->second].add(c);
    }
    for (const auto& c : replay.cmds) {
        auto it = of_pid.find(c.pid);
        r[it == of_pid.end() ? n : it->second].add(c);
    }
    std::vector<StreamScore> out;
    for (size_t k = 0; k <= n; ++k) {
        StreamScore s = scored(o[k], r[k], !pids.empty());
        if (k < n) {
            s.pid = p.streams[k].pid, s.tid = p.streams[k].tid, s.comm = p.streams[k].comm;
            s.replay_pid = pids.empty() ? 0 : pids[k];
        } else {
            s.comm = "(others)";
        }
        out.push_back(s);
    }
    return out;
}

nlohmann::json streams_json(const std::vector<StreamScore>& s) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : s)
        a.push_back(
            {{"pid", x.pid},
             {"tid", x.tid},
             {"comm", x.comm},
             {"replay_pid", x.replay_pid},
             {"cmds",
              {{"orig", {{"read", x.orig_reads}, {"write", x.orig_writes}}},
               {"replay", {{"read", x.replay_reads}, {"write", x.replay_writes}}}}},
             {"size_tv", {{"read", x.size_tv_read}, {"write", x.size_tv_write}}},
             {"read_share",
              {{"orig", x.read_share_orig}, {"replay", x.read_share_replay}, {"err_points", x.read_share_err()}}}});
    return a;
}

std::string streams_text(const std::vector<StreamScore>& s) {
    std::string t;
    char b[320];
    for (const auto& x : s) {
        std::snprintf(b, sizeof b,
                      "  stream %u/%u %s: cmds r/w %llu/%llu -> %llu/%llu, size TV r %.3f w %.3f, read share %.1f -> "
                      "%.1f %% (%.1f points)\n",
                      x.pid, x.tid, x.comm.c_str(), (unsigned long long)x.orig_reads, (unsigned long long)x.orig_writes,
                      (unsigned long long)x.replay_reads, (unsigned long long)x.replay_writes, x.size_tv_read,
                      x.size_tv_write, x.read_share_orig, x.read_share_replay, x.read_share_err());
        t += b;
    }
    return t;
}

}  // namespace kvio::distiller
