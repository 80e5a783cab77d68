#include "validate/events.h"

#include "common/devinfo.h"

namespace kvio::validate {

bool EventsReader::next(Command& c) {
    using F = EventField;
    EventRecord& r = rec_;
    while (rd_.next(r)) {
        const JsonSource& src = rd_.source();
        rd_.require(r, F::Type);
        if (r.type != "cmd") {
            if (r.type == "summary") { dropped_ = r.dropped; unmatched_ = r.unmatched_completes; saw_summary_ = true; }
            ++other_;
            continue;
        }
        for (F f : {F::Src, F::Dev, F::Op, F::Bytes, F::TsIssue}) rd_.require(r, f);
        c = Command{};
        if (r.src == "nvme") {
            rd_.require(r, F::Slba);
            rd_.require(r, F::Nlb);
            c.nvme = true;
            c.offset = r.nlb ? r.slba * (r.bytes / r.nlb) : 0;
        } else if (r.src == "block") {
            rd_.require(r, F::Sector);
            rd_.require(r, F::Rwbs);
            c.offset = r.sector * 512;
            c.passthrough_block = r.rwbs.find('N') != std::string_view::npos;
        } else {
            src.fail("src", "expected \"block\" or \"nvme\", got \"" + std::string(r.src) + "\"");
        }
        const std::string_view op = r.op;
        c.op = op == "read" ? CmdOp::Read : op == "write" ? CmdOp::Write : op == "flush" ? CmdOp::Flush
             : op == "discard" ? CmdOp::Discard : op == "other" ? CmdOp::Other
             : (src.fail("op", "expected read|write|flush|discard|other, got \"" + std::string(op) + "\""), CmdOp::Other);
        if (!have_dev_ || r.dev != last_dev_) {
            auto d = parse_dev_string(std::string(r.dev));
            if (!d) src.fail("dev", "expected \"MAJ:MIN\", got \"" + std::string(r.dev) + "\"");
            last_dev_ = r.dev;
            last_dev_t_ = kernel_dev(*d);
            have_dev_ = true;
        }
        c.dev = last_dev_t_;
        c.bytes = r.bytes;
        c.ts_issue = r.ts_issue;
        c.user_data = r.user_data;
        c.has_user_data = r.has_field(F::UserData);
        if (r.has_field(F::Key)) c.key = r.key;
        return true;
    }
    return false;
}

}  // namespace kvio::validate
