// How faithfully a replayed trace reproduces the original: the numbers `kvio distill --verify` prints.
#pragma once
#include <nlohmann/json.hpp>

#include "distiller/profile.h"

namespace kvio::distiller {

/// Total variation distance between two distributions: ½ Σ |p(v) − q(v)| over all values, in [0,1].
/// 0 when both are empty; 1 when exactly one is empty.
double tv_distance(const Dist& a, const Dist& b);

/// Fidelity of `replay` against `orig`. Distances in [0,1]; errors in percentage points; ratios replay/orig.
struct Fidelity {
    double size_tv_read = 0;   ///< TV of read command sizes
    double size_tv_write = 0;  ///< TV of write command sizes
    double rwmix_err = 0;      ///< |reads/(reads+writes)| difference, points (by command count)
    double qd_tv = 0;          ///< TV of the time-weighted in-flight distributions (Profile::qd_time)
    double seq_err = 0;        ///< sequential share difference, points (both directions pooled)
    double d2c_p50_ratio = 0;  ///< replay D2C p50 / original (0 when the original has none)
    double d2c_p99_ratio = 0;
    double rwmix_orig = 0, rwmix_replay = 0, seq_orig = 0, seq_replay = 0;  ///< the compared values, percent
    Dist qd_orig, qd_replay;  ///< the compared queue-depth distributions (depth -> ns)
};

/// Compares two profiles (typically the same device shape on two devices).
Fidelity score(const Profile& orig, const Profile& replay);
/// {"size_tv":{"read","write"},"rwmix_err_points","qd_tv","seq_err_points","d2c_p50_ratio","d2c_p99_ratio",...}
nlohmann::json to_json(const Fidelity& f);

}  // namespace kvio::distiller
