// `kvio distill --verify` for a file-level job: a filesystem made on the target, the job run there under
// `kvio trace`, and everything made undone (unmounted, the mount point removed) even on an error or a stop signal.
// Rules: docs/distill.md, "The file level".
#pragma once
#include <string>
#include <vector>

#include "common/queue_settings.h"
#include "distiller/file_job.h"
#include "distiller/verify.h"

namespace kvio::distiller {

/// How to run a file-level replay.
struct FileVerifyOptions {
    std::string kvio_exe = "/proc/self/exe";  ///< the kvio binary that provides `trace`
    std::string target;                       ///< the block device a filesystem is made on
    std::string fs_type = "ext4";             ///< mkfs.<fs_type>: ext4 or xfs
    std::string work_dir;                     ///< existing directory for the job, iologs, replay trace and logs
    bool force = false;   ///< --force: the target's first MiB may hold data (it is overwritten by mkfs)
    FileJobOptions job;   ///< the job's name and header; its directory and iolog prefix are set here
    QueueSettings queue;  ///< the traced device's queue settings (recorded_queue_settings), copied onto the target
};

/// The replay of a file-level job and where its files are.
struct FileReplay {
    Replay replay;                      ///< the target's commands while the streams ran (the layout is not traced)
    FileJob job;                        ///< the job as run (its directory is the private mount point, gone at return)
    std::string job_path;               ///< work_dir/job.fio
    std::string events_out;             ///< work_dir/replay.jsonl (with the fio jobs' syscall records)
    std::vector<uint32_t> stream_pids;  ///< the fio process of each stream, section order (replay_stream_pids)
    /// Each traced queue setting on the target: its own value, what was applied and held through the replay (each
    /// restored at return); `error` names one not reproduced.
    std::vector<QueueSettingResult> queue;
};

/// The queue settings of device `dev` ("MAJ:MIN") that `kvio trace` recorded in the summary record (`queues`) of
/// the kvio.events/1 JSONL file `events`; empty when the file is not plain JSONL or the trace did not record them.
QueueSettings recorded_queue_settings(const std::string& events, const std::string& dev);

/// The job header's lines on the queue settings the target needs (docs/distill.md, "Queue settings the file level
/// copies"): the traced values, and what a target with other limits (max_hw_sectors_kb, max_segments, its
/// schedulers) will not reproduce and what to set; one line saying they were not recorded when `s` is empty.
std::vector<std::string> queue_settings_header(const QueueSettings& s);

/// Refuses a target that is not a block device, is the original trace's device (`orig.dev`), is mounted (always),
/// or holds data in its first MiB (unless `force`), or is smaller than the job's files need (their size + 10 % +
/// 64 MiB for the filesystem); then mkfs, mount on a private directory under work_dir, write the files the trace
/// reads (fio's `layout` section, untraced, then syncfs), run the stream sections under `kvio trace -d DISK`, unmount.
/// The target runs with `o.queue` written onto its /sys/block/DISK/queue (each as near as it takes it) from before
/// mkfs to after the unmount, and its own settings back at return, on an error or a stop signal
/// (QueueSettingsOverride); a setting it does not take is reported in FileReplay::queue, never an error.
/// Throws kvio::Error (a failed step named, with its log), Stopped on SIGINT/SIGTERM/SIGHUP (after cleaning up).
FileReplay run_file_replay(const Profile& orig, const FilePattern& p, const FileVerifyOptions& o);

}  // namespace kvio::distiller
