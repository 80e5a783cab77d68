// kvio: one binary, one subcommand per stage (trace, geometry, gen, validate, distill, replay, run).
#include <cstdio>

#include "common/error.h"
#include "userspace/commands.h"

// Subcommands in the order `kvio --help` lists them. Each stage adds its line when it lands.
static void (*const kCommands[])(CLI::App&) = {
    kvio::cli::add_trace_command,
    kvio::cli::add_validate_command,
    kvio::cli::add_distill_command,
    kvio::cli::add_geometry_command,
    kvio::cli::add_gen_command,
    kvio::cli::add_run_command,
    kvio::cli::add_simulate_command,
    kvio::cli::add_replay_command,
    kvio::cli::add_compare_command,
    kvio::cli::add_dump_command,
};

int main(int argc, char** argv) {
    CLI::App app{
        "kvio — storage I/O of LLM KV-cache offload, made visible, checkable and reproducible without a GPU.\n"
        "Run `kvio <command> --help` for each command's options."};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "Show help for every command");
    for (auto add : kCommands) add(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const kvio::Error& e) {
        std::fprintf(stderr, "kvio: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvio: internal error: %s\n", e.what());
        return 2;
    }
    return 0;
}
