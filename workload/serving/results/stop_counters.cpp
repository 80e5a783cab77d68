#include "workload/serving/results/stop_counters.h"

namespace kvio::serving {

namespace {

using S = StopCounters;

const StopCounterField kStopFields[] = {
    {"requests_issued", &S::requests_issued},
    {"dropped_queued_at_stop", &S::dropped_queued_at_stop},
    {"dropped_popped_after_stop", &S::dropped_popped_after_stop},
    {"cut_in_generation", &S::cut_in_generation},
    {"cut_in_storage", &S::cut_in_storage},
    {"beyond_max_requests", &S::beyond_max_requests},
};

}  // namespace

std::span<const StopCounterField> stop_counter_fields() { return kStopFields; }

nlohmann::ordered_json stop_json(const StopCounters& s, const std::string& reason, int signal, double stop_at_s,
                                 double drain_s) {
    nlohmann::ordered_json j = {
        {"reason", reason}, {"signal", signal}, {"stop_requested_at_s", stop_at_s}, {"drain_s", drain_s}};
    for (const auto& f : kStopFields) j[f.key] = (s.*f.member).load();
    return j;
}

void add_stop_counts(nlohmann::ordered_json& sum, const nlohmann::ordered_json& client) {
    for (const auto& f : kStopFields) {
        auto it = client.find(f.key);
        if (it != client.end() && it->is_number_unsigned())
            sum[f.key] = sum.value(f.key, uint64_t(0)) + it->get<uint64_t>();
    }
}

}  // namespace kvio::serving
