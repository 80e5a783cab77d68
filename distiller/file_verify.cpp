#include "distiller/file_verify.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/jsonl.h"
#include "common/stop_signal.h"
#include "common/syscall_trace.h"
#include "distiller/stream_scores.h"
#include "workload/target.h"

namespace kvio::distiller {

namespace {

// The target's whole disk, after the refusals run_file_replay documents.
BlockDevInfo checked_fs_target(const Profile& orig, const FileVerifyOptions& o, uint64_t needs_bytes) {
    if (!is_block_device(o.target))
        throw Error("distill --verify --level file: target " + o.target +
                    " is not a block device (a filesystem is made on it and the replay is traced at the device)");
    BlockDevInfo info = block_dev_info_for_path(o.target);
    if (dev_string(info.whole_disk) == orig.dev)
        throw Error("distill --verify: target " + o.target + " is the device of the original trace (" + orig.dev +
                    "); use another device so the replay does not overwrite what was traced");
    const std::string mp = mount_point_of(info.dev);
    if (!mp.empty())
        throw Error("distill --verify: target " + o.target + " is mounted on " + mp +
                    "; refusing to make a filesystem on it");
    try {
        workload::check_device_safe(workload::inspect_target(o.target), o.force);
    } catch (const Error& e) {
        throw Error(std::string("distill --verify: a filesystem is made on its target: ") + e.what());
    }
    const uint64_t have = block_dev_info(info.dev).size_bytes, want = needs_bytes + needs_bytes / 10 + (64u << 20);
    if (have < want)
        throw Error("distill --verify: target " + o.target + " has " + std::to_string(have) +
                    " bytes; the job's files need " + std::to_string(needs_bytes) +
                    " (with the filesystem's own: " + std::to_string(want) + "): give a larger device");
    return info;
}

// A command's outcome: a stop signal becomes Stopped, a failure an Error naming the log.
void checked_run(const std::vector<std::string>& argv, const std::string& log, const std::string& what) {
    int sig = 0;
    const int st = run_passing_stops(argv, log, &sig);
    if (sig) throw Stopped(sig, "distill --verify: stopped by signal " + std::to_string(sig) + " during " + what);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        throw Error("distill --verify: " + what + " failed (exit status " +
                    std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) + "); see " + log);
}

/// The private mount: created by mount(), undone (unmounted, directory removed) at destruction, whatever happened.
class PrivateMount {
public:
    PrivateMount(const std::string& dev, const std::string& dir, const std::string& fs) : dir_(dir) {
        std::filesystem::create_directory(dir_);
        if (::mount(dev.c_str(), dir_.c_str(), fs.c_str(), 0, nullptr) != 0) {
            const int e = errno;
            std::error_code ec;
            std::filesystem::remove(dir_, ec);
            throw Error("distill --verify: mount " + dev + " on " + dir_ + " (" + fs + "): " + std::strerror(e));
        }
    }
    ~PrivateMount() {
        ::sync();  // a busy unmount after the traced fio has ended would only be writeback still running
        for (int i = 0; i < 50 && ::umount2(dir_.c_str(), 0) != 0 && errno == EBUSY; ++i) ::usleep(100'000);
        std::error_code ec;
        std::filesystem::remove(dir_, ec);
    }
    PrivateMount(const PrivateMount&) = delete;
    PrivateMount& operator=(const PrivateMount&) = delete;

private:
    std::string dir_;
};

std::string resolved_exe(const std::string& exe) {
    if (exe != "/proc/self/exe") return exe;
    std::error_code ec;
    auto p = std::filesystem::read_symlink(exe, ec);
    if (ec) throw Error("distill --verify: cannot resolve /proc/self/exe: " + ec.message());
    return p.string();
}

void syncfs_of(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw Error("distill --verify: open " + dir + ": " + std::strerror(errno));
    const int rc = ::syncfs(fd);
    const int e = errno;
    ::close(fd);
    if (rc != 0) throw Error("distill --verify: syncfs " + dir + ": " + std::strerror(e));
}

}  // namespace

QueueSettings recorded_queue_settings(const std::string& events, const std::string& dev) {
    std::ifstream in(events, std::ios::binary | std::ios::ate);
    if (!in) return {};
    const std::streamoff size = in.tellg(), tail = std::min<std::streamoff>(size, 1 << 16);
    std::string buf(size_t(tail), '\0');
    in.seekg(size - tail);
    if (!in.read(buf.data(), tail)) return {};
    while (!buf.empty() && buf.back() == '\n') buf.pop_back();
    const nlohmann::json j = nlohmann::json::parse(buf.substr(buf.rfind('\n') + 1), nullptr, false);
    if (!j.is_object() || j.value("type", "") != "summary" || !j.contains("queues") || !j["queues"].is_object())
        return {};
    auto it = j["queues"].find(dev);
    return it == j["queues"].end() ? QueueSettings{} : queue_settings_from_json(*it);
}

std::vector<std::string> queue_settings_header(const QueueSettings& s) {
    if (s.empty()) return {"target queue settings: not recorded in the trace (a trace by an older kvio, or binary)"};
    std::string l =
        "target needs: the traced device's queue settings (recorded in the trace; they shape the page "
        "cache's commands): ";
    bool first = true;
    for (const auto& k : page_cache_queue_settings())
        if (auto it = s.find(k); it != s.end()) l += (first ? "" : ", ") + k + " " + it->second, first = false;
    std::vector<std::string> lines = {l};
    lines.push_back(
        "set each with `echo VALUE > /sys/block/DEV/queue/NAME` before the run (kvio distill --verify does, and "
        "writes the target's own back after)");
    const auto msk = s.find("max_sectors_kb");
    lines.push_back(
        "on a target with other limits: " +
        (msk == s.end() ? std::string("a max_sectors_kb")
                        : "max_sectors_kb " + msk->second + " (the largest command the page cache sent)") +
        " above its max_hw_sectors_kb, or above its max_segments x max_segment_size, is split at its limit; a "
        "scheduler it does not offer leaves its own (merges and depth differ): those are not reproduced (--verify "
        "names each in verify.queue); the page cache sends whole 4 KiB pages, which any logical block size up to "
        "4096 takes");
    return lines;
}

FileReplay run_file_replay(const Profile& orig, const FilePattern& p, const FileVerifyOptions& o) {
    if (o.fs_type != "ext4" && o.fs_type != "xfs")
        throw Error("distill --verify: --fs " + o.fs_type + ": kvio makes ext4 or xfs");
    StopSignal stop;  // a stop between the steps below still unmounts (the destructors run) and ends with Stopped
    auto poll = [&](const char* step) {
        if (stop.stopped())
            throw Stopped(stop.signo(),
                          "distill --verify: stopped by signal " + std::to_string(stop.signo()) + " during " + step);
    };
    FileReplay fr;
    const std::string mnt = o.work_dir + "/mnt";
    FileJobOptions jo = o.job;
    jo.directory = mnt;
    jo.iolog_prefix = o.work_dir + "/job.";
    fr.job = make_file_job(p, jo);
    const BlockDevInfo info = checked_fs_target(orig, o, fr.job.needs_bytes);
    fr.job_path = o.work_dir + "/job.fio";
    fr.events_out = o.work_dir + "/replay.jsonl";
    write_text_file(fr.job_path, fr.job.text);
    for (const auto& [path, text] : fr.job.iologs) write_text_file(path, text);
    poll("set-up");
    QueueSettingsOverride queue(info.whole_disk_name, o.queue);  // restored after the unmount (destroyed later)
    // Inode tables and the journal initialised now, not by a background thread while the replay is traced.
    std::vector<std::string> mkfs = {"/usr/bin/env", "mkfs." + o.fs_type, "-q"};
    if (o.fs_type == "ext4")
        mkfs.insert(mkfs.end(), {"-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"});
    else
        mkfs.push_back("-f");
    mkfs.push_back(o.target);
    checked_run(mkfs, o.work_dir + "/mkfs.log", "mkfs." + o.fs_type + " " + o.target);
    poll("mkfs");
    PrivateMount mount(o.target, mnt, o.fs_type);
    if (!fr.job.layout_section.empty()) {
        // In work_dir: fio writes the layout's exec_prerun output to <section>.prerun.txt in its working directory.
        checked_run({"/usr/bin/env", "-C", o.work_dir, "fio", "--section=" + fr.job.layout_section, fr.job_path},
                    o.work_dir + "/layout.log", "the layout of the files the trace reads (fio --section=layout)");
        syncfs_of(mnt);
    }
    poll("the layout");
    // --syscalls: the fio processes' calls on the target name which process replayed which stream.
    std::vector<std::string> argv = {resolved_exe(o.kvio_exe), "trace", "--syscalls", "--events", fr.events_out, "-d",
                                     info.whole_disk_name,     "--"};
    for (const auto& s : replay_fio_command()) argv.push_back(s);
    argv.insert(argv.end(), {"--output-format=json", "--output=" + o.work_dir + "/replay.fio.json"});
    for (const auto& s : fr.job.replay_sections) argv.push_back("--section=" + s);
    argv.push_back(fr.job_path);
    checked_run(argv, o.work_dir + "/replay.log", "the traced fio run (" + o.work_dir + "/replay.log)");
    queue.check_held();
    fr.queue = queue.results();
    EventFilter f;
    f.dev = dev_string(info.whole_disk);
    fr.replay.trace = load_events(fr.events_out, f);
    fr.replay.profile = profile_events(fr.replay.trace);
    fr.stream_pids =
        replay_stream_pids(load_syscalls(fr.events_out, SyscallFilter{}), kernel_dev(info.dev), p.streams.size());
    return fr;
}

}  // namespace kvio::distiller
