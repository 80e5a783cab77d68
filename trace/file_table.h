// `kvio trace --files`: per-file device and application bytes (map file_stats of bpf/file_attr.bpf.h), the paths of
// the files' inodes, and the table and JSON built from them (docs/trace.md "Per-file attribution").
#pragma once
#include <sys/types.h>

#include <csignal>

#include <cstdint>
#include <map>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bpf/file_attr.h"

namespace kvio::trace {

/// Orders file keys (inode number, filesystem dev_t, generation) for maps.
struct FileKeyLess {
    bool operator()(const kvio_file_key& a, const kvio_file_key& b) const {
        if (a.fs_dev != b.fs_dev) return a.fs_dev < b.fs_dev;
        if (a.ino != b.ino) return a.ino < b.ino;
        return a.gen < b.gen;
    }
};

/// Paths of inodes. resolve() opens the inode by its file handle (open_by_handle_at on its filesystem's mount, the
/// handle type FILEID_INO32_GEN: 32-bit inode number and generation, as ext4 and XFS encode theirs) and reads the
/// link /proc/self/fd gives; a file it cannot open (another handle type, unlinked) is looked for by inode number
/// under the mount (or `under`, when on that filesystem) at finish(). finish() resolves every surviving inode again,
/// so a file renamed during the trace has its path at the end; a file deleted after its first sight keeps the path
/// seen then.
class FilePaths {
public:
    explicit FilePaths(std::string under = "") : under_(std::move(under)) {}
    ~FilePaths();
    FilePaths(const FilePaths&) = delete;
    FilePaths& operator=(const FilePaths&) = delete;
    /// First sight of a file during the trace: its path now, if it can be had.
    void seen(const kvio_file_key& k);
    /// The path of `k`: the one kept, else resolved now, else found by a walk (finish), else "".
    std::string path(const kvio_file_key& k);
    /// At the end of the trace: the path of each of `keys` becomes its path now (by handle, else by a walk of the
    /// mounts, once, matching inode numbers); a file found neither way (deleted) keeps the path seen before.
    void finish(const std::vector<kvio_file_key>& keys);

private:
    /// Does path `p` still name the inode of `k`?
    static bool still_names(const kvio_file_key& k, const std::string& p);
    std::string resolve(const kvio_file_key& k);
    int mount_fd(uint32_t fs_dev, std::string* mount_point);
    std::string under_;
    std::map<kvio_file_key, std::string, FileKeyLess> paths_;
    std::map<uint32_t, int> mount_fds_;  ///< fs dev_t -> an O_DIRECTORY fd of its mount point, -1: none
    std::map<uint32_t, std::string> mount_points_;
};

/// One file's counters with its path ("" unknown).
struct FileEntry {
    kvio_file_key key{};
    std::string path;
    kvio_file_stats stats{};
};

/// How rows are formed: `under` keeps files whose path is below it (a directory, compared by path component);
/// `group_by` (ECMAScript regex) makes a row of each distinct match over the path (its first capture group when it
/// has one); files it does not match, or matches with an empty text, stay rows of their own.
struct FileTableOptions {
    std::string under;
    std::string group_by;
    /// Polled while --group-by matches (a StopSignal's flag()): non-zero stops the grouping, the table is per file.
    const volatile sig_atomic_t* stop = nullptr;
};

/// The longest --group-by pattern accepted, in characters: std::regex compiles a pattern by recursion, and a pattern
/// of 30000 nested groups overflowed the stack (a path regex needs a few dozen).
constexpr size_t kMaxGroupByChars = 1024;

/// The --group-by pattern compiled as an ECMAScript regex; throws kvio::Error (naming the pattern, not the flag) for
/// a pattern that is empty, longer than kMaxGroupByChars or not a regular expression. Checked when the command line is
/// read, so a bad pattern is refused before anything is traced.
std::regex group_by_regex(const std::string& pattern);

/// The "files" array of kvio.trace/1: per row path (or group), files, and per direction ("read", "write") cmds,
/// bytes, app_calls, app_bytes, page_cache_share (1 - bytes / app_bytes; null without app bytes), the size and D2C
/// histograms (kvio.trace/1 histogram objects) and D2C percentiles; single-file rows also ino, fs_dev, gen. Rows
/// by device bytes, largest first. Throws kvio::Error for a bad regex. The regex runs in a child process (std::regex
/// has no step limit; a catastrophic pattern can backtrack for hours or overflow its stack): when opts.stop becomes
/// non-zero first (the child is killed) or the child dies, the rows are the files ungrouped and *grouping_stopped
/// (when given) is set true.
nlohmann::json file_table_json(const std::vector<FileEntry>& files, const FileTableOptions& opts,
                               bool* grouping_stopped = nullptr);

/// The MEANSZ column: `bytes` / `cmds` as whole bytes below 1 KiB, else with one decimal in k, m, g or t (1024-based):
/// "512", "5.9k", "1.0m"; "-" for no command.
std::string mean_size(uint64_t bytes, uint64_t cmds);

/// The table on stdout: a line per row and direction with traffic (PATH OP CMDS BYTES MEAN_SIZE APP_BYTES CACHE
/// D2C_p50 D2C_p99), at most `max_rows` rows.
void print_file_table(std::ostream& os, const nlohmann::json& files, const nlohmann::json& counts,
                      size_t max_rows = 50);

}  // namespace kvio::trace
