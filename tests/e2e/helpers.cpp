#include "tests/e2e/helpers.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kvio::test {
namespace fs = std::filesystem;

CmdResult run(const std::string& cmd) {
    TempDir d;
    std::string full = "( " + cmd + " ) >" + d.file("out") + " 2>" + d.file("err");
    int st = std::system(full.c_str());
    CmdResult r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(d.file("out"));
    r.err = slurp(d.file("err"));
    return r;
}

std::string kvio_bin() {
    const char* b = std::getenv("KVIO_BIN");
    return b ? b : "build/kvio";
}

std::string realtime(const std::string& cmd) {
    // Quoted for sh -c: every ' of cmd closes the quote, adds an escaped one and reopens it.
    std::string q;
    for (char c : cmd) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return "chrt -f 10 sh -c '" + q + "'";
}

std::string trace_in_background(const std::string& ready, const std::string& args, const std::string& var) {
    return "rm -f " + ready + "; " + kvio_bin() + " trace --ready-file " + ready + " " + args + " & " + var + "=$!; " +
           "for i in $(seq 600); do [ -e " + ready + " ] && break; sleep 0.05; done; ";
}

std::string kvio_test_hooks_bin() {
    const char* b = std::getenv("KVIO_TEST_HOOKS_BIN");
    return b ? b : (fs::path(kvio_bin()).parent_path() / "kvio-test-hooks").string();
}

TempDir::TempDir(const std::string& base) {
    std::string tmpl = base + "/kvio-test-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp under " + base + " failed");
    path = tmpl;
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
}

static std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// The pid in a leftover's name "<prefix><pid>-XXXXXX", or 0 when the name is not of that form.
static pid_t pid_in_name(const std::string& name, const std::string& prefix) {
    if (name.compare(0, prefix.size(), prefix) != 0) return 0;
    const char* end = name.data() + name.size();
    pid_t pid = 0;
    auto [p, err] = std::from_chars(name.data() + prefix.size(), end, pid);
    return err == std::errc() && p != end && *p == '-' ? pid : 0;
}

// A leftover of a dead test process: its name carries a pid that no longer runs (EPERM: alive, not ours).
static bool of_dead_process(const std::string& name, const std::string& prefix) {
    pid_t pid = pid_in_name(name, prefix);
    return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

ReapLock::ReapLock() : fd_(open("/var/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0 || flock(fd_, LOCK_EX) != 0) throw std::runtime_error("cannot lock /var/tmp for reaping");
}

ReapLock::~ReapLock() { close(fd_); }

size_t reap_dead_tests_leftovers(const std::string& dir) {
    ReapLock lock;
    return reap_dead_tests_leftovers_locked(dir);
}

size_t reap_dead_tests_leftovers_locked(const std::string& dir) {
    size_t reaped = 0;
    const std::string mnt_prefix = dir + "/kvio-mnt-", loop_prefix = dir + "/kvio-loop-";
    std::ifstream mounts("/proc/self/mounts");
    std::string dev, mnt, rest;
    std::vector<std::string> stale_mnts;
    while (mounts >> dev >> mnt && std::getline(mounts, rest))
        if (of_dead_process(mnt, mnt_prefix)) stale_mnts.push_back(mnt);
    for (const auto& m : stale_mnts)
        if (run("umount " + m).status == 0) ++reaped;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/sys/block", ec)) {
        std::string file = trim(slurp(e.path().string() + "/loop/backing_file"));
        if (file.size() > 10 && file.compare(file.size() - 10, 10, " (deleted)") == 0) file.resize(file.size() - 10);
        // Any directory: a loop over a killed test's TempDir outlives the directory's removal.
        if (of_dead_process(fs::path(file).filename().string(), "kvio-loop-") &&
            run("losetup -d /dev/" + e.path().filename().string()).status == 0)
            ++reaped;
    }
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        std::string p = e.path().string();
        if (of_dead_process(p, loop_prefix) || of_dead_process(p, mnt_prefix)) reaped += fs::remove(p, ec) ? 1 : 0;
    }
    return reaped;
}

