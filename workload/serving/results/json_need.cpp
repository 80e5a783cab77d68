#include "workload/serving/results/json_need.h"

#include "common/error.h"

namespace kvio::serving {

using Json = nlohmann::ordered_json;

void bad_field(const std::string& where, const std::string& field, const std::string& what) {
    throw Error(where + ": field '" + field + "': " + what);
}

const Json& need(const Json& j, const char* key, const std::string& where, const std::string& path) {
    if (!j.is_object()) bad_field(where, path, "is not an object");
    auto it = j.find(key);
    if (it == j.end()) bad_field(where, path.empty() ? key : path + "." + key, "missing");
    return *it;
}

const Json& field_or_null(const Json& j, const char* key) {
    static const Json null_json;
    if (!j.is_object()) return null_json;
    auto it = j.find(key);
    return it == j.end() ? null_json : *it;
}

double need_number(const Json& j, const char* key, const std::string& where, const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_number()) bad_field(where, path + "." + key, "not a number");
    return v.get<double>();
}

uint64_t need_count(const Json& j, const char* key, const std::string& where, const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        bad_field(where, path + "." + key, "not a non-negative integer");
    return v.get<uint64_t>();
}

void append_numbers(std::vector<double>& out, const Json& j, const char* key, const std::string& where,
                    const std::string& path) {
    const Json& v = need(j, key, where, path);
    if (!v.is_array()) bad_field(where, path + "." + key, "not an array");
    for (const auto& x : v) {
        if (!x.is_number()) bad_field(where, path + "." + key, "holds a non-number");
        out.push_back(x.get<double>());
    }
}

}  // namespace kvio::serving
