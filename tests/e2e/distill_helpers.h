// Shared by the device-level distill tests: two loop devices, trace a command on one, distill onto the other.
#pragma once
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/helpers.h"

namespace kvio::test {

/// A scratch directory and two 256 MiB loop devices: `src` is traced, `dst` is the distilled job's --filename.
struct DistillLoops {
    TempDir d;
    LoopDevice src{256ull << 20}, dst{256ull << 20};
    /// LoopDevice::fill on both devices; true when both succeeded.
    bool fill(uint64_t mib) const { return src.fill(mib) == 0 && dst.fill(mib) == 0; }
};

/// Whether `kvio distill` (and so the replay `--verify` starts) runs realtime() or as the caller does: a replay with
/// `flow` pairs must not run real-time (a job ahead of its partner spins; docs/testing.md, "Workloads at real-time
/// priority").
enum class Replay { realtime, niced };

/// Distills l.src's trace (l.d/src.jsonl, written by trace_and_distill) onto l.dst with `extra` flags (e.g.
/// "--verify"), checks that fio parses the job, and returns distill's --json. Called again, it writes the same job and
/// (with --verify) replays it once more. `replay`: how distill runs; a realtime one whose job has `flow` pairs fails
/// the test (use Replay::niced there).
inline nlohmann::json distill_traced(const DistillLoops& l, const std::string& extra,
                                     Replay replay = Replay::realtime) {
    const std::string distill = kvio_bin() + " distill --events " + l.d.file("src.jsonl") + " --dev " + l.src.majmin +
                                " --filename " + l.dst.path + " -o " + l.d.file("job.ini") + " --json " +
                                l.d.file("d.json") + " " + extra;
    auto r = run(replay == Replay::realtime ? realtime(distill) : "nice -n -20 " + distill);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    std::cerr << r.out;
    auto p = run("fio --parse-only " + l.d.file("job.ini"));
    EXPECT_EQ(p.status, 0) << "fio --parse-only rejected the job: " << p.err << "\n" << slurp(l.d.file("job.ini"));
    auto j = nlohmann::json::parse(slurp(l.d.file("d.json")));
    if (replay == Replay::realtime && j["job"].contains("sections")) {
        for (const auto& s : j["job"]["sections"]) {
            EXPECT_FALSE(s["options"].contains("flow"))
                << "a job with flow pairs replayed real-time: pass Replay::niced\n"
                << slurp(l.d.file("job.ini"));
        }
    }
    return j;
}

/// The `lost_completes` of an events file's closing summary line (0 when it has none).
inline uint64_t lost_completes_of(const std::string& events) {
    std::ifstream in(events);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty()) last = line;
    const auto j = nlohmann::json::parse(last, nullptr, false);
    return j.is_object() ? j.value("lost_completes", uint64_t(0)) : 0;
}

/// Traces `cmd` (a shell command line, run realtime(): the traced workloads block between I/Os) on l.src into
/// l.d/src.jsonl, then distill_traced(l, extra, replay). A trace that lost completions (the host's: completions the
/// kernel ran no program for, docs/testing.md; distill refuses such a trace) is taken again, at most twice, and says
/// so: the test is about the job distilled from a whole trace.
inline nlohmann::json trace_and_distill(const DistillLoops& l, const std::string& cmd, const std::string& extra,
                                        Replay replay = Replay::realtime) {
    for (int attempt = 1;; ++attempt) {
        auto t = run("nice -n -20 " + kvio_bin() + " trace -q -d " + l.src.name + " --events " + l.d.file("src.jsonl") +
                     " -- " + realtime(cmd));
        EXPECT_EQ(t.status, 0) << t.err << t.out;
        const uint64_t lost = lost_completes_of(l.d.file("src.jsonl"));
        if (lost == 0 || attempt == 3) break;
        std::cerr << "trace " << attempt << " lost " << lost << " completions (the host's): traced again\n";
    }
    return distill_traced(l, extra, replay);
}

/// The sections that issue device commands (not the idle ones on the null engine); a one-section job as one.
inline std::vector<nlohmann::json> io_sections(const nlohmann::json& j) {
    std::vector<nlohmann::json> v;
    if (!j["job"].contains("sections")) return {j["job"]};
    for (const auto& s : j["job"]["sections"])
        if (s["options"].value("ioengine", "") != "null") v.push_back(s["options"]);
    return v;
}

}  // namespace kvio::test
