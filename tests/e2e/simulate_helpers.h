// Shared fixtures of the `kvio simulate` e2e tests: run a simulation and parse its results, a tmpfs to run it on.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

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
    /// `options`: more mount options ("nr_inodes=6": a filesystem whose files run out before its bytes do).
    explicit TmpfsMount(uint64_t bytes, const std::string& options = "") {
        const std::string o = "size=" + std::to_string(bytes) + (options.empty() ? "" : "," + options);
        if (::mount("tmpfs", dir.path.c_str(), "tmpfs", 0, o.c_str()) != 0)
            ADD_FAILURE() << "mount tmpfs: " << std::strerror(errno);
    }
    ~TmpfsMount() { ::umount2(dir.path.c_str(), MNT_DETACH); }
    TempDir dir;
};

/// A shell command started in the foreground of its own child (`sh -c "exec ..."`), so SIGINT keeps its default
/// disposition as at a terminal (a shell's `cmd &` would start it with SIGINT ignored). stdout/stderr go to files.
struct Spawned {
    Spawned(const std::string& cmd, const std::string& out_path, const std::string& err_path) {
        pid = ::fork();
        if (pid == 0) {
            const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            ::dup2(o, 1);
            ::dup2(e, 2);
            ::signal(SIGINT, SIG_DFL);
            ::signal(SIGTERM, SIG_DFL);
            ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    /// The exit status as a shell reports it: the exit code, or 128 + the signal that killed it.
    int wait() {
        int st = 0;
        if (pid <= 0 || ::waitpid(pid, &st, 0) != pid) return -1;
        pid = 0;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    ~Spawned() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            wait();
        }
    }
    pid_t pid = -1;
};

}  // namespace kvio::test
