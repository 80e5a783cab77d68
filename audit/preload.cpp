// Libraries preloaded into a process tree: LD_PRELOAD of each process (sampled from /proc while it runs: a wrapper
// like `eatmydata CMD` sets it for the program it execs), the shared objects mapped into each process that its
// executable does not need (a shim that blanks its own LD_PRELOAD is still mapped), /etc/ld.so.preload, and which
// I/O functions each defines. docs/audit.md, "Preloaded libraries".
#include "audit/preload.h"

#include <fcntl.h>
#include <gelf.h>
#include <time.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
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

/// Opens `path` as ELF and calls `fn(elf)`; false when it is not readable ELF.
template <class Fn>
bool with_elf(const std::string& path, Fn fn) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    const bool ok = elf && elf_kind(elf) == ELF_K_ELF;
    if (ok) fn(elf);
    if (elf) elf_end(elf);
    ::close(fd);
    return ok;
}

/// The I/O functions (io_functions()) an open ELF object defines in its dynamic symbol table, sorted.
std::vector<std::string> io_functions_in(Elf* elf) {
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
    return {found.begin(), found.end()};
}

/// Shared objects mapped into `pid` (paths from /proc/PID/maps whose file name has ".so"), the executable excluded.
std::set<std::string> mapped_objects(pid_t pid, const std::string& exe) {
    std::set<std::string> out;
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    for (std::string line; std::getline(maps, line);) {
        auto slash = line.find('/');
        if (slash == std::string::npos) continue;
        std::string path = line.substr(slash);
        if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) path.resize(path.size() - 10);
        const std::string name = path.substr(path.rfind('/') + 1);
        if (path != exe && name.find(".so") != std::string::npos) out.insert(path);
    }
    return out;
}

}  // namespace

const PreloadWatch::Dynamic& PreloadWatch::dynamic_of(const std::string& path) {
    auto it = dyn_.find(path);
    if (it != dyn_.end()) return it->second;
    Dynamic d;
    d.soname = path.substr(path.rfind('/') + 1);
    d.elf = with_elf(path, [&](Elf* elf) {
        size_t nph = 0;
        if (elf_getphdrnum(elf, &nph) == 0)
            for (size_t i = 0; i < nph; ++i) {
                GElf_Phdr ph;
                if (!gelf_getphdr(elf, int(i), &ph) || ph.p_type != PT_INTERP) continue;
                // Only the loader's path: elf_rawfile would read the whole file (a 200 MB executable with its debug
                // information took 4 s on a loaded machine, and the samples stopped meanwhile).
                Elf_Data* chunk = elf_getdata_rawchunk(elf, int64_t(ph.p_offset), ph.p_filesz, ELF_T_BYTE);
                if (chunk && chunk->d_buf)
                    d.interp = std::string(static_cast<const char*>(chunk->d_buf),
                                           strnlen(static_cast<const char*>(chunk->d_buf), chunk->d_size));
            }
        for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || sh.sh_entsize == 0) continue;
            Elf_Data* data = elf_getdata(scn, nullptr);
            for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; ++i) {
                GElf_Dyn dyn;
                if (!gelf_getdyn(data, int(i), &dyn)) continue;
                if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_SONAME) continue;
                const char* n = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
                if (!n) continue;
                if (dyn.d_tag == DT_NEEDED)
                    d.needed.push_back(n);
                else
                    d.soname = n;
            }
        }
        d.interposes = io_functions_in(elf);  // in the same open: each object is read once
    });
    return dyn_.emplace(path, std::move(d)).first->second;
}

bool PreloadWatch::sample_maps(pid_t pid) {
    std::error_code ec;
    const std::string exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
    if (ec) return false;  // ended, or a kernel thread
    const std::set<std::string> objs = mapped_objects(pid, exe);
    maps_read_.insert(pid);
    std::map<std::string, std::string> by_soname;  // DT_SONAME (else file name) -> mapped path
    for (const auto& o : objs) by_soname[dynamic_of(o).soname] = o;
    // The executable's DT_NEEDED closure over what is mapped, and its interpreter: what the loader had to load.
    std::set<std::string> needed;
    std::vector<std::string> todo = dynamic_of(exe).needed;
    const std::string interp = dynamic_of(exe).interp;
    // The loader maps the preloaded objects before the executable's DT_NEEDED ones (ld.so(8)): once all of those are
    // mapped, so is every preload. A static executable (no PT_INTERP) has nothing to load.
    const bool loaded = dynamic_of(exe).elf && std::all_of(todo.begin(), todo.end(), [&](const std::string& soname) {
                            return by_soname.count(soname) != 0;
                        });
    if (!interp.empty()) {
        needed.insert(std::filesystem::weakly_canonical(interp, ec).string());
        needed.insert(interp);
    }
    while (!todo.empty()) {
        const std::string soname = todo.back();
        todo.pop_back();
        auto it = by_soname.find(soname);
        if (it == by_soname.end() || !needed.insert(it->second).second) continue;
        const auto& more = dynamic_of(it->second).needed;
        todo.insert(todo.end(), more.begin(), more.end());
    }
    for (const auto& o : objs) {
        // Not needed and defining an I/O function: preloaded (or dlopen'd). Objects a program dlopens that define
        // none (a Python interpreter's extension modules) cannot interpose one and are not listed.
        if (needed.count(o) || seen_.count(o) || dynamic_of(o).interposes.empty()) continue;
        seen_[o] = "mapped into pid " + std::to_string(pid) + " (" + comm_of(pid) + "), not needed by " + exe;
    }
    return loaded;
}

std::vector<std::string> interposed_io_functions(const std::string& so_path) {
    if (::access(so_path.c_str(), R_OK) != 0) throw Error(so_path + ": cannot open: " + std::strerror(errno));
    std::vector<std::string> found;
    if (!with_elf(so_path, [&](Elf* elf) { found = io_functions_in(elf); }))
        throw Error(so_path + ": not an ELF shared object");
    return found;
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
        // Before anything is read: an exec after this instant makes this inspection one of the previous program.
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        const uint64_t start = uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
        for (const auto& entry : ld_preload_of(pid)) {
            const std::string lib = mapped_path(pid, entry);
            if (!seen_.count(lib)) seen_[lib] = "LD_PRELOAD of pid " + std::to_string(pid) + " (" + comm_of(pid) + ")";
        }
        if (sample_maps(pid)) inspected_[pid].push_back(start);
    }
}

std::vector<ExecImage> PreloadWatch::not_inspected(const std::vector<ExecImage>& execs) const {
    std::vector<ExecImage> out;
    for (size_t i = 0; i < execs.size(); ++i) {
        uint64_t until = UINT64_MAX;  // the same process's next exec, if any
        for (size_t j = i + 1; j < execs.size() && until == UINT64_MAX; ++j)
            if (execs[j].pid == execs[i].pid) until = execs[j].ns;
        auto it = inspected_.find(execs[i].pid);
        const bool seen = it != inspected_.end() && std::any_of(it->second.begin(), it->second.end(), [&](uint64_t t) {
                              return t >= execs[i].ns && t < until;
                          });
        if (!seen) out.push_back(execs[i]);
    }
    return out;
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
