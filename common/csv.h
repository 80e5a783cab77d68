// RFC 4180 CSV fields, strictly: one record per line (no line breaks inside quotes), fields separated by ',',
// a field either bare (no '"' in it) or wholly quoted with '""' for a quote. Used by the BurstGPT trace reader and
// the simulate results' CSV export.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvio {

/// Splits one CSV record (without its line break; a trailing '\r' is dropped) into `out`. Returns an error
/// sentence ("field 3: a quote inside a bare field", "field 2: unterminated quote", "field 4: text after the
/// closing quote") or nullopt when the record is well formed.
std::optional<std::string> split_csv_record(std::string_view line, std::vector<std::string>& out);

/// `v` as one CSV field: quoted (quotes doubled) when it holds ',', '"', '\r' or '\n', else as is.
std::string csv_field(std::string_view v);

}  // namespace kvio
