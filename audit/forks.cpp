// The proc connector's fork events (linux/cn_proc.h): docs/audit.md, "How it measures".
#include "audit/forks.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "common/error.h"

namespace kvio::audit {

ForkLog::ForkLog() {
    fd_ = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
    if (fd_ < 0) throw Error(std::string("audit: the process events connector: socket: ") + std::strerror(errno));
    int size = 8 << 20;  // room for bursts of forks (a build, a shell loop) while the thread is descheduled
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    sockaddr_nl addr{};
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = CN_IDX_PROC;
    addr.nl_pid = 0;
    alignas(nlmsghdr) char msg[NLMSG_SPACE(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))] = {};
    auto* nl = reinterpret_cast<nlmsghdr*>(msg);
    auto* cn = static_cast<cn_msg*>(NLMSG_DATA(nl));
    nl->nlmsg_len = NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op));
    nl->nlmsg_type = NLMSG_DONE;
    cn->id = {CN_IDX_PROC, CN_VAL_PROC};
    cn->len = sizeof(proc_cn_mcast_op);
    const proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
    std::memcpy(cn->data, &op, sizeof op);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || ::send(fd_, msg, nl->nlmsg_len, 0) < 0) {
        const std::string why = std::strerror(errno);
        ::close(fd_);
        throw Error("audit: the process events connector: " + why + " (needs root and CONFIG_PROC_EVENTS)");
    }
    thread_ = std::thread([this] { loop(); });
}

ForkLog::~ForkLog() {
    stop();
    if (fd_ >= 0) ::close(fd_);
}

void ForkLog::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

void ForkLog::loop() {
    alignas(nlmsghdr) char buf[1 << 16];
    // After stop(): drain what is queued (the command's last forks), then end.
    for (;;) {
        pollfd p{fd_, POLLIN, 0};
        const int r = ::poll(&p, 1, stop_ ? 0 : 50);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (stop_) return;
            continue;
        }
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == ENOBUFS) ++lost_;
            continue;
        }
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, size_t(n)); h = NLMSG_NEXT(h, n)) {
            const auto* cn = static_cast<const cn_msg*>(NLMSG_DATA(h));
            const auto* ev = reinterpret_cast<const proc_event*>(cn->data);
            std::lock_guard<std::mutex> l(mu_);
            if (ev->what == proc_event::PROC_EVENT_FORK) {
                const pid_t parent = ev->event_data.fork.parent_tgid, child = ev->event_data.fork.child_tgid;
                if (parent != child) forks_.emplace_back(parent, child);  // else a thread
            } else if (ev->what == proc_event::PROC_EVENT_EXEC) {
                // The connector's exec event carries no name (a comm event only comes from prctl or a write to
                // /proc/PID/comm): read it now, while a short-lived program most likely still runs.
                const pid_t pid = ev->event_data.exec.process_tgid;
                std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
                std::string comm;
                std::getline(f, comm);
                execs_.push_back({pid, ev->timestamp_ns, comm});
            }
        }
    }
}

std::set<pid_t> ForkLog::tree(pid_t root) const {
    std::set<pid_t> out = {root};
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [parent, child] : forks_)
        if (out.count(parent)) out.insert(child);
    return out;
}

std::vector<ExecImage> ForkLog::execs(const std::set<pid_t>& tree) const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<ExecImage> out;
    for (const auto& e : execs_)
        if (tree.count(e.pid)) out.push_back(e);
    return out;
}

}  // namespace kvio::audit
