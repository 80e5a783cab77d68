#include "distiller/verify.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "common/devinfo.h"
#include "common/error.h"

namespace kvio::distiller {

static std::string shq(const std::string& s) {
    std::string o = "'";
    for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return o + "'";
}

Profile run_replay(const Profile& orig, const VerifyOptions& opt) {
    if (!is_block_device(opt.target))
        throw Error("distill --verify: target " + opt.target + " is not a block device (the replay is traced at the device)");
    BlockDevInfo info = block_dev_info_for_path(opt.target);
    std::string disk_dev = dev_string(info.whole_disk);
    if (disk_dev == orig.dev)
        throw Error("distill --verify: target " + opt.target + " is the device of the original trace (" + orig.dev +
                    "); use another device so the replay does not overwrite what was traced");
    std::string mp = mount_point_of(info.dev);
    if (!mp.empty())
        throw Error("distill --verify: target " + opt.target + " is mounted on " + mp + "; refusing to run a raw job on it");
    // /proc/self/exe must be resolved here: inside the shell below it would name the shell.
    std::string exe = opt.kvio_exe;
    if (exe == "/proc/self/exe") {
        std::error_code ec;
        auto p = std::filesystem::read_symlink(exe, ec);
        if (ec) throw Error("distill --verify: cannot resolve /proc/self/exe: " + ec.message());
        exe = p.string();
    }
    std::string cmd = shq(exe) + " trace --events " + shq(opt.events_out) + " -d " + shq(info.whole_disk_name) +
                      " -- fio --output-format=json --output=" + shq(opt.events_out + ".fio.json") + " " +
                      shq(opt.job_path) + " >" + shq(opt.events_out + ".log") + " 2>&1";
    int st = std::system(cmd.c_str());
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        throw Error("distill --verify: the traced fio run failed (exit status " +
                    std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) + "); see " + opt.events_out + ".log");
    EventFilter f;
    f.dev = disk_dev;
    return profile_events(load_events(opt.events_out, f));
}

}  // namespace kvio::distiller
