#include "common/trace_id.h"

#include "common/events_reader.h"
#include "common/jsonl.h"

namespace kvio {

void check_same_trace(const std::string& events_path, std::string_view events_id, const std::string& summary_path,
                      const nlohmann::json& summary) {
    const std::string id =
        summary.is_object() ? get_string_or(summary, "trace_id", "", JsonSource{summary_path, 0}) : std::string();
    check_same_trace_id(events_path, events_id, summary_path, id);
}

}  // namespace kvio
