// The fio job `kvio drives` runs, rewritten per target and load mode, and the targets as the command line names them.
#pragma once
#include <cstdint>
#include <string>

namespace kvio::drives {

/// One `--drive NAME=PATH` (this host) or `--drive NAME=HOST[:PORT]:PATH` (a host running `fio --server`).
struct DriveSpec {
    std::string name;          ///< the column label: letters, digits, '-', '_', '.'
    std::string host;          ///< empty for a local target
    int port = 8765;           ///< fio's server port (fio's default, docs/drives.md "A lab of hosts")
    std::string path;          ///< block device, file or directory (on `host` when remote)
    std::string metrics_host;  ///< a remote target's `kvio trace --listen` exporter (`--metrics NAME=HOST:PORT`)
    int metrics_port = 0;      ///< 0: none (no device-side figures for this remote target)
    bool remote() const { return !host.empty(); }
    /// "HOST:PORT", an IPv6 address in brackets ("[::1]:8765"), for messages.
    std::string address() const;
    /// fio's `--client` value: "HOST,PORT", "ip6:ADDR,PORT" for an IPv6 address (fio's client syntax).
    std::string fio_client() const;
};

/// Parses "NAME=PATH" or "NAME=HOST[:PORT]:PATH" (PATH begins with '/' and a remote one follows the first ':' that is
/// not part of a port); an IPv6 HOST is written in brackets, "NAME=[::1]:8765:/dev/nvme0n1". Throws
/// kvio::UsageError naming the value when malformed.
DriveSpec parse_drive_spec(const std::string& text);

/// Parses `--metrics NAME=HOST:PORT` into {NAME, HOST, PORT}. Throws kvio::UsageError when malformed.
struct MetricsSpec {
    std::string name, host;
    int port = 0;
};
MetricsSpec parse_metrics_spec(const std::string& text);

/// Where a target's data goes in the job: a file or device is fio's `filename=`, a directory `directory=`.
enum class TargetField { Filename, Directory };

/// True when the job text paces itself: a `rate=`, `rate_iops=` or `rate_min`/`rate_iops_min` line, or a
/// `thinktime=` other than 0 (what an open-loop run at the job's own pace needs; the distiller writes `rate_iops` per
/// phase, or `thinktime` for regular bursts, docs/distill.md).
bool job_is_paced(const std::string& job);

/// The averaging window of the bandwidth log kvio drives asks fio for (`log_avg_msec`), ms.
inline constexpr int kBwLogMs = 100;

/// How a run paces the job (docs/drives.md, "Load modes"): Open keeps every line (the job's own rates and
/// thinktime); Closed drops the `rate*` and `thinktime*` lines (as fast as the job's depth allows: capacity);
/// ClosedKeepThinktime drops the rates only (`--keep-thinktime`: the job at its own pace between bursts).
enum class Pacing { Open, Closed, ClosedKeepThinktime };

/// The job text for one run: every `filename=`, `directory=` and `filename_format=` line dropped and one leading
/// `[global]` section naming the target; the pacing lines `pacing` drops (Pacing). With `bw_log` non-empty the leading
/// section also asks fio for a bandwidth log per job, `write_bw_log=BW_LOG` averaged over kBwLogMs with times since the
/// epoch (`log_unix_epoch=1`; fio writes BW_LOG_bw.N.log), and the job's own `write_bw_log`, `log_avg_msec`,
/// `log_unix_epoch` and `per_job_logs` lines are dropped. With `refuse_create` the leading section also says
/// `allow_file_create=0` (fio then fails instead of creating a missing `target`: a remote path under /dev that names no
/// device must not become a file in that host's devtmpfs) and the job's own `allow_file_create` lines are dropped.
/// Lines, sections and comments otherwise unchanged.
std::string job_for_target(const std::string& job, const std::string& target, TargetField field, Pacing pacing,
                           const std::string& bw_log = "", bool refuse_create = false);

/// What a job says it moves, read + write, counted as fio counts `io_bytes` and `total_ios`; 0 where the text does
/// not say. Per section: passes = `loops` × `numjobs` (fio restarts `number_ios` and `io_size` with every loop,
/// docs/distill.md "Phases"); a pass ends at `number_ios` commands or at `io_size` (else `size`) bytes, whichever
/// comes first. The commands' size is known when `bs` (or the direction's `bssplit`) names one size, fio's default
/// 4 KiB when neither is given. So a distilled job (`number_ios=N` under an `io_size` cap, `bssplit=64k/100`)
/// declares N × 64 KiB, not its cap; one with a real `bssplit` mix declares its commands only. Unknowable: a
/// `time_based`/`runtime` job, a size in %, `nrfiles` above 1, `bsrange`, a mixed `rw` with two block sizes.
struct JobDeclared {
    uint64_t bytes = 0;  ///< bytes over every section; 0: the job does not say
    uint64_t ios = 0;    ///< commands over every section; 0: the job does not say
};
JobDeclared job_declared(const std::string& job);

}  // namespace kvio::drives
