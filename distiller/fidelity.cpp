#include "distiller/fidelity.h"

#include <cmath>
#include <set>

namespace kvio::distiller {

double tv_distance(const Dist& a, const Dist& b) {
    uint64_t na = dist_total(a), nb = dist_total(b);
    if (!na && !nb) return 0.0;
    if (!na || !nb) return 1.0;
    std::set<uint64_t> keys;
    for (const auto& [v, c] : a) keys.insert(v);
    for (const auto& [v, c] : b) keys.insert(v);
    double s = 0;
    for (uint64_t k : keys) {
        auto ia = a.find(k), ib = b.find(k);
        double pa = ia == a.end() ? 0.0 : double(ia->second) / double(na);
        double pb = ib == b.end() ? 0.0 : double(ib->second) / double(nb);
        s += std::fabs(pa - pb);
    }
    return 0.5 * s;
}

static double seq_pct(const Profile& p) {
    uint64_t scored = p.read.seq_scored + p.write.seq_scored;
    return scored ? 100.0 * double(p.read.seq_cmds + p.write.seq_cmds) / double(scored) : 0.0;
}
static double rwmix_pct(const Profile& p) { return p.cmds() ? 100.0 * double(p.read.cmds) / double(p.cmds()) : 0.0; }

Fidelity score(const Profile& o, const Profile& r) {
    Fidelity f;
    f.size_tv_read = tv_distance(o.read.sizes, r.read.sizes);
    f.size_tv_write = tv_distance(o.write.sizes, r.write.sizes);
    f.rwmix_orig = rwmix_pct(o);
    f.rwmix_replay = rwmix_pct(r);
    f.rwmix_err = std::fabs(f.rwmix_orig - f.rwmix_replay);
    f.qd_tv = tv_distance(o.qd_time, r.qd_time);
    f.qd_orig = o.qd_time;
    f.qd_replay = r.qd_time;
    f.seq_orig = seq_pct(o);
    f.seq_replay = seq_pct(r);
    f.seq_err = std::fabs(f.seq_orig - f.seq_replay);
    double o50 = o.d2c_quantile(0.5), o99 = o.d2c_quantile(0.99);
    f.d2c_p50_ratio = o50 > 0 ? r.d2c_quantile(0.5) / o50 : 0.0;
    f.d2c_p99_ratio = o99 > 0 ? r.d2c_quantile(0.99) / o99 : 0.0;
    return f;
}

// {"depth": share} with shares rounded to 1e-4.
static nlohmann::json shares(const Dist& d) {
    nlohmann::json j = nlohmann::json::object();
    double n = double(dist_total(d));
    for (const auto& [v, c] : d) j[std::to_string(v)] = std::round(1e4 * double(c) / n) / 1e4;
    return j;
}

nlohmann::json to_json(const Fidelity& f) {
    return {{"qd_share", {{"orig", shares(f.qd_orig)}, {"replay", shares(f.qd_replay)}}},
            {"size_tv", {{"read", f.size_tv_read}, {"write", f.size_tv_write}}},
            {"rwmixread", {{"orig", f.rwmix_orig}, {"replay", f.rwmix_replay}}},
            {"rwmix_err_points", f.rwmix_err},
            {"qd_tv", f.qd_tv},
            {"seq_share", {{"orig", f.seq_orig}, {"replay", f.seq_replay}}},
            {"seq_err_points", f.seq_err},
            {"d2c_p50_ratio", f.d2c_p50_ratio},
            {"d2c_p99_ratio", f.d2c_p99_ratio}};
}

}  // namespace kvio::distiller
