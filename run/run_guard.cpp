#include "run/run_guard.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "common/temp_name.h"
#include "run/loop_image.h"

namespace kvio::run {

namespace {

// One record per thing set up: a tag byte, the value, a NUL (paths hold no NUL).
constexpr char kImage = 'I', kKeptImage = 'K', kMount = 'M', kStage = 'S', kStageEnded = 'E', kRelease = 'R',
               kOutputs = 'O';

struct SetUp {
    std::vector<std::pair<std::string, bool>> images;  // path, keep
    std::vector<std::string> mounts;
    std::vector<pid_t> stages;
    std::string outputs;  // the run directory
};

/// Removes the files named NAME.tmp-PID directly in `dir` (the run's and its stages' partial outputs: every process
/// that wrote them is dead or SIGKILLed by now) and returns their names, each after a space.
std::string remove_partial_outputs(const std::string& dir) {
    namespace fs = std::filesystem;
    std::string removed;
    std::error_code ec;
    if (dir.empty()) return removed;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        if (!temporary_writer(it->path().filename().string())) continue;
        std::error_code rm;
        if (it->is_regular_file(rm) && fs::remove(it->path(), rm)) removed += " " + it->path().string();
    }
    return removed;
}

/// Undoes what the dead run set up, last first.
void clean_up(const SetUp& s) {
    for (pid_t pg : s.stages) ::kill(-pg, SIGKILL);
    for (auto it = s.mounts.rbegin(); it != s.mounts.rend(); ++it) unmount_dir(*it);
    std::string removed;
    for (auto it = s.images.rbegin(); it != s.images.rend(); ++it) {
        try {
            detach_image(it->first);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "kvio run guard: %s: %s\n", it->first.c_str(), e.what());
        }
        std::error_code ec;
        if (!it->second && std::filesystem::remove(it->first, ec)) removed += " " + it->first;
    }
    const std::string partial = remove_partial_outputs(s.outputs);
    std::fprintf(stderr,
                 "kvio run guard: the run died; %zu running stages killed, %zu mounts unmounted, %zu images "
                 "detached%s%s%s%s\n",
                 s.stages.size(), s.mounts.size(), s.images.size(),
                 removed.empty() ? "" : ", removed:", removed.c_str(),
                 partial.empty() ? "" : ", partial outputs removed:", partial.c_str());
}

[[noreturn]] void guard_main(int fd) {
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_NAME, "kvio-run-guard");
    SetUp s;
    std::string buf;
    char chunk[4096];
    while (true) {
        ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // EOF: the run is gone (a partial last record is dropped: it was never acted on)
        buf.append(chunk, size_t(n));
        size_t end;
        while ((end = buf.find('\0')) != std::string::npos) {
            const char tag = buf[0];
            const std::string value = buf.substr(1, end - 1);
            buf.erase(0, end + 1);
            if (tag == kRelease) _exit(0);
            if (tag == kImage || tag == kKeptImage)
                s.images.emplace_back(value, tag == kKeptImage);
            else if (tag == kOutputs)
                s.outputs = value;
            else if (tag == kMount)
                s.mounts.push_back(value);
            else if (tag == kStage)
                s.stages.push_back(pid_t(std::stol(value)));
            else if (tag == kStageEnded)
                std::erase(s.stages, pid_t(std::stol(value)));
        }
    }
    clean_up(s);
    _exit(0);
}

}  // namespace

RunGuard::RunGuard() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        throw Error(std::string("socketpair: ") + std::strerror(errno));
    pid_ = fork();
    if (pid_ < 0) {
        int e = errno;
        ::close(sv[0]);
        ::close(sv[1]);
        throw Error(std::string("fork: ") + std::strerror(e));
    }
    if (pid_ == 0) {
        // Only the socket stays open (on fd 3): an inherited descriptor of the run (a log, a device) must not live on.
        if (::dup2(sv[0], 3) < 0) _exit(1);
        ::close_range(4, ~0u, 0);
        guard_main(3);
    }
    ::close(sv[0]);
    fd_ = sv[1];
}

RunGuard::~RunGuard() {
    if (fd_ < 0) return;
    send(kRelease, "");
    ::close(fd_);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
}

void RunGuard::image(const std::string& path, bool keep) noexcept { send(keep ? kKeptImage : kImage, path); }
void RunGuard::mount(const std::string& dir) noexcept { send(kMount, dir); }
void RunGuard::outputs(const std::string& dir) noexcept { send(kOutputs, dir); }
void RunGuard::stage(pid_t pgid, bool running) noexcept { send(running ? kStage : kStageEnded, std::to_string(pgid)); }

void RunGuard::send(char tag, const std::string& value) noexcept {
    std::string rec = tag + value;
    rec.push_back('\0');
    for (size_t off = 0; off < rec.size();) {
        ssize_t n = ::send(fd_, rec.data() + off, rec.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the guard is gone: the run's own cleanup still runs
        off += size_t(n);
    }
}

}  // namespace kvio::run
