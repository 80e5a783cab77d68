// Shared by the device-level distill tests: two loop devices, trace a command on one, distill onto the other.
#pragma once
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

/// Traces `cmd` (a shell command line) on l.src, distills it onto l.dst with `extra` flags (e.g. "--verify"), checks
/// that fio parses the job, and returns distill's --json.
inline nlohmann::json trace_and_distill(const DistillLoops& l, const std::string& cmd, const std::string& extra) {
    auto t = run("nice -n -20 " + kvio_bin() + " trace -q -d " + l.src.name + " --events " + l.d.file("src.jsonl") +
                 " -- sh -c '" + cmd + "'");
    EXPECT_EQ(t.status, 0) << t.err << t.out;
    auto r =
        run("nice -n -20 " + kvio_bin() + " distill --events " + l.d.file("src.jsonl") + " --dev " + l.src.majmin +
            " --filename " + l.dst.path + " -o " + l.d.file("job.ini") + " --json " + l.d.file("d.json") + " " + extra);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    std::cerr << r.out;
    auto p = run("fio --parse-only " + l.d.file("job.ini"));
    EXPECT_EQ(p.status, 0) << "fio --parse-only rejected the job: " << p.err << "\n" << slurp(l.d.file("job.ini"));
    return nlohmann::json::parse(slurp(l.d.file("d.json")));
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
