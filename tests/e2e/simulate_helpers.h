// Shared fixtures of the `kvio simulate` e2e tests: run a simulation and parse its results, a tmpfs to run it on.
#pragma once
#include <sys/mount.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/helpers.h"

namespace kvio::test {

struct SimRun {
    CmdResult cmd;
    nlohmann::json results;
};

/// Runs `kvio simulate ARGS --output DIR/r.json --quiet` followed by the shell text `then` (e.g. "& p=$!; ...")
/// and parses the results file (null if absent).
inline SimRun simulate(const TempDir& dir, const std::string& args, const std::string& then = "") {
    SimRun r;
    std::string out = dir.file("r.json");
    std::filesystem::remove(out);
    r.cmd = run(kvio_bin() + " simulate " + args + " --output " + out + " --quiet " + then);
    if (std::filesystem::exists(out)) r.results = nlohmann::json::parse(slurp(out));
    return r;
}

/// A tmpfs of `bytes` bytes mounted on a fresh temp dir, unmounted at destruction.
struct TmpfsMount {
    explicit TmpfsMount(uint64_t bytes) {
        if (::mount("tmpfs", dir.path.c_str(), "tmpfs", 0, ("size=" + std::to_string(bytes)).c_str()) != 0)
            ADD_FAILURE() << "mount tmpfs: " << std::strerror(errno);
    }
    ~TmpfsMount() { ::umount2(dir.path.c_str(), MNT_DETACH); }
    TempDir dir;
};

}  // namespace kvio::test
