#include "validate/score.h"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "common/histogram.h"

namespace kvio::validate {

static void add_stats(SizeStats& s, uint64_t cmds, uint64_t bytes, uint64_t mn, uint64_t mx) {
    if (!cmds) return;
    s.min = s.cmds ? std::min(s.min, mn) : mn;
    s.max = std::max(s.max, mx);
    s.cmds += cmds;
    s.bytes += bytes;
}

static double tv_distance(const std::array<uint64_t, kSizeBins>& p, const std::array<uint64_t, kSizeBins>& q) {
    uint64_t np = 0, nq = 0;
    for (int k = 0; k < kSizeBins; ++k) {
        np += p[k];
        nq += q[k];
    }
    if (!np && !nq) return 0;
    if (!np || !nq) return 1;
    double s = 0;
    for (int k = 0; k < kSizeBins; ++k) s += std::fabs(double(p[k]) / double(np) - double(q[k]) / double(nq));
    return s / 2;
}

static void finish_scores(Scores& s) {
    if (s.measured.bytes)
        s.wape = double(s.abs_err_bytes) / double(s.measured.bytes);
    else
        s.wape = s.abs_err_bytes ? NAN : 0;
    s.size_tv = tv_distance(s.measured_bins, s.projected_bins);
}

Report score(const SemanticTrace& t, const ProjectionRules& rules, JoinResult join) {
    Report r;
    r.rules = rules;
    r.buffered = t.meta.buffered;
    std::vector<uint64_t> sizes;
    for (size_t i = 0; i < t.ops.size(); ++i) {
        const ObjectOp& op = t.ops[i];
        Scores& k = r.per_op[int(op.kind)];
        if (op.failed) {
            ++k.failed_ops;
            continue;
        }
        project(op, rules, sizes);
        OpTally p;
        for (uint64_t s : sizes) {
            p.add(s);
            ++k.projected_bins[63 - __builtin_clzll(s)];
        }
        const OpTally& m = join.ops[i];
        ++k.objects;
        k.exact_match += m.cmds == p.cmds && m.bytes == p.bytes;
        k.count_match += m.cmds == p.cmds;
        k.per_cmd_size_match += m.cmds == p.cmds && m.bytes == p.bytes && m.mhash == p.mhash;
        k.no_cmds += m.cmds == 0;
        k.abs_err_bytes += m.bytes > p.bytes ? m.bytes - p.bytes : p.bytes - m.bytes;
        add_stats(k.measured, m.cmds, m.bytes, m.min, m.max);
        add_stats(k.projected, p.cmds, p.bytes, p.min, p.max);
    }
    for (int k = 0; k < kOpKinds; ++k) {
        Scores& s = r.per_op[k];
        s.measured_bins = join.bins[k];
        finish_scores(s);
        Scores& a = r.all;
        a.objects += s.objects;
        a.exact_match += s.exact_match;
        a.count_match += s.count_match;
        a.per_cmd_size_match += s.per_cmd_size_match;
        a.no_cmds += s.no_cmds;
        a.failed_ops += s.failed_ops;
        a.abs_err_bytes += s.abs_err_bytes;
        add_stats(a.measured, s.measured.cmds, s.measured.bytes, s.measured.min, s.measured.max);
        add_stats(a.projected, s.projected.cmds, s.projected.bytes, s.projected.min, s.projected.max);
        for (int b = 0; b < kSizeBins; ++b) {
            a.measured_bins[b] += s.measured_bins[b];
            a.projected_bins[b] += s.projected_bins[b];
        }
    }
    finish_scores(r.all);
    join.ops.clear();
    join.ops.shrink_to_fit();
    r.join = std::move(join);
    return r;
}

// Bins as kvio::Histogram (log2 slot k+1 == floor(log2) bin k) so the JSON matches kvio.trace/1 buckets.
static nlohmann::json bins_json(const std::array<uint64_t, kSizeBins>& bins) {
    Histogram h(HistKind::Log2, "bytes", kSizeBins + 1);
    for (int k = 0; k < kSizeBins; ++k)
        if (bins[k]) h.add(uint64_t(1) << k, bins[k]);
    nlohmann::json j = h.to_json();
    j.erase("sum");  // the slot's lower bound stands in for each size: the sum is not meaningful here
    return j;
}

static nlohmann::json size_stats_json(const SizeStats& s) {
    return {{"cmds", s.cmds}, {"bytes", s.bytes}, {"min", s.min}, {"max", s.max}};
}

static nlohmann::json number_or_null(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

static nlohmann::json scores_json(const Scores& s) {
    return {{"objects", s.objects},
            {"exact_match", s.exact_match},
            {"count_match", s.count_match},
            {"per_cmd_size_match", s.per_cmd_size_match},
            {"objects_no_cmds", s.no_cmds},
            {"failed_ops", s.failed_ops},
            {"wape", number_or_null(s.wape)},
            {"abs_err_bytes", s.abs_err_bytes},
            {"size_tv", s.size_tv},
            {"measured", size_stats_json(s.measured)},
            {"projected", size_stats_json(s.projected)},
            {"size_hist", {{"measured", bins_json(s.measured_bins)}, {"projected", bins_json(s.projected_bins)}}}};
}

static nlohmann::json cb_json(const CmdBytes& c) { return {{"cmds", c.cmds}, {"bytes", c.bytes}}; }

nlohmann::json report_json(const Report& r) {
    nlohmann::json j = scores_json(r.all);
    j["schema"] = "kvio.validate/1";
    j["untagged_cmds"] = r.join.untagged.cmds;
    j["untagged_bytes"] = r.join.untagged.bytes;
    j["per_op"] = {{"store", scores_json(r.per_op[int(OpKind::Store)])},
                   {"load", scores_json(r.per_op[int(OpKind::Load)])}};
    const JoinResult& x = r.join;
    j["join"] = {{"mode", join_mode_name(x.mode)},
                 {"reason", r.join_reason},
                 {"records", cb_json(x.records)},
                 {"joined", cb_json(x.joined)},
                 {"untagged", cb_json(x.untagged)},
                 {"ties", cb_json(x.ties)},
                 {"straddles", cb_json(x.straddles)},
                 {"direction_mismatch", cb_json(x.direction_mismatch)},
                 {"duplicates", cb_json(x.duplicates)},
                 {"non_data", cb_json(x.non_data)},
                 {"passthrough_block_skipped", cb_json(x.passthrough_block_skipped)},
                 {"nvme_rows", x.nvme_rows},
                 {"tracer_dropped", r.tracer_dropped},
                 {"tracer_unmatched_completes", r.tracer_unmatched},
                 {"events_summary", r.events_summary},
                 {"warnings", r.warnings}};
    j["inputs"] = {{"semantic", r.semantic_format}, {"commands", r.commands_format}};
    // null when commands were measured; else the sentence kvio validate also prints on stderr before exiting 1.
    j["nothing_measured"] = r.nothing_measured.empty() ? nlohmann::json() : nlohmann::json(r.nothing_measured);
    const ProjectionRules& p = r.rules;
    j["projection"] = {{"engine", p.engine},
                       {"layout", p.layout},
                       {"passthrough", p.passthrough},
                       {"lba_bytes", p.lba_bytes},
                       {"lba_source", p.lba_source},
                       {"block_align", p.block_align},
                       {"header_bytes", p.header_bytes},
                       {"engine_limit", p.engine_limit},
                       {"engine_limit_source", p.engine_limit_source},
                       {"kernel_limit", p.kernel_limit},
                       {"kernel_limit_source", p.kernel_limit_source},
                       {"buffered", r.buffered}};
    return j;
}

static std::string pct(uint64_t a, uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", b ? 100.0 * double(a) / double(b) : 0.0);
    return buf;
}

static std::string wape_str(double w) {
    if (std::isnan(w)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f%%", 100 * w);
    return buf;
}

std::string summary_line(const Report& r) {
    const Scores& a = r.all;
    char tv[32];
    std::snprintf(tv, sizeof tv, "%.4f", a.size_tv);
    return "exact-match " + std::to_string(a.exact_match) + "/" + std::to_string(a.objects) + " (" +
           pct(a.exact_match, a.objects) + ")  WAPE " + wape_str(a.wape) + "  per-cmd size " +
           std::to_string(a.per_cmd_size_match) + "/" + std::to_string(a.objects) + "  size-TV " + tv + "  untagged " +
           std::to_string(r.join.untagged.cmds) + " cmds / " + std::to_string(r.join.untagged.bytes) + " B";
}

static std::string minmax(const SizeStats& s) { return s.cmds ? human_bytes(s.min) + "-" + human_bytes(s.max) : "-"; }

void print_report(std::ostream& os, const Report& r) {
    os << summary_line(r) << "\n";
    char buf[512];
    std::snprintf(buf, sizeof buf, "%-6s %8s %8s %8s %8s %8s %10s %8s %19s %27s %15s %15s\n", "op", "objects", "exact",
                  "count", "per-cmd", "no-cmds", "WAPE", "size-TV", "cmds meas/proj", "bytes meas/proj", "sizes meas",
                  "sizes proj");
    os << buf;
    auto row = [&](const char* name, const Scores& s) {
        std::snprintf(buf, sizeof buf, "%-6s %8llu %8llu %8llu %8llu %8llu %10s %8.4f %19s %27s %15s %15s\n", name,
                      (unsigned long long)s.objects, (unsigned long long)s.exact_match,
                      (unsigned long long)s.count_match, (unsigned long long)s.per_cmd_size_match,
                      (unsigned long long)s.no_cmds, wape_str(s.wape).c_str(), s.size_tv,
                      (std::to_string(s.measured.cmds) + "/" + std::to_string(s.projected.cmds)).c_str(),
                      (std::to_string(s.measured.bytes) + "/" + std::to_string(s.projected.bytes)).c_str(),
                      minmax(s.measured).c_str(), minmax(s.projected).c_str());
        os << buf;
    };
    row("store", r.per_op[int(OpKind::Store)]);
    row("load", r.per_op[int(OpKind::Load)]);
    row("all", r.all);
    const JoinResult& x = r.join;
    auto cb = [](const CmdBytes& c) { return std::to_string(c.cmds) + " cmds / " + std::to_string(c.bytes) + " B"; };
    os << "join " << join_mode_name(x.mode) << " (" << r.join_reason << "): " << x.records.cmds << " records; joined "
       << cb(x.joined) << "; untagged " << cb(x.untagged) << "; ties " << cb(x.ties) << "; straddles "
       << cb(x.straddles) << "; direction mismatch " << cb(x.direction_mismatch) << "; duplicates " << cb(x.duplicates)
       << "; non-data " << cb(x.non_data) << "; block rows skipped (nvme rows present) "
       << cb(x.passthrough_block_skipped) << "\n";
    const ProjectionRules& p = r.rules;
    os << "projection: engine " << p.engine << ", layout " << p.layout << ", lba " << p.lba_bytes << " B ("
       << p.lba_source << "), block_align " << p.block_align << " B, header " << p.header_bytes << " B, engine limit "
       << (p.engine_limit ? std::to_string(p.engine_limit) + " B (" + p.engine_limit_source + ")" : std::string("none"))
       << ", kernel limit "
       << (p.kernel_limit ? std::to_string(p.kernel_limit) + " B (" + p.kernel_limit_source + ")"
                          : std::string("none (passthrough)"))
       << "\n";
    if (r.semantic_format != "kvio.semantic/1" || r.commands_format != "kvio.events/1")
        os << "inputs: semantic " << r.semantic_format << ", commands " << r.commands_format << "\n";
    for (const auto& w : r.warnings) os << "warning: " << w << "\n";
    if (r.all.failed_ops) os << "note: " << r.all.failed_ops << " ops carry \"error\" and are not scored\n";
    if (r.tracer_dropped)
        os << "warning: the tracer dropped " << r.tracer_dropped << " events: measured counts are low\n";
    if (r.tracer_unmatched)
        os << "warning: the tracer saw " << r.tracer_unmatched
           << " completions without their issue: requests issued before "
              "the trace started, requests a device without FUA ends in its flush sequences without issuing them (two "
              "per "
              "O_SYNC write on a loop device), or commands missing from the events\n";
    if (!r.events_summary) os << "warning: the events file has no summary record: the trace may be truncated\n";
    if (r.buffered)
        os << "warning: posix --buffered: commands come from page-cache writeback, the per-op projection does not "
              "apply\n";
}

}  // namespace kvio::validate
