#include "diagnose/diagnose.h"

#include <sstream>

#include "diagnose/rules.h"

namespace kvio::diagnose {

using nlohmann::json;

std::vector<Finding> diagnose(const Inputs& in) {
    std::vector<Finding> out;
    CommandFactsMap facts;
    command_rules(in, facts, out);
    split_rule(in.trace, facts, out);
    const std::vector<SyscallRec> sys = in.events.empty() ? std::vector<SyscallRec>() : load_syscalls(in.events, {});
    page_cache_rule(in.trace, sys, out);
    fsync_rule(in.trace, out);
    small_write_rule(in.trace, sys, out);
    unaligned_rule(in.trace, sys, facts, out);
    queue_rules(in.trace, out);
    return out;
}

json to_json(const std::vector<Finding>& findings) {
    json a = json::array();
    for (const auto& f : findings)
        a.push_back({{"id", f.id},
                     {"device", f.device},
                     {"op", f.op},
                     {"summary", f.summary},
                     {"action", f.action},
                     {"figures", f.figures}});
    return {{"schema", "kvio.diagnosis/1"}, {"findings", a}};
}

std::string to_text(const std::vector<Finding>& findings) {
    std::ostringstream o;
    o << "== diagnosis: " << findings.size() << (findings.size() == 1 ? " finding\n" : " findings\n");
    for (const auto& f : findings) {
        o << "[" << f.id << "]";
        if (!f.device.empty()) o << " " << f.device;
        if (!f.op.empty()) o << " " << f.op;
        o << ": " << f.summary << "\n    -> " << f.action << "\n";
    }
    return o.str();
}

}  // namespace kvio::diagnose