LoopDevice::LoopDevice(uint64_t size_bytes, bool direct_io, const std::string& dir) {
    reap_dead_tests_leftovers(dir);
    char tmpl[256];
    std::snprintf(tmpl, sizeof tmpl, "%s/kvio-loop-%d-XXXXXX", dir.c_str(), int(getpid()));
    int fd = mkstemp(tmpl);
    if (fd < 0) throw std::runtime_error("mkstemp failed in " + dir);
    if (ftruncate(fd, off_t(size_bytes)) != 0) throw std::runtime_error("ftruncate failed");
    close(fd);
    backing = tmpl;
    auto r = run(std::string("losetup -f --show ") + (direct_io ? "--direct-io=on " : "") + backing);
    if (r.status != 0) throw std::runtime_error("losetup failed: " + r.err);
    path = trim(r.out);
    name = path.substr(path.rfind('/') + 1);
    majmin = trim(slurp("/sys/block/" + name + "/dev"));
    // A loop device's queue settings outlive its detach: a 4 KiB max_sectors_kb that a crashed test or a hand
    // experiment left would split every later test's commands on this minor. Each device starts from the block
    // layer's default (max_sectors_kb = max_hw_sectors_kb capped at 1280 KiB, BLK_DEF_MAX_SECTORS_CAP) and merging on.
    const std::string q = "/sys/block/" + name + "/queue/";
    uint64_t hw = 1280;
    try {
        hw = std::min<uint64_t>(std::stoull(trim(slurp(q + "max_hw_sectors_kb"))), 1280);
    } catch (const std::exception&) {}
    std::ofstream(q + "max_sectors_kb") << hw;
    std::ofstream(q + "nomerges") << 0;
}

LoopDevice::~LoopDevice() {
    for (auto it = saved_attrs.rbegin(); it != saved_attrs.rend(); ++it) {
        std::ofstream f("/sys/block/" + name + "/queue/" + it->first);
        f << it->second;
    }
    if (!path.empty()) run("losetup -d " + path);
    std::error_code ec;
    fs::remove(backing, ec);
}

int LoopDevice::fill(uint64_t mib) const {
    return run("dd if=/dev/zero of=" + path + " bs=1M count=" + std::to_string(mib) + " oflag=direct status=none")
        .status;
}

/// The value to write back for a queue attribute as sysfs shows it: a choice list (scheduler: "none
/// [mq-deadline] kyber") gives its bracketed entry, which is all the kernel takes back.
static std::string queue_attr_value(const std::string& shown) {
    auto open = shown.find('['), close = shown.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) return shown;
    return shown.substr(open + 1, close - open - 1);
}

void LoopDevice::set_queue_attr(const std::string& attr, const std::string& value) {
    saved_attrs.emplace_back(attr, queue_attr_value(trim(slurp("/sys/block/" + name + "/queue/" + attr))));
    std::ofstream f("/sys/block/" + name + "/queue/" + attr);
    f << value;
    f.flush();
    if (!f) throw std::runtime_error("cannot set " + attr + "=" + value + " on " + name);
}

Ext4Mount::Ext4Mount(uint64_t size_bytes, const std::string& backing_dir) : loop(size_bytes, true, backing_dir) {
    auto r = run("mkfs.ext4 -q -F " + loop.path);
    if (r.status != 0) throw std::runtime_error("mkfs.ext4 failed: " + r.err);
    char tmpl[64];
    std::snprintf(tmpl, sizeof tmpl, "/var/tmp/kvio-mnt-%d-XXXXXX", int(getpid()));
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    mnt = tmpl;
    r = run("mount " + loop.path + " " + mnt);
    if (r.status != 0) throw std::runtime_error("mount failed: " + r.err);
}

Ext4Mount::~Ext4Mount() {
    run("umount " + mnt);
    std::error_code ec;
    fs::remove(mnt, ec);
}

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
    std::ifstream in(path);
    std::vector<nlohmann::json> out;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string md5(const std::string& path) {
    auto r = run("md5sum " + path);
    if (r.status != 0 || r.out.size() < 32) throw std::runtime_error("md5sum " + path + ": " + r.err);
    return r.out.substr(0, 32);
}

}  // namespace kvio::test
