#include "distiller/multi_job.h"

#include "distiller/target_limits.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace kvio::distiller {

namespace {

bool is_target_key(const std::string& k) {
    return k == "ioengine" || k == "cmd_type" || k == "filename" || k == "direct";
}

void prepend(FioSection& s, const std::string& key, const std::string& value) {
    std::erase_if(s.options, [&](const auto& kv) { return kv.first == key; });
    s.options.insert(s.options.begin(), {key, value});
}

bool has(const FioSection& s, const std::string& key) {
    return std::any_of(s.options.begin(), s.options.end(), [&](const auto& kv) { return kv.first == key; });
}

// Section names from the disk name, kept to what a fio section name and wait_for= hold safely.
std::string label(const EventTrace& t) {
    std::string n = t.disk.empty() ? t.dev : t.disk;
    for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    return n;
}

std::string secs_str(uint64_t ns) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f s", double(ns) / 1e9);
    return b;
}

// Commands [b, e) of `t` as a trace of their own. The trace's completions without an issue (the flush requests of a
// device without FUA) are not placed in time: each stretch gets its share by writes, so its flush rule still sees them.
EventTrace piece_of(const EventTrace& t, size_t b, size_t e, uint64_t all_writes) {
    EventTrace s = empty_like(t);
    s.has_summary = t.has_summary;
    uint64_t writes = 0;
    for (size_t i = b; i < e; ++i) {
        s.cmds.push_back(t.cmds[i]);
        writes += t.cmds[i].op == Op::Write;
        s.lost_completes += !t.cmds[i].completion_seen();
    }
    s.records = s.cmds.size();
    s.unmatched_completes = all_writes ? t.unmatched_completes * writes / all_writes : 0;
    return s;
}

uint64_t last_end(const std::vector<Cmd>& cmds) {
    uint64_t e = 0;
    for (const auto& c : cmds) e = std::max(e, c.end_ts());
    return e;
}

// One device's sections in trace order: its stretches between trim runs (phased) and the runs (trim sections).
struct Chain {
    std::vector<FioSection> secs;
    uint64_t first = 0, last = 0;  // first issue, last completion (ns)
};

Chain device_chain(const DeviceJobInput& in, const std::string& prefix, const PhaseOptions& popt, DevicePlan& plan,
                   std::vector<std::string>& not_inferred) {
    const EventTrace& t = *in.trace;
    plan.trims = trim_runs(t.cmds);
    struct Stretch {
        size_t b, e;
        int trim;  // index into plan.trims, -1: reads and writes
    };
    std::vector<Stretch> st;
    size_t at = 0;
    for (size_t k = 0; k < plan.trims.size(); ++k) {
        if (plan.trims[k].begin > at) st.push_back({at, plan.trims[k].begin, -1});
        st.push_back({plan.trims[k].begin, plan.trims[k].end, int(k)});
        at = plan.trims[k].end;
    }
    if (at < t.cmds.size()) st.push_back({at, t.cmds.size(), -1});

    Chain c;
    c.first = t.cmds.front().ts_issue;
    c.last = last_end(t.cmds);
    uint64_t prev_end = 0;
    size_t part = 0;
    for (const auto& s : st) {
        EventTrace piece = piece_of(t, s.b, s.e, in.whole->write.cmds);
        const bool data = std::any_of(piece.cmds.begin(), piece.cmds.end(),
                                      [](const Cmd& x) { return x.op == Op::Read || x.op == Op::Write; });
        if (s.trim < 0 && !data) continue;  // flushes or a few discards only: nothing a section would issue
        const uint64_t first = piece.cmds.front().ts_issue;
        if (part && first > prev_end && first - prev_end >= popt.gap_ns)
            c.secs.push_back(idle_section(prefix + "-idle" + std::to_string(part + 1), first - prev_end,
                                          "part " + std::to_string(part + 1)));
        ++part;
        const std::string name = plan.trims.empty() ? prefix : prefix + "-part" + std::to_string(part);
        std::vector<FioSection> secs;
        if (s.trim >= 0) {
            SectionSpec spec;
            spec.target = false;
            secs.push_back(trim_section(t, plan.trims[size_t(s.trim)], in.opt, spec, name + "-trim", not_inferred));
        } else {
            JobOptions o = in.opt;
            o.job_name = name;
            PhasePlan ph;
            FioJob j = make_phased_job(piece, profile_events(piece), o, popt, &ph);
            plan.pieces.push_back(std::move(ph));
            not_inferred.insert(not_inferred.end(), j.not_inferred.begin(), j.not_inferred.end());
            if (j.sections.empty()) {
                FioSection one;
                one.name = name;
                one.comment = "one mix";
                for (const auto& kv : j.options)
                    if (!is_target_key(kv.first)) one.options.push_back(kv);
                for (const auto& w : j.why)
                    if (!is_target_key(w.substr(0, w.find('=')))) one.why.push_back(w);
                secs.push_back(one);
            } else {
                secs = j.sections;
            }
            secs.front().comment = "commands " + std::to_string(s.b) + "-" + std::to_string(s.e - 1) + " of " + t.dev +
                                   (plan.trims.empty() ? "" : " (reads and writes between trim phases)") + ": " +
                                   secs.front().comment;
        }
        if (part > 1 && !has(secs.front(), "stonewall")) prepend(secs.front(), "stonewall", "");
        c.secs.insert(c.secs.end(), secs.begin(), secs.end());
        prev_end = last_end(piece.cmds);
    }
    return c;
}

