#include "drives/diagnosis.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "common/jsonl.h"
#include "drives/summary.h"

namespace kvio::drives {

using nlohmann::json;

const RunResult* median_traced_round(const Target& t, const std::string& mode) {
    std::vector<const RunResult*> v;
    for (const auto& r : t.runs)
        if (r.mode == mode && r.ok && r.dev.present) v.push_back(&r);
    if (v.empty()) return nullptr;
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return verdict_figure(*a) < verdict_figure(*b); });
    return v[v.size() / 2];
}

namespace {

/// A ceiling of the probe by key; 0 when the probe did not measure it.
double ceiling_of(const Target& t, const char* key) {
    return t.ceiling.is_object() && t.ceiling.contains(key) && t.ceiling[key].is_number() ? t.ceiling[key].get<double>()
                                                                                          : 0;
}

std::string pct(double share) {
    char b[32];
    std::snprintf(b, sizeof b, share < 0.1 ? "%.1f %%" : "%.0f %%", share * 100);
    return b;
}

}  // namespace

std::vector<diagnose::Finding> headroom_findings(const Target& t, const RunResult& r) {
    std::vector<diagnose::Finding> out;
    if (r.mode != "closed" || !r.dev.present) return out;
    for (bool write : {false, true}) {
        double mb = 0, iops = 0;  // the busiest phase's
        for (const auto& p : r.fio.phases) {
            const DirFigures& d = write ? p.write : p.read;
            mb = std::max(mb, d.mb_s), iops = std::max(iops, d.iops);
        }
        const double seq = ceiling_of(t, write ? "seq_write_mb_s" : "seq_read_mb_s"),
                     rnd = write ? 0 : ceiling_of(t, "rand_read_4k_iops");
        const double mb_share = seq > 0 ? mb / seq : 0, iops_share = rnd > 0 ? iops / rnd : 0;
        const double share = std::max(mb_share, iops_share), qd = write ? r.dev.qd_write_mean : r.dev.qd_read_mean;
        // qd 0: no sampled dispatch of this direction (the depth counts the command itself, so a sample is >= 1)
        if (mb <= 0 || (seq <= 0 && rnd <= 0) || share >= kHeadroomShare || qd <= 0 || qd >= kHeadroomQd) continue;
        std::string s = std::string("the job's ") + (write ? "writes" : "reads") + " reached ";
        char b[200];
        if (seq > 0) {
            std::snprintf(b, sizeof b, "%.1f of %.1f MB/s (sequential 1 MiB at QD 32)", mb, seq);
            s += pct(mb_share) + " of this drive's bandwidth ceiling, " + b;
        }
        if (rnd > 0) {
            std::snprintf(b, sizeof b, "%.0f of %.0f IOPS (random 4 KiB at QD 64)", iops, rnd);
            s += std::string(seq > 0 ? ", and " : "") + pct(iops_share) + " of its IOPS ceiling, " + b;
        }
        std::snprintf(b, sizeof b, ", at a mean device queue depth of %.1f", qd);
        s += std::string(b) + ": this result measures the job's depth more than the drive";
        diagnose::Finding f;
        f.id = "job_below_ceiling";
        f.device = t.disk;
        f.op = write ? "write" : "read";
        f.summary = s;
        f.action =
            "compare drives at the depth the workload will really have; if the traced engine itself keeps "
            "the queue this shallow, raising its depth (more concurrent loads, larger I/Os) gains more than "
            "another drive";
        f.figures = {{"job_mb_s", mb},
                     {"job_iops", iops},
                     {"ceiling_mb_s", seq > 0 ? json(seq) : json(nullptr)},
                     {"ceiling_iops", rnd > 0 ? json(rnd) : json(nullptr)},
                     {"share_pct", share * 100},
                     {"device_qd_mean", qd}};
        out.push_back(f);
    }
    return out;
}

std::vector<diagnose::Finding> drive_findings(const Target& t, const std::string& mode) {
    const RunResult* r = median_traced_round(t, mode);
    if (!r) return {};
    std::vector<diagnose::Finding> out;
    // A remote run has no trace file: its device figures are the exporter's counters (--metrics), not a trace.
    if (!t.spec.remote()) try {
            out = diagnose::diagnose({read_json_file(r->files + ".trace.json"), ""});
        } catch (const Error& e) {
            diagnose::Finding f;
            f.id = "trace_unreadable";
            f.device = t.disk;
            f.summary =
                std::string("the trace of round ") + std::to_string(r->round + 1) + " could not be read: " + e.what();
            f.action = "rerun this drive; the trace's log next to it (.trace.log) says why kvio trace wrote nothing";
            out.push_back(f);
        }
    for (auto& f : headroom_findings(t, *r)) out.push_back(std::move(f));
    return out;
}

}  // namespace kvio::drives
