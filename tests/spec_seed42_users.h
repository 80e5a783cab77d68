// The MLPerf KV benchmark's user table for --seed 42, 10 users (docs/mlperf-benchmark.md, "Users and the request
// stream"): template, QoS draw (6 decimals), QoS class, context and generation tokens, think time (s, 6 decimals). Unit
// and e2e tests check kvio's users against it.
#pragma once
#include <cstdint>

namespace kvio::test {

struct SpecUserRow {
    const char* type;
    double qos_draw;
    const char* qos;
    int64_t ctx, gen;
    double think;
};

inline constexpr SpecUserRow kSeed42Users[10] = {
    {"document", 0.111331, "interactive", 16245, 481, 0.593870},
    {"chatbot", 0.736471, "batch", 3283, 189, 0.134776},
    {"coding", 0.031783, "interactive", 7166, 211, 0.386129},
    {"document", 0.026536, "interactive", 7353, 758, 0.803424},
    {"coding", 0.589266, "batch", 4308, 488, 0.844655},
    {"document", 0.422614, "responsive", 8648, 359, 0.558377},
    {"coding", 0.102210, "interactive", 16545, 149, 0.487184},
    {"coding", 0.603726, "batch", 5519, 473, 0.567540},
    {"chatbot", 0.973116, "batch", 2062, 70, 0.320816},
    {"document", 0.618520, "batch", 10021, 791, 0.530746},
};

}  // namespace kvio::test
