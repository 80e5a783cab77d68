// The figures of every target over its rounds: drives.json (kvio.drives/1), the console table and the verdicts.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drives/kv_line.h"
#include "drives/target_run.h"

namespace kvio::drives {

/// Versions and options written beside the results.
struct RunContext {
    std::string job_path, kvio_version, fio_version, kernel, started;
    int rounds = 0;
    bool keep_thinktime = false;  ///< the closed loop kept the job's thinktime (--keep-thinktime)
    std::string trace_duty;       ///< the tracer's --duty ON/PERIOD; "": every command traced
    uint64_t job_bytes = 0;       ///< job_declared(job).bytes (0: the job does not say)
    uint64_t job_ios = 0;         ///< job_declared(job).ios (0: the job does not say)
    int stopped_by_signal = 0;    ///< the SIGINT/SIGTERM/SIGHUP that ended the run early; 0: it ran to its end
    std::vector<std::string> modes;
    KvObject kv;  ///< the KV line's object (kv_line.h); bytes 0: no KV line
};

/// The verdict figure of a mode: closed loop: the run's total MB/s (higher is better); open loop at the job's
/// rates: the worse of the read and write completion p99 (ns, lower is better).
double verdict_figure(const RunResult& r);
bool verdict_higher_is_better(const std::string& mode);

/// kvio.drives/1: {"schema", "kvio_version", "fio_version", "kernel", "job", "rounds", "modes", "keep_thinktime",
/// "stopped_by_signal" (signal number, null when the run ended by itself), "job_declared_bytes", "job_declared_ios"
/// (job_text.h job_declared; null: the job does not say),
/// "targets": [{"name", "path", "host", "info", "ceiling" (null: probe skipped), "status" ("ok" | "failed" |
/// "interrupted"), "error", "interrupted" (the reason), "modes": {MODE: {"phases": [{"name",
/// "read"/"write": {"iops", "mb_s", "io_bytes", "clat_p50_ns", "clat_p90_ns", "clat_p99_ns", "clat_p999_ns"} as
/// spreads}], "device": {...spreads} | null, "device_missing", "share_of_ceiling", "io_bytes_equal_job",
/// "ios_equal_job", "diagnosis" (drive_findings of the median traced round, as kvio.diagnosis/1's findings),
/// "diagnosis_round" (that round; null: none traced), "kv" (closed loop with a KV object: kv_line_json + "text"; per
/// direction the median over rounds of its bytes over the runtimes of the phases that moved it), "rounds": [...]}}}],
/// "kv"
/// ({"label", "object_bytes", "user_objects_per_s"} | null), "verdicts": {MODE: [{"a", "b", "pct", "separated",
/// "text"}]}}. Spreads:
/// {"min","median","max","n"}.
nlohmann::json drives_json(const std::vector<Target>& targets, const RunContext& ctx);

/// The console table per mode (median [min–max] over rounds) and the verdict lines.
void print_table(std::ostream& out, const std::vector<Target>& targets, const RunContext& ctx);

/// The console's line for a target's ceiling probe (probe_ceiling): "probe NAME: sequential read 1234.5 MB/s, write
/// 987.6 MB/s; 4 KiB random read 123456 IOPS (3 x 1 s over 64 MiB)" (MB/s = 10^6 B/s, fio's own figures), or "probe
/// NAME failed: ..." with the probe's error. No newline.
std::string ceiling_line(const Target& t);

/// The verdicts of one mode over the targets that measured every round.
std::vector<Verdict> verdicts_for(const std::vector<Target>& targets, const std::string& mode);

/// The targets of a mode that no verdict compares, each with why, as printed after the verdicts:
/// {"h3", "h3 left out of the ranking: failed with 1 of 3 rounds measured (round 2 closed ...)"}, or "... 0 of 3
/// rounds measured" for one that measured none (interrupted). A failed target is left out whatever it measured.
std::vector<std::pair<std::string, std::string>> left_out_of_verdicts(const std::vector<Target>& targets,
                                                                      const std::string& mode, int rounds);

}  // namespace kvio::drives