// A device's order inside a group of devices that run at the same time: stonewall would wait for every device, so
// each section that waited for the ones before it waits for its own device's previous section instead (fio's
// wait_for names one job: after a pair of concurrent sections, the later of the two in the file).
void chain_with_wait_for(Chain& c) {
    std::string prev, waitee;
    for (auto& s : c.secs) {
        const bool sw = has(s, "stonewall");
        std::erase_if(s.options, [](const auto& kv) { return kv.first == "stonewall"; });
        if (sw && !prev.empty()) waitee = prev;
        if (!waitee.empty()) prepend(s, "wait_for", waitee);
        prev = s.name;
    }
}

}  // namespace

FioJob make_job(const std::vector<DeviceJobInput>& devs, const JobOptions& base, const PhaseOptions& popt,
                std::vector<DevicePlan>* plans) {
    std::vector<DevicePlan> dp(devs.size());
    for (size_t i = 0; i < devs.size(); ++i) {
        dp[i].dev = devs[i].trace->dev;
        dp[i].disk = devs[i].trace->disk;
        dp[i].filename = devs[i].opt.filename;
    }
    if (devs.size() == 1 && trim_runs(devs[0].trace->cmds).empty()) {
        PhasePlan ph;
        FioJob j = make_phased_job(*devs[0].trace, *devs[0].whole, devs[0].opt, popt, &ph);
        dp[0].pieces.push_back(std::move(ph));
        dp[0].needs_bytes = j.needs_bytes();
        if (plans) *plans = std::move(dp);
        return j;
    }
    const bool multi = devs.size() > 1;
    FioJob job;
    std::vector<std::string> notes;
    FioSection global;
    {
        JobOptions g = devs[0].opt;
        if (multi) g.filename.clear();  // per section, and the header says which have none
        std::vector<std::string> ni;
        target_options(*devs[0].whole, g, ni, global);
        for (const auto& n : ni)
            if (!multi || n.rfind("the target:", 0) != 0) job.not_inferred.push_back(n);
    }
    std::vector<Chain> chains;
    for (size_t i = 0; i < devs.size(); ++i) {
        const DeviceJobInput& in = devs[i];
        for (const auto& n : check_trace_health(*in.whole, in.opt))
            notes.push_back(multi ? in.trace->dev + ": " + n : n);
        const std::string prefix = multi ? base.job_name + "-" + label(*in.trace) : base.job_name;
        chains.push_back(device_chain(in, prefix, popt, dp[i], job.not_inferred));
        for (const auto& pc : dp[i].pieces)
            if (!pc.note.empty()) notes.push_back(multi ? in.trace->dev + ": " + pc.note : pc.note);
        if (!multi) continue;
        // Each device's sections run on its own target, with its own engine when it differs from [global]'s.
        FioSection own;
        JobOptions o = in.opt;
        o.filename.clear();
        std::vector<std::string> ignored;
        target_options(*in.whole, o, ignored, own);
        for (auto& s : chains.back().secs) {
            if (s.get("ioengine") == "null") continue;
            if (own.options != global.options)
                for (auto it = own.options.rbegin(); it != own.options.rend(); ++it) prepend(s, it->first, it->second);
            if (!in.opt.filename.empty()) prepend(s, "filename", fio_filename_escape(in.opt.filename));
        }
    }
    for (size_t i = 0; i < devs.size(); ++i) {
        FioJob one;
        one.sections = chains[i].secs;
        dp[i].needs_bytes = one.needs_bytes();
    }

    // Groups of devices that overlapped in time, in order of their first command.
    std::vector<size_t> order(devs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return chains[a].first < chains[b].first; });
    std::vector<std::vector<size_t>> groups;
    uint64_t group_end = 0;
    for (size_t i : order) {
        if (groups.empty() || chains[i].first >= group_end) groups.emplace_back(), group_end = 0;
        groups.back().push_back(i);
        group_end = std::max(group_end, chains[i].last);
        dp[i].group = groups.size() - 1;
    }
    uint64_t prev_end = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
        std::vector<FioSection> secs;
        uint64_t first = UINT64_MAX, last = 0;
        for (size_t i : groups[g]) {
            if (groups[g].size() > 1) chain_with_wait_for(chains[i]);
            secs.insert(secs.end(), chains[i].secs.begin(), chains[i].secs.end());
            first = std::min(first, chains[i].first);
            last = std::max(last, chains[i].last);
        }
        if (g) {
            if (first > prev_end && first - prev_end >= popt.gap_ns)
                job.sections.push_back(idle_section(base.job_name + "-idle-group" + std::to_string(g + 1),
                                                    first - prev_end, "device group " + std::to_string(g + 1)));
            prepend(secs.front(), "stonewall", "");
        }
        if (multi)
            secs.front().comment =
                "device group " + std::to_string(g + 1) + " of " + std::to_string(groups.size()) + " (" +
                std::to_string(groups[g].size()) + " device(s) " +
                (groups[g].size() > 1 ? "whose commands overlapped in time: they run at the same time, each "
                                        "device's sections in order with wait_for"
                                      : "") +
                "): " + secs.front().comment;
        job.sections.insert(job.sections.end(), secs.begin(), secs.end());
        prev_end = last;
    }
    job.options = global.options;
    job.not_inferred.push_back("per-command timing and ordering (use --iolog for an exact replay)");
    std::sort(job.not_inferred.begin(), job.not_inferred.end());
    job.not_inferred.erase(std::unique(job.not_inferred.begin(), job.not_inferred.end()), job.not_inferred.end());

    std::ostringstream o;
    bool writes = false;
    for (const auto& in : devs) writes |= in.whole->write.cmds > 0;
    if (!multi) {
        o << job_header(*devs[0].whole, devs[0].opt, writes);
        for (const auto& l : device_level_lines(*devs[0].whole, job, devs[0].opt)) o << "; " << l << "\n";
        o << "; " << dp[0].trims.size() << " trim phase(s) (docs/distill.md \"Discards\": runs of >= " << kMinTrimRun
          << " discards with no read or write among them), in trace order with the phases of the reads and writes "
             "between them\n";
    } else {
        o << "; fio job distilled by `kvio distill` from a kernel trace\n";
        o << "; source: " << devs[0].trace->path << " (" << devs[0].trace->format << "), " << devs.size()
          << " devices (docs/distill.md \"Several devices\"), each with its own sections:\n";
        std::vector<std::string> unmapped;
        for (size_t i = 0; i < devs.size(); ++i) {
            const auto& w = *devs[i].whole;
            o << ";   " << w.dev << (w.disk.empty() ? "" : " (" + w.disk + ")") << ": " << w.cmds()
              << " read/write and " << w.discard_cmds << " discard commands over " << secs_str(w.span_ns) << ", group "
              << dp[i].group + 1 << ", ";
            if (devs[i].opt.filename.empty()) {
                o << "no target given: its sections set no filename\n";
                unmapped.push_back(w.dev);
            } else {
                o << "filename=" << devs[i].opt.filename << "\n";
                if (w.write.cmds && devs[i].opt.target_is_block)
                    o << "; WARNING: this job WRITES to the block device " << devs[i].opt.filename
                      << ": its data will be destroyed\n";
            }
        }
        if (!unmapped.empty()) {
            std::string list;
            for (const auto& u : unmapped) list += (list.empty() ? "" : ", ") + u;
            o << "; filename is left to fio's command line for " << list << " (`fio --filename=/dev/DEV JOB`)"
              << (unmapped.size() > 1
                      ? ": all of them would then share that one target; map each with --filename DEV=PATH"
                      : "")
              << "\n";
        }
    }
    write_job_body(o, notes, global.why, job);
    job.text = o.str();
    if (plans) *plans = std::move(dp);
    return job;
}

nlohmann::json devices_json(const std::vector<DevicePlan>& plans) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& p : plans) {
        nlohmann::json runs = nlohmann::json::array(), pieces = nlohmann::json::array();
        for (const auto& r : p.trims)
            runs.push_back(
                {{"begin", r.begin}, {"end", r.end}, {"discards", r.discards}, {"secure_erases", r.secure_erases}});
        for (const auto& ph : p.pieces) pieces.push_back(phases_json(ph));
        a.push_back({{"dev", p.dev},
                     {"disk", p.disk},
                     {"filename", p.filename},
                     {"group", p.group + 1},
                     {"trim_runs", runs},
                     {"phases", pieces}});
    }
    return a;
}

}  // namespace kvio::distiller
