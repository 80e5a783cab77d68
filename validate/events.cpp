#include "validate/events.h"

namespace kvio::validate {

bool EventsReader::next(Command& c) {
    EventRecord& r = rec_;
    while (rd_.next_checked(r)) {
        if (r.kind != EventType::Cmd) {
            if (r.kind == EventType::Summary) {
                dropped_ = r.dropped;
                unmatched_ = r.unmatched_completes;
                saw_summary_ = true;
            }
            ++other_;
            continue;
        }
        c = Command{};
        c.nvme = r.nvme;
        c.offset = r.offset;
        c.passthrough_block = !r.nvme && r.rwbs.find('N') != std::string_view::npos;
        c.op = r.io;
        c.dev = r.kdev;
        c.bytes = r.bytes;
        c.ts_issue = r.ts_issue;
        c.user_data = r.user_data;
        c.has_user_data = r.has_field(EventField::UserData);
        if (r.has_field(EventField::Key)) c.key = r.key;
        return true;
    }
    return false;
}

}  // namespace kvio::validate
