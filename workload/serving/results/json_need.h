// Reading fields of a results document with errors that name the field: "<where>: field 'a.b': missing".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvio::serving {

/// Throws kvio::Error "<where>: field '<field>': <what>".
[[noreturn]] void bad_field(const std::string& where, const std::string& field, const std::string& what);
/// j[key]; throws (bad_field) when j is not an object or has no `key`. `path` is j's own dotted path ("" = top).
const nlohmann::ordered_json& need(const nlohmann::ordered_json& j, const char* key, const std::string& where,
                                   const std::string& path);
/// j[key] when j is an object holding `key`, else a null: for readers that judge a document's shape themselves and
/// must not throw on one of the wrong shape (an array, a null where an object belongs).
const nlohmann::ordered_json& field_or_null(const nlohmann::ordered_json& j, const char* key);
/// j[key] as a number.
double need_number(const nlohmann::ordered_json& j, const char* key, const std::string& where, const std::string& path);
/// j[key] as a non-negative integer.
uint64_t need_count(const nlohmann::ordered_json& j, const char* key, const std::string& where,
                    const std::string& path);
/// The numbers of the array j[key] appended to `out`.
void append_numbers(std::vector<double>& out, const nlohmann::ordered_json& j, const char* key,
                    const std::string& where, const std::string& path);

}  // namespace kvio::serving
