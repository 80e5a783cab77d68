#include "trace/probe.h"

#include <sys/mount.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

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

namespace {
/// Whether BTF type `id` (a struct, union or enum) has a member or enumerator called `member`, also inside its
/// anonymous structs and unions (`depth` levels down).
bool btf_type_has(const struct btf* btf, int id, const std::string& member, int depth = 3) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    if (!t) return false;
    for (uint32_t i = 0; i < btf_vlen(t); ++i) {
        if (btf_is_enum(t)) {
            if (member == btf__name_by_offset(btf, btf_enum(t)[i].name_off)) return true;
            continue;
        }
        const struct btf_member& m = btf_members(t)[i];
        const char* n = btf__name_by_offset(btf, m.name_off);
        if (n && member == n) return true;
        if ((!n || !*n) && depth > 0 && btf_type_has(btf, int(btf__resolve_type(btf, m.type)), member, depth - 1))
            return true;
    }
    return false;
}

/// Whether BTF type `name` of `kind` has a member (struct) or enumerator (enum) called `member`.
bool btf_has_member(const char* name, uint32_t kind, const char* member) {
    const struct btf* btf = vmlinux_btf();
    if (!btf) return false;
    int id = btf__find_by_name_kind(btf, name, kind);
    return id > 0 && btf_type_has(btf, id, member);
}
}  // namespace

bool kernel_finished_counts() {
    const struct btf* btf = vmlinux_btf();
    return btf && btf_has_member("disk_stats", BTF_KIND_STRUCT, "ios") &&
           btf_has_member("request_queue", BTF_KIND_STRUCT, "disk") &&
           btf_has_member("gendisk", BTF_KIND_STRUCT, "part0") &&
           btf_has_member("block_device", BTF_KIND_STRUCT, "bd_stats") &&
           btf_has_member("rqf_flags", BTF_KIND_ENUM, "__RQF_IO_STAT") &&
           btf_has_member("rqf_flags", BTF_KIND_ENUM, "__RQF_FLUSH_SEQ") &&
           btf_has_member("bpf_array", BTF_KIND_STRUCT, "pptrs") &&
           libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_FUNC_map_lookup_percpu_elem, nullptr) == 1;
}

unsigned long long kernel_function_address(const std::string& name) {
    std::ifstream in("/proc/kallsyms");
    std::string line;
    while (std::getline(in, line)) {
        // "ffffffff81791150 T iomap_dio_bio_end_io" (a module's symbols add "\t[module]")
        std::istringstream ls(line);
        std::string addr, type, sym;
        if (!(ls >> addr >> type >> sym) || sym != name || (type != "t" && type != "T")) continue;
        return std::stoull(addr, nullptr, 16);
    }
    return 0;
}

bool btf_struct_has_field(const std::string& type, const std::string& field) {
    return btf_has_member(type.c_str(), BTF_KIND_STRUCT, field.c_str());
}

bool kernel_has_btf_function(const std::string& name) {
    const struct btf* btf = vmlinux_btf();
    return btf && btf__find_by_name_kind(btf, name.c_str(), BTF_KIND_FUNC) > 0;
}

bool task_storage_everywhere() {
    if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, nullptr) != 1) return false;
    for (auto type : {BPF_PROG_TYPE_TRACEPOINT, BPF_PROG_TYPE_RAW_TRACEPOINT})
        if (libbpf_probe_bpf_helper(type, BPF_FUNC_task_storage_get, nullptr) != 1) return false;
    return true;
}

}  // namespace kvio::trace
