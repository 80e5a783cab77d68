#include "trace/probe.h"

#include <sys/mount.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/error.h"

namespace kvio::trace {
namespace fs = std::filesystem;

static constexpr const char* kVmlinuxBtf = "/sys/kernel/btf/vmlinux";

std::string tracefs_root() {
    for (const char* p : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
        if (fs::exists(fs::path(p) / "events")) return p;
    return {};
}

void ensure_tracing_ready() {
    if (geteuid() != 0) throw Error("trace needs root (CAP_BPF, CAP_PERFMON and tracefs access): run it with sudo");
    if (!fs::exists(kVmlinuxBtf))
        throw Error(std::string("this kernel has no BTF (") + kVmlinuxBtf +
                    " is missing); kvio's CO-RE programs need a kernel built with CONFIG_DEBUG_INFO_BTF=y");
    if (!tracefs_root().empty()) return;
    if (::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0 && errno != EBUSY)
        throw Error(std::string("tracefs is not mounted and mounting it on /sys/kernel/tracing failed: ") +
                    std::strerror(errno));
    if (tracefs_root().empty())
        throw Error("tracefs has no events/ directory after mounting /sys/kernel/tracing (CONFIG_FTRACE off?)");
}

bool tracepoint_exists(const std::string& category, const std::string& name) {
    std::string root = tracefs_root();
    return !root.empty() && fs::exists(fs::path(root) / "events" / category / name);
}

namespace {
struct BtfDeleter {
    void operator()(struct btf* b) const { btf__free(b); }
};
const struct btf* vmlinux_btf() {
    static std::unique_ptr<struct btf, BtfDeleter> btf(btf__load_vmlinux_btf());
    return btf.get();
}
}  // namespace

int btf_tracepoint_args(const std::string& name) {
    const struct btf* btf = vmlinux_btf();
    if (!btf) return -1;
    int id = btf__find_by_name_kind(btf, ("btf_trace_" + name).c_str(), BTF_KIND_TYPEDEF);
    if (id <= 0) return -1;
    const struct btf_type* t = btf__type_by_id(btf, id);
    t = btf__type_by_id(btf, t->type);  // pointer
    if (!t || !btf_is_ptr(t)) return -1;
    t = btf__type_by_id(btf, t->type);  // func proto
    if (!t || !btf_is_func_proto(t)) return -1;
    return int(btf_vlen(t)) - 1;
}

bool has_btf_tracepoint(const std::string& name) { return btf_tracepoint_args(name) >= 0; }

bool task_storage_everywhere() {
    if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, nullptr) != 1) return false;
    for (auto type : {BPF_PROG_TYPE_TRACEPOINT, BPF_PROG_TYPE_RAW_TRACEPOINT})
        if (libbpf_probe_bpf_helper(type, BPF_FUNC_task_storage_get, nullptr) != 1) return false;
    return true;
}

}  // namespace kvio::trace
