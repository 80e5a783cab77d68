#include "trace/file_table.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <optional>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <regex>
#include <set>
#include <sstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/histogram.h"
#include "trace/trace_report.h"

namespace kvio::trace {

namespace {

/// A mountinfo field with its octal escapes (\040 for a space) undone.
std::string unescape_mount(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            out += char(std::stoi(s.substr(i + 1, 3), nullptr, 8));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

/// The mount point of the filesystem of kernel dev_t `fs_dev` whose root is the filesystem's root, "" if none
/// (/proc/self/mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT ...).
std::string mount_point_of(uint32_t fs_dev) {
    const DevId d = decode_kernel_dev(fs_dev);
    const std::string want = std::to_string(d.major) + ":" + std::to_string(d.minor);
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string id, parent, majmin, root, mnt;
        if (!(ls >> id >> parent >> majmin >> root >> mnt)) continue;
        if (majmin == want && root == "/") return unescape_mount(mnt);
    }
    return "";
}

/// The inode generation of regular file `path` (FS_IOC_GETVERSION: ext4, XFS and btrfs give i_generation, the `gen`
/// of a file key); nullopt where it cannot be read (another kind of file, a filesystem without the ioctl).
std::optional<uint32_t> file_generation(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    int gen = 0;
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::ioctl(fd, FS_IOC_GETVERSION, &gen) == 0;
    ::close(fd);
    return ok ? std::optional<uint32_t>(uint32_t(gen)) : std::nullopt;
}

/// Is the regular file at `path` (inode `st`) the file of key `k`: same filesystem, inode number and, where the
/// filesystem tells it, generation? ext4 gives a deleted file's inode number to the next file created at once: only
/// the generation tells the two apart.
bool is_file_of(const kvio_file_key& k, const std::string& path, const struct stat& st) {
    if (st.st_ino != k.ino || kernel_dev(DevId{major(st.st_dev), minor(st.st_dev)}) != k.fs_dev) return false;
    auto gen = file_generation(path);
    return !gen || *gen == k.gen;
}

/// Is `path` `dir` or below it (by whole components)?
bool path_under(const std::string& path, const std::string& dir) {
    if (dir.empty()) return true;
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (path.compare(0, d.size(), d) != 0) return false;
    return path.size() == d.size() || d == "/" || path[d.size()] == '/';
}

}  // namespace

FilePaths::~FilePaths() {
    for (auto& [dev, fd] : mount_fds_)
        if (fd >= 0) ::close(fd);
}

int FilePaths::mount_fd(uint32_t fs_dev, std::string* mount_point) {
    auto it = mount_fds_.find(fs_dev);
    if (it == mount_fds_.end()) {
        std::string mp = mount_point_of(fs_dev);
        int fd = mp.empty() ? -1 : ::open(mp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        mount_points_[fs_dev] = mp;
        it = mount_fds_.emplace(fs_dev, fd).first;
    }
    if (mount_point) *mount_point = mount_points_[fs_dev];
    return it->second;
}

std::string FilePaths::resolve(const kvio_file_key& k) {
    int mfd = mount_fd(k.fs_dev, nullptr);
    if (mfd < 0 || k.ino > UINT32_MAX) return "";
    // struct file_handle with an 8-byte FILEID_INO32_GEN body (include/linux/exportfs.h: type 1, {ino, gen})
    alignas(file_handle) unsigned char buf[sizeof(file_handle) + 8];
    auto* fh = reinterpret_cast<file_handle*>(buf);
    fh->handle_bytes = 8;
    fh->handle_type = 1;
    const uint32_t body[2] = {uint32_t(k.ino), k.gen};
    std::memcpy(fh->f_handle, body, sizeof body);
    int fd = open_by_handle_at(mfd, fh, O_PATH | O_CLOEXEC);
    if (fd < 0) return "";
    char link[64], target[4096];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = ::readlink(link, target, sizeof target - 1);
    struct stat st {};
    bool same = ::fstat(fd, &st) == 0 && st.st_ino == k.ino;
    ::close(fd);
    if (n <= 0 || !same) return "";
    std::string p(target, size_t(n));
    if (p.size() > 10 && p.compare(p.size() - 10, 10, " (deleted)") == 0) return "";
    // A file whose dentry the kernel dropped opens by handle as a disconnected dentry: its link reads "/" (the
    // filesystem's root), which names another inode. Only a path that names this inode is its path.
    if (!still_names(k, p)) return "";
    return p;
}

void FilePaths::seen(const kvio_file_key& k) {
    if (paths_.count(k)) return;
    std::string p = resolve(k);
    if (!p.empty()) paths_[k] = p;
}

std::string FilePaths::path(const kvio_file_key& k) {
    if (auto it = paths_.find(k); it != paths_.end()) return it->second;
    std::string p = resolve(k);
    if (!p.empty()) paths_[k] = p;
    return p;
}

bool FilePaths::still_names(const kvio_file_key& k, const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && is_file_of(k, p, st);
}

void FilePaths::finish(const std::vector<kvio_file_key>& keys) {
    std::map<uint32_t, std::set<uint64_t>> wanted;  // fs dev_t -> inode numbers whose path is wanted by a walk
    std::map<kvio_file_key, std::string, FileKeyLess> seen_paths;  // the path of first sight of those, if any
    for (const auto& k : keys) {
        // the path now, where the inode can be opened: a file renamed during the trace (x.tmp -> x) is shown by its
        // name at the end
        std::string now = resolve(k);
        if (!now.empty()) {
            paths_[k] = now;
            continue;
        }
        auto it = paths_.find(k);
        if (it != paths_.end() && still_names(k, it->second)) continue;
        if (it != paths_.end()) {  // moved or deleted: a walk finds it if it survives, else it keeps what was seen
            seen_paths[k] = it->second;
            paths_.erase(it);
        }
        wanted[k.fs_dev].insert(k.ino);
    }
    namespace fs = std::filesystem;
    for (auto& [dev, inos] : wanted) {
        std::string mp;
        mount_fd(dev, &mp);
        if (mp.empty()) continue;
        struct stat ust {};
        const std::string start = !under_.empty() && ::stat(under_.c_str(), &ust) == 0 &&
                                          kernel_dev(DevId{major(ust.st_dev), minor(ust.st_dev)}) == dev
                                      ? under_
                                      : mp;
        std::error_code ec;
        for (fs::recursive_directory_iterator it(start, fs::directory_options::skip_permission_denied, ec), end;
             !ec && it != end && !inos.empty(); it.increment(ec)) {
            struct stat st {};
            if (::lstat(it->path().c_str(), &st) != 0) continue;
            if (kernel_dev(DevId{major(st.st_dev), minor(st.st_dev)}) != dev) {
                if (S_ISDIR(st.st_mode)) it.disable_recursion_pending();  // another filesystem mounted here
                continue;
            }
            if (!inos.count(st.st_ino)) continue;
            bool found = false;  // a file of this number but another generation is not the one looked for
            for (const auto& k : keys)
                if (k.fs_dev == dev && k.ino == st.st_ino && !paths_.count(k) && is_file_of(k, it->path(), st)) {
                    paths_[k] = it->path().string();
                    found = true;
                }
            if (found) inos.erase(st.st_ino);
        }
    }
    for (auto& [k, p] : seen_paths) paths_.emplace(k, p);  // not found: deleted, it keeps the path seen
}

namespace {

/// One row of the table being summed: its files and per-direction counters and histograms.
struct Row {
    std::string name;
    std::vector<kvio_file_key> keys;
    struct Dir {
        uint64_t cmds = 0, bytes = 0, app_calls = 0, app_bytes = 0;
        Histogram d2c{HistKind::Log2, "ns", KVIO_FILE_HIST_SLOTS};
        Histogram size{HistKind::Log2, "bytes", KVIO_FILE_HIST_SLOTS};
    } dir[2];
};

void add_file(Row& r, const FileEntry& f) {
    r.keys.push_back(f.key);
    for (int i = 0; i < 2; ++i) {
        const auto& s = f.stats.dir[i];
        auto& d = r.dir[i];
        // the kernel keeps no command count or size sum apart (bpf/file_attr.h): the size histogram's total, bytes
        for (uint64_t n : s.size) d.cmds += n;
        d.bytes += s.bytes;
        d.app_calls += s.app_calls;
        d.app_bytes += s.app_bytes;
        d.d2c.add_slots(reinterpret_cast<const uint64_t*>(s.d2c), KVIO_FILE_HIST_SLOTS, s.d2c_sum);
        d.size.add_slots(reinterpret_cast<const uint64_t*>(s.size), KVIO_FILE_HIST_SLOTS, s.bytes);
    }
}

nlohmann::json dir_json(const Row::Dir& d) {
    nlohmann::json j = {{"cmds", d.cmds},
                        {"bytes", d.bytes},
                        {"app_calls", d.app_calls},
                        {"app_bytes", d.app_bytes},
                        {"page_cache_share", nullptr},
                        {"size", d.size.to_json()},
                        {"d2c", d.d2c.to_json()},
                        {"d2c_percentiles", d.d2c.percentiles_json()}};
    if (d.app_bytes) j["page_cache_share"] = 1.0 - double(d.bytes) / double(d.app_bytes);
    return j;
}

/// The row name of a file: its path, or the regex's match (first group if any) when `re` matches it with a
/// non-empty text; a file whose match is empty (`x*`, an optional group that took nothing) keeps its own row, as a
/// file the regex does not match does, rather than all such files sharing a row with an empty name.
std::string row_name(const FileEntry& f, const std::regex* re) {
    std::string p = f.path.empty() ? "<ino " + std::to_string(f.key.ino) + " on " +
                                         dev_string(decode_kernel_dev(f.key.fs_dev)) + ">"
                                   : f.path;
    std::smatch m;
    if (!re || f.path.empty() || !std::regex_search(p, m, *re)) return p;
    std::string group = m.size() > 1 ? m[1].str() : m[0].str();
    return group.empty() ? p : group;
}

/// --group-by's work in a child process: std::regex has no step limit, and a catastrophic pattern ('(.*)*#' over a
/// path without '#') backtracks for longer than anyone waits, or overflows its stack. The child writes each file's
/// row name, NUL-terminated, to a pipe; this process polls `stop` every 10 ms meanwhile. nullopt: a stop came first
/// (the child is killed) or the child did not finish its names (it died: the table is per file then too).
std::optional<std::vector<std::string>> group_names(const std::vector<FileEntry>& files, const std::regex& re,
                                                    const volatile sig_atomic_t* stop) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw Error(std::string("--group-by: pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(p[0]);
        ::close(p[1]);
        throw Error(std::string("--group-by: fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        ::close(p[0]);
        std::string out;
        for (const auto& f : files) out += row_name(f, &re) + '\0';
        for (size_t done = 0; done < out.size();) {
            const ssize_t n = ::write(p[1], out.data() + done, out.size() - done);
            if (n <= 0) ::_exit(1);
            done += size_t(n);
        }
        ::_exit(0);
    }
    ::close(p[1]);
    std::string buf;
    char chunk[4096];
    bool stopped = false;
    for (;;) {
        if (stop && *stop) {
            stopped = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd pfd{p[0], POLLIN, 0};
        if (::poll(&pfd, 1, 10) <= 0) continue;
        const ssize_t n = ::read(p[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf.append(chunk, size_t(n));
    }
    ::close(p[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (stopped || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    std::vector<std::string> names;
    for (size_t at = 0, nul; (nul = buf.find('\0', at)) != std::string::npos; at = nul + 1)
        names.push_back(buf.substr(at, nul - at));
    if (names.size() != files.size()) return std::nullopt;
    return names;
}

}  // namespace

std::regex group_by_regex(const std::string& pattern) {
    if (pattern.empty()) throw Error("an empty pattern (give a regex, e.g. '^(.*)/' per directory)");
    if (pattern.size() > kMaxGroupByChars)
        throw Error("a pattern of " + std::to_string(pattern.size()) + " characters (at most " +
                    std::to_string(kMaxGroupByChars) + ")");
    try {
        return std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        throw Error("'" + pattern + "': not a regular expression (" + e.what() + ")");
    }
}

nlohmann::json file_table_json(const std::vector<FileEntry>& files, const FileTableOptions& opts,
                               bool* grouping_stopped) {
    std::optional<std::regex> re;
    if (!opts.group_by.empty()) {
        try {
            re.emplace(group_by_regex(opts.group_by));
        } catch (const Error& e) {
            throw Error(std::string("--group-by: ") + e.what());
        }
    }
    std::vector<FileEntry> kept;
    for (const auto& f : files)
        if (opts.under.empty() || (!f.path.empty() && path_under(f.path, opts.under))) kept.push_back(f);
    std::optional<std::vector<std::string>> names;
    if (re) names = group_names(kept, *re, opts.stop);
    if (grouping_stopped) *grouping_stopped = re && !names;
    std::map<std::string, Row> rows;
    for (size_t i = 0; i < kept.size(); ++i) {
        const FileEntry& f = kept[i];
        std::string name = names ? (*names)[i] : row_name(f, nullptr);
        Row& r = rows[name];
        r.name = name;
        add_file(r, f);
    }
    std::vector<const Row*> order;
    for (const auto& [n, r] : rows) order.push_back(&r);
    std::stable_sort(order.begin(), order.end(), [](const Row* a, const Row* b) {
        return a->dir[0].bytes + a->dir[1].bytes > b->dir[0].bytes + b->dir[1].bytes;
    });
    nlohmann::json out = nlohmann::json::array();
    for (const Row* r : order) {
        nlohmann::json j = {{"path", r->name}, {"files", r->keys.size()}};
        if (r->keys.size() == 1) {
            j["ino"] = r->keys[0].ino;
            j["fs_dev"] = dev_string(decode_kernel_dev(r->keys[0].fs_dev));
            j["gen"] = r->keys[0].gen;
        }
        j["read"] = dir_json(r->dir[0]);
        j["write"] = dir_json(r->dir[1]);
        out.push_back(std::move(j));
    }
    return out;
}

/// A mean command size for the MEANSZ column: bytes below 1 KiB, else one decimal in k, m or g (1024-based), so
/// every row reads alike ("5.9k", "1.0m") where human_bytes gives "6000" for one and "1m" for another.
std::string mean_size(uint64_t bytes, uint64_t cmds) {
    if (!cmds) return "-";
    double v = double(bytes) / double(cmds);
    if (v < 1023.5) return std::to_string(uint64_t(std::llround(v)));
    static const char* units[] = {"k", "m", "g", "t"};
    int u = 0;
    for (v /= 1024; v >= 1023.95 && u < 3; v /= 1024) ++u;  // what would print as 1024.0 takes the next unit
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%s", v, units[u]);
    return b;
}

void print_file_table(std::ostream& os, const nlohmann::json& files, const nlohmann::json& counts, size_t max_rows) {
    os << "\n== device commands by file (--files; CACHE = page-cache share, 1 - device bytes / app bytes)\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-48s %-5s %8s %12s %8s %12s %7s %10s %10s\n", "PATH", "OP", "CMDS", "BYTES",
                  "MEANSZ", "APP_BYTES", "CACHE", "D2C_p50", "D2C_p99");
    os << line;
    size_t shown = 0;
    for (const auto& f : files) {
        if (shown++ >= max_rows) {
            os << "... " << files.size() - max_rows << " more rows in --json\n";
            break;
        }
        for (const char* op : {"read", "write"}) {
            const auto& d = f[op];
            uint64_t cmds = d["cmds"], bytes = d["bytes"], app = d["app_bytes"];
            if (!cmds && !app) continue;
            std::string path = f["path"].get<std::string>();
            if (path.size() > 48) path = "..." + path.substr(path.size() - 45);
            std::string cache = d["page_cache_share"].is_null()
                                    ? "-"
                                    : std::to_string(int(std::lround(d["page_cache_share"].get<double>() * 100))) + "%";
            const auto& pct = d["d2c_percentiles"];
            auto p = [&](const char* q) {
                return pct.contains(q) ? human_ns(pct[q]["value"].get<double>()) : std::string("-");
            };
            std::snprintf(line, sizeof line, "%-48s %-5s %8llu %12llu %8s %12llu %7s %10s %10s\n", path.c_str(), op,
                          (unsigned long long)cmds, (unsigned long long)bytes, mean_size(bytes, cmds).c_str(),
                          (unsigned long long)app, cache.c_str(), p("p50").c_str(), p("p99").c_str());
            os << line;
        }
    }
    if (!counts.is_null())
        os << "commands by source: page cache " << counts.value("by_page", 0) << ", direct I/O (iomap) "
           << counts.value("by_dio", 0) << " (found at issue " << counts.value("dio_at_issue", 0) << "), syscall "
           << counts.value("by_syscall", 0) << ", io_uring " << counts.value("by_uring", 0) << "; no file "
           << counts.value("no_file", 0) << "; files without room " << counts.value("map_full", 0)
           << "; writeback followed " << counts.value("writeback_followed", 0) << " (written files without room "
           << counts.value("written_files_full", 0) << "); bio chains cut " << counts.value("bio_chains_cut", 0)
           << "\n";
    if (!counts.is_null() && counts.contains("parts_joined"))  // --events: merged commands split per file
        os << "events: " << counts.value("parts_joined", 0) << " commands carry each file's bytes; "
           << counts.value("parts_incomplete", 0) << " lost some of their parts (" << counts.value("parts_lost", 0)
           << " parts dropped, " << counts.value("parts_orphaned", 0) << " without their command)\n";
}

}  // namespace kvio::trace
