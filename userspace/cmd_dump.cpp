// `kvio dump`: a binary capture (kvio.events.bin/1) as the kvio.events/1 JSONL the tracer would have written.
#include <memory>

#include "userspace/commands.h"
#include "userspace/events_dump.h"

namespace kvio::cli {

void add_dump_command(CLI::App& app) {
    struct Opts {
        std::string in, out;
    };
    auto o = std::make_shared<Opts>();
    auto* sub = app.add_subcommand(
        "dump",
        "Print a binary events capture (`kvio trace --events F --events-format bin`, kvio.events.bin/1) as\n"
        "kvio.events/1 JSONL: the same records, byte for byte, that `--events-format jsonl` writes. Device names\n"
        "and LBA sizes come from the capture, so it can be dumped on another machine.\n"
        "Example: kvio dump trace.kvb -o trace.jsonl");
    sub->add_option("file", o->in, "The capture (kvio.events.bin/1)")->required();
    sub->add_option("-o,--output", o->out, "Write here instead of stdout (- is stdout)");
    sub->callback([o] { trace::dump_capture(o->in, o->out); });
}

}  // namespace kvio::cli
