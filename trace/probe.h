// What the running kernel offers, probed from BTF and tracefs (never from its version number).
#pragma once
#include <string>

namespace kvio::trace {

/// Checks the privileges and kernel features `kvio trace` needs and mounts tracefs at
/// /sys/kernel/tracing when it is missing and we are root. Throws kvio::Error with one sentence
/// naming what is missing (root, BTF, tracefs).
void ensure_tracing_ready();

/// The tracefs root in use ("/sys/kernel/tracing" or "/sys/kernel/debug/tracing"); empty if none.
std::string tracefs_root();

/// True when tracefs lists the tracepoint `category:name` (events/CATEGORY/NAME exists).
bool tracepoint_exists(const std::string& category, const std::string& name);

/// True when vmlinux BTF has `btf_trace_<name>`, i.e. a tp_btf program can attach to it.
bool has_btf_tracepoint(const std::string& name);

/// Number of arguments of tracepoint `name` per vmlinux BTF (btf_trace_<name> prototype
/// minus its leading `void *`); -1 when BTF does not describe it.
int btf_tracepoint_args(const std::string& name);

/// True when tracepoint and raw tracepoint programs may call bpf_task_storage_get (task local storage for
/// every program type; 6.1 offers it to tp_btf programs only), probed by loading a two-instruction program
/// of each type. tp_btf programs got the helper before either, so they have it too.
bool task_storage_everywhere();

/// True when vmlinux BTF shows the kernel's own per-disk count of finished requests that the in-flight count of
/// --d2c-sample reads (bpf/rq_state.bpf.h, kernel_done): per-CPU `disk_stats.ios` behind `block_device.bd_stats`
/// of the request's disk (`request_queue.disk`, `gendisk.part0`: the whole disk, which counts its partitions' too),
/// the request flags `__RQF_IO_STAT` and `__RQF_FLUSH_SEQ` that say which requests it counts, and what gives each
/// CPU's per-CPU offset (a per-CPU array's `pptrs`, the helper bpf_map_lookup_percpu_elem).
bool kernel_finished_counts();

/// The address of kernel function `name` in /proc/kallsyms (text symbols only: type t or T); 0 when absent or
/// hidden (kallsyms shows 0 to readers without CAP_SYSLOG).
unsigned long long kernel_function_address(const std::string& name);

/// True when vmlinux BTF has struct `type` with a member `field` (also inside its anonymous structs and unions).
bool btf_struct_has_field(const std::string& type, const std::string& field);

/// Whether the running kernel's BTF has function `name` of BPF's own (a kfunc such as bpf_rdonly_cast, 6.2+): what
/// decides which of two programs to load, not the version number.
bool kernel_has_btf_function(const std::string& name);

}  // namespace kvio::trace
