#include "workload/serving/arrivals/users.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/error.h"

namespace kvio::serving {

const char* qos_name(QosClass q) {
    switch (q) {
        case QosClass::Interactive:
            return "interactive";
        case QosClass::Responsive:
            return "responsive";
        case QosClass::Batch:
            return "batch";
    }
    return "batch";
}

int qos_priority(QosClass q) {
    switch (q) {
        case QosClass::Interactive:
            return 3;
        case QosClass::Responsive:
            return 2;
        case QosClass::Batch:
            return 1;
    }
    return 1;
}

namespace {
QosClass qos_of(double r, const YamlSettings& y) {
    if (r < y.interactive_probability) return QosClass::Interactive;
    if (r < y.responsive_threshold) return QosClass::Responsive;
    return QosClass::Batch;
}
}  // namespace

QosClass draw_qos(PyRandom& rng, const YamlSettings& y) { return qos_of(rng.random(), y); }

std::vector<UserProfile> generate_users(PyRandom& rng, int64_t n, const YamlSettings& y) {
    if (y.user_templates.empty()) throw Error("user_templates: no templates to draw users from");
    std::vector<UserProfile> users;
    users.reserve(size_t(std::max<int64_t>(n, 0)));
    for (int64_t i = 0; i < n; ++i) {
        UserProfile u;
        char id[32];
        std::snprintf(id, sizeof id, "user_%04lld", static_cast<long long>(i));
        u.user_id = id;
        const auto& [name, t] = y.user_templates[rng.choice_index(y.user_templates.size())];
        u.user_type = name;
        u.qos_draw = rng.random();
        u.qos = qos_of(u.qos_draw, y);
        u.context_length = rng.randint(t.context_range.lo, t.context_range.hi);
        u.generation_length = rng.randint(t.generation_range.lo, t.generation_range.hi);
        u.think_time = rng.uniform(t.think_time_range.lo, t.think_time_range.hi);
        users.push_back(std::move(u));
    }
    return users;
}

nlohmann::ordered_json users_to_json(const std::vector<UserProfile>& users) {
    auto a = nlohmann::ordered_json::array();
    for (const auto& u : users)
        a.push_back({{"user_id", u.user_id},
                     {"user_type", u.user_type},
                     {"qos", qos_name(u.qos)},
                     {"qos_draw", u.qos_draw},
                     {"context_length", u.context_length},
                     {"generation_length", u.generation_length},
                     {"think_time", u.think_time}});
    return a;
}

std::string users_summary(const std::vector<UserProfile>& users) {
    std::ostringstream o;
    char line[256];
    std::snprintf(line, sizeof line, "Users: %zu\n", users.size());
    o << line;
    if (users.empty()) return o.str();
    struct Agg {
        size_t n = 0;
        int64_t ctx_lo = INT64_MAX, ctx_hi = 0, gen_lo = INT64_MAX, gen_hi = 0;
        double ctx_sum = 0, gen_sum = 0, think_sum = 0, rate = 0;
    };
    std::map<std::string, Agg> by_type;
    std::map<int, std::pair<const char*, size_t>, std::greater<>> by_qos;
    Agg all;
    auto add = [](Agg& a, const UserProfile& u) {
        ++a.n;
        a.ctx_lo = std::min(a.ctx_lo, u.context_length);
        a.ctx_hi = std::max(a.ctx_hi, u.context_length);
        a.gen_lo = std::min(a.gen_lo, u.generation_length);
        a.gen_hi = std::max(a.gen_hi, u.generation_length);
        a.ctx_sum += double(u.context_length);
        a.gen_sum += double(u.generation_length);
        a.think_sum += u.think_time;
        if (u.think_time > 0) a.rate += 1.0 / u.think_time;
    };
    for (const auto& u : users) {
        add(by_type[u.user_type], u);
        add(all, u);
        auto& q = by_qos[qos_priority(u.qos)];
        q.first = qos_name(u.qos);
        ++q.second;
    }
    auto row = [&](const std::string& label, const Agg& a) {
        std::snprintf(line, sizeof line,
                      "  %-12s %5zu users  context %lld-%lld (mean %.0f) tokens  generation %lld-%lld (mean %.0f)  "
                      "think mean %.3f s  offered %.2f req/s\n",
                      label.c_str(), a.n, static_cast<long long>(a.ctx_lo), static_cast<long long>(a.ctx_hi),
                      a.ctx_sum / double(a.n), static_cast<long long>(a.gen_lo), static_cast<long long>(a.gen_hi),
                      a.gen_sum / double(a.n), a.think_sum / double(a.n), a.rate);
        o << line;
    };
    for (const auto& [name, a] : by_type) row(name, a);
    row("all", all);
    o << "  QoS:";
    for (const auto& [prio, q] : by_qos) {
        std::snprintf(line, sizeof line, " %s %zu (%.1f%%)", q.first, q.second,
                      100.0 * double(q.second) / double(users.size()));
        o << line;
    }
    std::snprintf(line, sizeof line, "\n  Offered load (open loop, sum of 1/think_time): %.2f req/s\n", all.rate);
    o << line;
    return o.str();
}

}  // namespace kvio::serving
