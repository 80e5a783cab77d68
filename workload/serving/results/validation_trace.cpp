#include "workload/serving/results/validation_trace.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace kvio::serving {

ValidationTrace load_validation_trace(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        throw Error("--validation-trace " + path +
                    ": cannot open (the benchmark would silently use built-in "
                    "statistics; kvio refuses)");
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(path + ": not JSON: " + e.what());
    }
    if (!doc.is_array()) throw Error(path + ": expected a JSON list of trace entries");
    ValidationTrace t;
    t.path = path;
    uint64_t reads_with_latency = 0, writes_with_latency = 0;
    double read_ms = 0, write_ms = 0;
    for (size_t i = 0; i < doc.size(); ++i) {
        const auto& e = doc[i];
        const std::string where = path + ": entry " + std::to_string(i);
        if (!e.is_object()) throw Error(where + ": expected an object");
        if (!e.contains("cache_hit") || !e["cache_hit"].is_boolean())
            throw Error(where + ": field 'cache_hit': expected true or false");
        auto number = [&](const char* field, double& out) {
            if (!e.contains(field) || e[field].is_null()) return false;
            if (!e[field].is_number() || e[field].get<double>() < 0)
                throw Error(where + ": field '" + field + "': expected a number >= 0");
            out = e[field].get<double>();
            return true;
        };
        ++t.entries;
        t.cache_hits += e["cache_hit"].get<bool>();
        double v = 0;
        if (number("read_bytes", v)) t.read_bytes += uint64_t(v);
        if (number("write_bytes", v)) t.write_bytes += uint64_t(v);
        if (number("read_latency_ms", v)) read_ms += v, ++reads_with_latency;
        if (number("write_latency_ms", v)) write_ms += v, ++writes_with_latency;
    }
    if (t.entries == 0) throw Error(path + ": the trace has no entries");
    t.cache_hit_rate = double(t.cache_hits) / double(t.entries);
    t.mean_read_latency_ms = reads_with_latency ? read_ms / double(reads_with_latency) : 0;
    t.mean_write_latency_ms = writes_with_latency ? write_ms / double(writes_with_latency) : 0;
    return t;
}

nlohmann::ordered_json compare_with_trace(const ValidationTrace& t, double bench) {
    const double err = t.cache_hit_rate > 0 ? std::fabs(bench - t.cache_hit_rate) / t.cache_hit_rate * 100.0
                                            : (bench == 0 ? 0.0 : 100.0);
    nlohmann::ordered_json v;
    v["passed"] = err <= 5.0;
    v["avg_error_pct"] = err;
    v["comparison"]["cache_hit_rate"] = {
        {"benchmark", bench}, {"trace", t.cache_hit_rate}, {"error_pct", err}, {"within_5pct", err <= 5.0}};
    v["trace_stats"] = {{"source", t.path},
                        {"entries", t.entries},
                        {"cache_hits", t.cache_hits},
                        {"cache_hit_rate", t.cache_hit_rate},
                        {"read_bytes", t.read_bytes},
                        {"write_bytes", t.write_bytes},
                        {"mean_read_latency_ms", t.mean_read_latency_ms},
                        {"mean_write_latency_ms", t.mean_write_latency_ms}};
    return v;
}

}  // namespace kvio::serving
