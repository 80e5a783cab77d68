// `kvio audit`: run a storage benchmark under the tracer and check that its cache I/O really reached the device.
#include <iostream>
#include <memory>

#include "audit/audit.h"
#include "cli/commands.h"

namespace kvio::cli {

void add_audit_command(CLI::App& app) {
    auto o = std::make_shared<audit::AuditOptions>();
    auto* sub = app.add_subcommand(
        "audit",
        "Run COMMAND under `kvio trace --syscalls` and check, per cache directory, that its I/O really reached\n"
        "the storage device: bytes the application read vs bytes the device read (the share served by the page\n"
        "cache), bytes written vs bytes reaching the device, fsync/fdatasync calls vs device flushes, fadvise calls\n"
        "and whether the reads after them reached the device, and every library preloaded into the traced\n"
        "processes that defines an I/O function (LD_PRELOAD: libeatmydata, a no-op posix_fadvise shim). One verdict\n"
        "line per check; exit status 0 when every check passes and the command exited 0, 1 otherwise.\n"
        "Needs root (BPF). docs/audit.md says what each check counts.\n"
        "Example: kvio audit --cache-dir /mnt/nvme/kv -- python3 kv-cache.py --cache-dir /mnt/nvme/kv ...");
    sub->add_option("--cache-dir", o->cache_dirs,
                    "A directory whose filesystem's I/O is audited (repeat for several; on a block device)")
        ->required()
        ->allow_extra_args(false);  // one directory per --cache-dir: the words after it are the command
    sub->add_option("--trace-dir", o->trace_dir, "Keep the trace (events.jsonl) in this directory");
    sub->add_option("--json", o->json_out, "Write the kvio.audit/1 document here");
    sub->add_option("--min-read-share", o->min_read_share,
                    "Device read bytes / application read bytes needed to pass the reads check")
        ->default_val(0.9)
        ->check(CLI::Number & CLI::Range(0.0, 10.0));
    sub->add_option("command", o->command, "The command to run (after --)")->required();
    sub->positionals_at_end();
    sub->callback([o] {
        const audit::AuditResult r = audit::run_audit(*o);
        std::cout << audit::format_result(r) << std::flush;
        if (!o->json_out.empty()) std::cerr << "kvio audit: wrote " << o->json_out << "\n";
        if (!r.passed) throw CLI::RuntimeError(1);
    });
}

}  // namespace kvio::cli
