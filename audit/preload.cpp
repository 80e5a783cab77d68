// Libraries preloaded into a process tree: LD_PRELOAD of each process (sampled from /proc while it runs: a wrapper
// like `eatmydata CMD` sets it for the program it execs), /etc/ld.so.preload, and which I/O functions each defines.
#include "audit/preload.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"

namespace kvio::audit {

namespace {

/// Functions whose interposition changes what reaches storage: durability, cache dropping, and the data path
/// itself (an `open` wrapper can strip O_DIRECT). docs/audit.md, "Preloaded libraries".
const std::set<std::string>& io_functions() {
    static const std::set<std::string> s = {
        "fsync",          "fdatasync",     "sync_file_range", "syncfs",    "sync",
        "msync",          "posix_fadvise", "posix_fadvise64", "fadvise64", "open",
        "open64",         "openat",        "openat64",        "read",      "pread",
        "pread64",        "write",         "pwrite",          "pwrite64",  "readv",
        "writev",         "preadv",        "pwritev",         "preadv2",   "pwritev2",
        "io_uring_enter", "io_submit",     "fopen",           "fopen64"};
    return s;
}

/// Parent pid of every process, from /proc/PID/stat (field 4, after the parenthesised comm).
std::map<pid_t, pid_t> parents() {
    std::map<pid_t, pid_t> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
        std::ifstream f(e.path() / "stat");
        std::string line;
        if (!std::getline(f, line)) continue;
        auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 1));
        std::string state;
        pid_t ppid = 0;
        rest >> state >> ppid;
        out[pid_t(std::stol(name))] = ppid;
    }
    return out;
}

std::string comm_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
    std::string c;
    std::getline(f, c);
    return c;
}

/// LD_PRELOAD's entries (separated by spaces or colons) in /proc/PID/environ.
std::vector<std::string> ld_preload_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::string> out;
    for (size_t at = 0; at < env.size();) {
        size_t end = env.find('\0', at);
        if (end == std::string::npos) end = env.size();
        if (env.compare(at, 11, "LD_PRELOAD=") == 0) {
            std::string v = env.substr(at + 11, end - at - 11);
            std::replace(v.begin(), v.end(), ':', ' ');
            std::istringstream in(v);
            for (std::string s; in >> s;) out.push_back(s);
        }
        at = end + 1;
    }
    return out;
}

/// A bare LD_PRELOAD entry ("libeatmydata.so", found through the library path) as the file the process mapped:
/// the path in /proc/PID/maps whose file name starts with it; the entry itself when none does.
std::string mapped_path(pid_t pid, const std::string& entry) {
    if (entry.find('/') != std::string::npos) return entry;
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    for (std::string line; std::getline(maps, line);) {
        auto slash = line.find('/');
        if (slash == std::string::npos) continue;
        const std::string path = line.substr(slash);
        const std::string name = path.substr(path.rfind('/') + 1);
        if (name.rfind(entry, 0) == 0) return path;
    }
    return entry;
}

}  // namespace

std::vector<std::string> interposed_io_functions(const std::string& so_path) {
    int fd = ::open(so_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(so_path + ": cannot open: " + std::strerror(errno));
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        if (elf) elf_end(elf);
        ::close(fd);
        throw Error(so_path + ": not an ELF shared object");
    }
    std::set<std::string> found;
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
            if (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC) continue;
            const char* n = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (n && io_functions().count(n)) found.insert(n);
        }
    }
    elf_end(elf);
    ::close(fd);
    return {found.begin(), found.end()};
}

void PreloadWatch::sample(pid_t root) {
    const auto pp = parents();
    std::set<pid_t> tree = {root};
    for (bool grew = true; grew;) {  // descendants: every pid whose parent is in the tree
        grew = false;
        for (const auto& [pid, ppid] : pp)
            if (tree.count(ppid) && tree.insert(pid).second) grew = true;
    }
    for (pid_t pid : tree) {
        pids_.insert(pid);
        for (const auto& entry : ld_preload_of(pid)) {
            const std::string lib = mapped_path(pid, entry);
            if (!seen_.count(lib)) seen_[lib] = "LD_PRELOAD of pid " + std::to_string(pid) + " (" + comm_of(pid) + ")";
        }
    }
}

std::vector<Preload> PreloadWatch::preloads() const {
    std::map<std::string, std::string> all = seen_;
    std::ifstream sys("/etc/ld.so.preload");
    for (std::string s; sys >> s;)
        if (!s.empty() && s[0] != '#' && !all.count(s)) all[s] = "/etc/ld.so.preload";
    std::vector<Preload> out;
    for (const auto& [path, source] : all) {
        Preload p{path, source};
        try {
            p.interposes = interposed_io_functions(path);
        } catch (const Error&) {
            p.readable = false;
        }
        out.push_back(p);
    }
    return out;
}

}  // namespace kvio::audit
