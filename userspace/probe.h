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

}  // namespace kvio::trace
