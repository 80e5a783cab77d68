#include "distiller/target_limits.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>

#include "common/devinfo.h"
#include "common/error.h"
#include "common/histogram.h"

namespace kvio::distiller {

namespace {

uint64_t read_u64(const std::string& path) {
    std::ifstream f(path);
    uint64_t v = 0;
    return f >> v ? v : 0;
}

// /proc/meminfo's `key:` value (HugePages_Free: a count), 0 when absent.
uint64_t meminfo(const std::string& key) {
    std::ifstream f("/proc/meminfo");
    std::string k;
    uint64_t v = 0;
    while (f >> k >> v) {
        if (k == key + ":") return v;
        f.ignore(256, '\n');
    }
    return 0;
}

constexpr const char* kNrHugepages = "/proc/sys/vm/nr_hugepages";

bool write_long(const char* path, long v) {
    std::ofstream f(path);
    f << v << "\n";
    f.close();
    return bool(f);
}

// The largest block size a section issues: the largest size of its bssplit ("4k/10:1280k/90,512k/100") or bs.
uint64_t max_block_size(const Options& o) {
    uint64_t m = 0;
    for (const auto& [k, v] : o) {
        if (k != "bssplit" && k != "bs") continue;
        std::string tok;
        std::istringstream in(v);
        while (std::getline(in, tok, k == "bs" ? ',' : ':')) {
            for (std::string part; !tok.empty();) {  // a bssplit "A/P,B/Q" joins the directions with ','
                auto comma = tok.find(',');
                part = tok.substr(0, comma);
                tok = comma == std::string::npos ? "" : tok.substr(comma + 1);
                part = part.substr(0, part.find('/'));
                size_t used = 0;
                uint64_t n = part.empty() ? 0 : std::stoull(part, &used);
                const char s = used < part.size() ? char(std::tolower(part[used])) : 0;
                n <<= s == 'k' ? 10 : s == 'm' ? 20 : s == 'g' ? 30 : 0;
                m = std::max(m, n);
            }
        }
    }
    return m;
}

uint64_t option_u64(const Options& o, const char* key, uint64_t dflt) {
    for (const auto& [k, v] : o)
        if (k == key) return std::stoull(v);
    return dflt;
}

bool has_option(const Options& o, const char* key, const char* value) {
    for (const auto& [k, v] : o)
        if (k == key && v == value) return true;
    return false;
}

uint64_t section_huge_pages(const Options& o) {
    if (!has_option(o, "iomem", "shmhuge")) return 0;
    return huge_pages_for(option_u64(o, "iodepth", 1), max_block_size(o), option_u64(o, "numjobs", 1));
}

uint64_t largest_size(const Profile& p) {
    uint64_t m = 0;
    for (const Dist* d : {&p.read.sizes, &p.write.sizes})
        if (!d->empty()) m = std::max(m, d->rbegin()->first);
    return m;
}

}  // namespace

QueueLimits queue_limits(const std::string& path) {
    QueueLimits q;
    if (path.empty() || !is_block_device(path)) return q;
    try {
        const std::string dir = "/sys/class/block/" + block_dev_info_for_path(path).whole_disk_name + "/queue/";
        q.max_segments = uint32_t(read_u64(dir + "max_segments"));
        q.max_segment_size = read_u64(dir + "max_segment_size");
        q.max_sectors_kb = read_u64(dir + "max_sectors_kb");
        q.logical_block_size = read_u64(dir + "logical_block_size");
        if (q.max_segments) q.source = dir;
    } catch (const Error&) {
        return QueueLimits{};
    }
    return q;
}

uint64_t scattered_limit(const QueueLimits& q) {
    uint64_t l = uint64_t(q.max_segments ? q.max_segments : kDefaultMaxSegments) * kBasePage;
    if (q.max_sectors_kb) l = std::min(l, q.max_sectors_kb << 10);
    return l;
}

uint64_t huge_pages_for(uint64_t iodepth, uint64_t max_bs, uint64_t numjobs) {
    // fio adds a page for direct-I/O alignment and rounds up to whole huge pages; one more is needed (measured, fio
    // 3.33: iodepth 1 x 1 MiB took 2 pages, 8 x 1 MiB 6, 4 x 1280 KiB 4, 4 x 512 KiB 3).
    return ((iodepth * max_bs + kBasePage + kHugePage - 1) / kHugePage + 1) * numjobs;
}

uint64_t huge_pages_needed(const FioJob& job) {
    if (job.sections.empty()) return section_huge_pages(job.options);
    uint64_t best = 0, group = 0;
    for (const auto& s : job.sections) {
        if (has_option(s.options, "stonewall", "")) group = 0;
        group += section_huge_pages(s.options);
        best = std::max(best, group);
    }
    return best;
}

std::vector<std::string> device_level_lines(const Profile& whole, const FioJob& job, const JobOptions& opt) {
    std::vector<std::string> l;
    l.push_back(
        "level: device: the job reissues the commands the device saw (their sizes, depth, ranges and mix, direct=1), "
        "as the trace holds them; on another target the same commands reach the drive only within the limits below "
        "(docs/distill.md \"Sizes the target must not split\")");
    const uint64_t big = largest_size(whole);
    uint64_t gcd = 0;
    for (const Dist* d : {&whole.read.sizes, &whole.write.sizes})
        for (const auto& [sz, n] : *d) gcd = std::gcd(gcd, sz);
    const uint64_t lbs = std::min<uint64_t>(kBasePage, gcd ? gcd & -gcd : 512);  // the largest power of 2 dividing all
    const uint64_t pages = huge_pages_needed(job);
    l.push_back("target needs: max_sectors_kb >= " + std::to_string((big + 1023) / 1024) + " (the largest command, " +
                human_bytes(big) + "), max_segments x max_segment_size >= that, logical_block_size <= " +
                std::to_string(lbs) + " (the sizes' largest power-of-2 divisor)" +
                (pages ? "; " + std::to_string(pages) + " free 2 MiB huge pages (`echo " + std::to_string(pages) +
                             " > /proc/sys/vm/nr_hugepages`; fio refuses to start without them)"
                       : ""));
    if (pages)
        l.push_back("iomem=shmhuge where a section's commands exceed max_segments x 4 KiB (" +
                    human_bytes(scattered_limit(QueueLimits{})) +
                    " when unknown): a direct-I/O buffer of scattered 4 KiB pages is split there (a loop device: "
                    "1280 KiB reads became 512 + 512 + 256 KiB commands), huge pages are physically contiguous");
    l.push_back(
        "on a target with smaller limits the commands above them are split (the replay's size TV counts them): raise "
        "`/sys/block/DEV/queue/max_sectors_kb` up to its max_hw_sectors_kb; a drive whose max_hw_sectors_kb, "
        "max_segments x max_segment_size or logical block size does not allow them will not reproduce those sizes");
    const QueueLimits q = opt.target_is_block ? queue_limits(opt.filename) : QueueLimits{};
    if (q.max_segments) {
        const uint64_t reach = std::min(q.max_sectors_kb << 10, uint64_t(q.max_segments) * q.max_segment_size);
        if (reach < big)
            l.push_back("WARNING: target " + opt.filename + " makes commands of at most " + human_bytes(reach) +
                        " (max_sectors_kb " + std::to_string(q.max_sectors_kb) + ", max_segments " +
                        std::to_string(q.max_segments) + " x max_segment_size " + std::to_string(q.max_segment_size) +
                        "): the larger ones will be split");
        if (q.logical_block_size > lbs)
            l.push_back("WARNING: target " + opt.filename + " has logical_block_size " +
                        std::to_string(q.logical_block_size) + ": direct I/O of smaller sizes fails there");
    }
    return l;
}

HugePageReserve::HugePageReserve(uint64_t pages) {
    const uint64_t free = meminfo("HugePages_Free");
    if (!pages || free >= pages) return;
    const long before = long(read_u64(kNrHugepages));
    if (!write_long(kNrHugepages, before + long(pages - free)))
        throw Error(std::string("cannot raise ") + kNrHugepages + " for the job's " + std::to_string(pages) +
                    " huge pages (iomem=shmhuge): needs root");
    old_ = before;
    if (const uint64_t now = meminfo("HugePages_Free"); now < pages) {
        write_long(kNrHugepages, old_);
        old_ = -1;
        throw Error("the kernel gave " + std::to_string(now) + " free huge pages of the " + std::to_string(pages) +
                    " the job's iomem=shmhuge sections need (memory too fragmented?): reserve them at boot "
                    "(hugepages=N on the kernel command line)");
    }
}

HugePageReserve::~HugePageReserve() {
    if (old_ >= 0) write_long(kNrHugepages, old_);
}

}  // namespace kvio::distiller
