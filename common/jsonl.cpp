#include "common/jsonl.h"

#include <cstring>
#include <filesystem>

namespace kvio {

void JsonSource::fail(const std::string& field, const std::string& msg) const {
    throw Error(where() + ": field '" + field + "': " + msg);
}

JsonlReader::JsonlReader(const std::string& path) : in_(path), src_{path, 0} {
    if (!in_) throw Error(path + ": cannot open: " + std::strerror(errno));
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw Error(path + ": cannot open: " + std::strerror(EISDIR));
}

bool JsonlReader::next(json& out) {
    while (std::getline(in_, buf_)) {
        ++src_.line;
        if (buf_.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            out = json::parse(buf_);
        } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double (1e400)
            throw Error(src_.where() + ": not valid JSON (" + e.what() + ")");
        }
        if (!out.is_object()) throw Error(src_.where() + ": expected a JSON object");
        return true;
    }
    return false;
}

json read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
    try {
        return json::parse(in);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double (1e400)
        throw Error(path + ": not valid JSON (" + e.what() + ")");
    }
}

void write_json_file(const std::string& path, const json& j) {
    std::ofstream out(path);
    if (!out) throw Error(path + ": cannot write: " + std::strerror(errno));
    out << j.dump(2) << "\n";
    if (!out) throw Error(path + ": write failed");
}

static const json& require(const json& obj, const char* field, const JsonSource& src) {
    auto it = obj.find(field);
    if (it == obj.end()) src.fail(field, "missing");
    return *it;
}

uint64_t get_u64(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return uint64_t(v.get<int64_t>());
    src.fail(field, "expected a non-negative integer, got " + v.dump());
}

int64_t get_i64(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_number_integer()) return v.get<int64_t>();
    src.fail(field, "expected an integer, got " + v.dump());
}

double get_double(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_number()) return v.get<double>();
    src.fail(field, "expected a number, got " + v.dump());
}

std::string get_string(const json& obj, const char* field, const JsonSource& src) {
    const json& v = require(obj, field, src);
    if (v.is_string()) return v.get<std::string>();
    src.fail(field, "expected a string, got " + v.dump());
}

uint64_t get_u64_or(const json& obj, const char* field, uint64_t dflt, const JsonSource& src) {
    return obj.contains(field) ? get_u64(obj, field, src) : dflt;
}

std::string get_string_or(const json& obj, const char* field, const std::string& dflt, const JsonSource& src) {
    return obj.contains(field) ? get_string(obj, field, src) : dflt;
}

}  // namespace kvio
