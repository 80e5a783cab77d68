#include "common/csv.h"

namespace kvio {

std::optional<std::string> split_csv_record(std::string_view line, std::vector<std::string>& out) {
    out.clear();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    while (true) {
        const std::string n = std::to_string(out.size() + 1);
        std::string field;
        if (i < line.size() && line[i] == '"') {
            ++i;
            while (true) {
                if (i >= line.size()) return "field " + n + ": unterminated quote";
                if (line[i] == '"') {
                    if (i + 1 < line.size() && line[i + 1] == '"') {
                        field += '"';
                        i += 2;
                        continue;
                    }
                    ++i;
                    break;
                }
                field += line[i++];
            }
            if (i < line.size() && line[i] != ',') return "field " + n + ": text after the closing quote";
        } else {
            size_t end = line.find(',', i);
            if (end == std::string_view::npos) end = line.size();
            field.assign(line.substr(i, end - i));
            if (field.find('"') != std::string::npos) return "field " + n + ": a quote inside a bare field";
            if (field.find('\r') != std::string::npos) return "field " + n + ": a carriage return inside a field";
            i = end;
        }
        out.push_back(std::move(field));
        if (i >= line.size()) return std::nullopt;
        ++i;  // the ','
    }
}

std::string csv_field(std::string_view v) {
    if (v.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(v);
    std::string s = "\"";
    for (char c : v) {
        if (c == '"') s += '"';
        s += c;
    }
    return s + '"';
}

}  // namespace kvio
