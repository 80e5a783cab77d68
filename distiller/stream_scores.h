// Per-stream scores of a file-level replay: each traced thread's device commands against those of the fio section
// that replayed it (docs/distill.md, "Per-stream scores").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_trace.h"
#include "common/syscall_trace.h"
#include "distiller/file_job.h"

namespace kvio::distiller {

/// One stream's commands in the trace and in the replay. The last row of score_streams() is the commands no stream
/// submitted (writeback flushers, the journal): `tid` 0, `comm` "(others)".
struct StreamScore {
    uint32_t pid = 0, tid = 0;  ///< the traced thread (0 for the others row)
    std::string comm;           ///< its name in the syscall records
    uint32_t replay_pid = 0;    ///< the fio process that replayed it; 0 when not matched
    uint64_t orig_reads = 0, orig_writes = 0, replay_reads = 0, replay_writes = 0;  ///< device commands
    double size_tv_read = 0, size_tv_write = 0;         ///< TV of exact command sizes per direction, [0,1]
    double read_share_orig = 0, read_share_replay = 0;  ///< reads / (reads + writes), percent of commands
    double read_share_err() const {
        return read_share_replay > read_share_orig ? read_share_replay - read_share_orig
                                                   : read_share_orig - read_share_replay;
    }
};

/// The fio processes that replayed the streams, one per stream in section order, from the replay trace's syscall
/// records (`replay_calls`, those on the target's filesystem `fs_dev`): fio forks its jobs in section order, so the
/// k-th smallest pid that made a read or write there is the k-th section. Empty when the number of such pids is not
/// the number of streams (the per-stream rows then carry only the trace's side).
std::vector<uint32_t> replay_stream_pids(const std::vector<SyscallRec>& replay_calls, uint32_t fs_dev, size_t streams);

/// Scores each stream of `p` (its commands: those of `orig` with its tid) against the replay's commands of the pid
/// `pids[k]` (`pids` empty: no replay side), then the others row. Data commands only (reads and writes).
std::vector<StreamScore> score_streams(const EventTrace& orig, const FilePattern& p, const EventTrace& replay,
                                       const std::vector<uint32_t>& pids);

/// [{"pid","tid","comm","replay_pid","cmds":{"orig":{"read","write"},"replay":{...}},"size_tv":{"read","write"},
///   "read_share":{"orig","replay","err_points"}}, ...]
nlohmann::json streams_json(const std::vector<StreamScore>& s);
/// One line per stream for the console: "stream 1234/1240 kvio: cmds r/w 10/20 -> 11/19, size TV r 0.010 w 0.100,
/// read share 33.3 -> 36.7 % (3.4 points)".
std::string streams_text(const std::vector<StreamScore>& s);

}  // namespace kvio::distiller
