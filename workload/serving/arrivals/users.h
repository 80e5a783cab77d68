// Users of the serving simulation (docs/mlperf-benchmark.md, "Users and the request stream", benchmark
// workload.py:UserSimulator): template, QoS class and per-user context / generation / think time, fixed for the run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/serving/config.h"
#include "workload/serving/pyrandom.h"

namespace kvio::serving {

enum class QosClass { Interactive, Responsive, Batch };
/// "interactive" | "responsive" | "batch".
const char* qos_name(QosClass q);
/// 3 | 2 | 1 (the benchmark's literal priorities; higher is served first).
int qos_priority(QosClass q);

struct UserProfile {
    std::string user_id;    ///< "user_%04d"
    std::string user_type;  ///< template name: chatbot | coding | document
    QosClass qos = QosClass::Batch;
    double qos_draw = 0;         ///< the random() that chose the class (the spec's check column)
    int64_t context_length = 0;  ///< tokens
    int64_t generation_length = 0;
    double think_time = 0;  ///< s
};

/// generate_mixed_users(n): for each user, in this call order: choice(templates), random() (< p_interactive:
/// interactive; < responsive_threshold: responsive; else batch), randint(context), randint(generation),
/// uniform(think_time). Uses `rng` (the benchmark's global random, seeded with --seed).
std::vector<UserProfile> generate_users(PyRandom& rng, int64_t n, const YamlSettings& y);

/// QoS class of a trace/dataset request: one random() against the same thresholds.
QosClass draw_qos(PyRandom& rng, const YamlSettings& y);

/// The results' user table: [{user_id, user_type, qos, qos_draw, context_length, generation_length, think_time}].
nlohmann::ordered_json users_to_json(const std::vector<UserProfile>& users);

/// The benchmark's banner summary of the user table (counts per template and QoS, context/generation/think
/// ranges and means, offered load Σ 1/think_time req/s).
std::string users_summary(const std::vector<UserProfile>& users);

}  // namespace kvio::serving
