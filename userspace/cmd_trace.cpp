#include "userspace/commands.h"
#include "common/error.h"

namespace kvio::cli {
void add_trace_command(CLI::App& app) {
    auto* sub = app.add_subcommand("trace", "Trace the storage latency stack (being built)");
    sub->callback([] { throw kvio::Error("trace: not built yet"); });
}
}  // namespace kvio::cli
