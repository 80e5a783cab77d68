#include "cli/simulate_options.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "common/error.h"

namespace kvio::cli {

namespace {
using serving::SimConfig;

template <class... F>
struct Overload : F... {
    using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;
}  // namespace

void add_simulate_options(CLI::App* sub, SimConfig& c) {
    for (const auto& f : serving::flag_table()) {
        const std::string help = std::string(f.help) + (f.kvio_only ? " [kvio]" : "");
        CLI::Option* o = std::visit(Overload{
                                        [&](bool SimConfig::*m) { return sub->add_flag(f.name, c.*m, help); },
                                        [&](std::optional<int64_t> SimConfig::*m) {
                                            return sub->add_option_function<int64_t>(
                                                f.name, [&c, m](const int64_t& v) { c.*m = v; }, help);
                                        },
                                        [&](auto m) { return sub->add_option(f.name, c.*m, help); },
                                    },
                                    f.target);
        // argparse keeps the last of a repeated option; CLI11's default refuses the repeat.
        o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        if (std::string(f.type) != "flag") o->default_str(f.default_text);
        if (f.choices) {
            const auto ch = serving::flag_choices(f);
            o->check(CLI::IsMember(std::vector<std::string>(ch.begin(), ch.end())));
        }
    }
}

void warn_repeated_options(const CLI::App& sub, std::ostream& warn) {
    for (const CLI::Option* o : sub.get_options()) {
        if (o->count() < 2) continue;
        const auto& given = o->results();
        warn << "kvio simulate: warning: " << o->get_name() << " given " << o->count() << " times: the last";
        if (o->get_expected_min() > 0 && !given.empty()) warn << " (" << given.back() << ")";
        warn << " is used\n";
    }
}

std::vector<ArgparseOption> simulate_argparse_options() {
    std::vector<ArgparseOption> v;
    for (const auto& f : serving::flag_table()) {
        const auto ch = serving::flag_choices(f);
        // kv-cache.py's flags take argparse's abbreviations, as its scripts may use them; kvio's own only their name.
        v.push_back({f.name, f.type, std::vector<std::string>(ch.begin(), ch.end()), f.kvio_only});
    }
    // --mlperf-closed and its options (cli/cmd_simulate.cpp): kvio's, around the benchmark's flags.
    v.push_back({"--mlperf-closed", "flag", {}, true});
    v.push_back({"--mlperf-option", "choice", {"1", "2", "3", "all"}, true});
    v.push_back({"--results-dir", "str", {}, true});
    v.push_back({"--trial-seconds", "int", {}, true});
    v.push_back({"--pause-seconds", "float", {}, true});
    v.push_back({"--test-cpu-mem-gb", "float", {}, true});
    v.push_back({"--test-memory-cache", "flag", {}, true});
    v.push_back({"--system-name", "str", {}, true});
    v.push_back({"--audit", "flag", {}, true});  // kvio simulate --audit (cli/cmd_simulate.cpp)
    return v;
}

void finish_simulate_options(SimConfig& c, std::ostream& warn) {
    std::vector<std::string> warnings;
    const auto errors = serving::validate_config(c, warnings);
    for (const auto& w : warnings) warn << "kvio simulate: warning: " << w << "\n";
    if (!errors.empty()) {
        std::string msg = "invalid arguments:";
        for (const auto& e : errors) msg += "\n  " + e;
        // The benchmark's own flags fail as its validate_args does (exit 1); kvio's flags alone (clients, MPI,
        // the remote tier) are usage errors like every other kvio command's (exit 2, with the --help hint).
        const bool kvio_only = std::all_of(errors.begin(), errors.end(), [](const std::string& e) {
            return e.rfind("--num-clients", 0) == 0 || e.rfind("--mpi", 0) == 0 || e.rfind("--remote-", 0) == 0;
        });
        if (kvio_only) throw UsageError(msg);
        throw Error(msg);
    }
    if (!c.config.empty()) serving::load_yaml_config(c.config, c);
    (void)serving::resolve_model(c);
}

void check_simulate_args(const std::vector<std::string>& args) {
    const std::string prog = "kvio simulate";
    auto first_line_error = [&](const std::string& message) {
        // argparse's two lines, the usage line dropped: the caller's error names the context.
        throw Error(prog + ": error: " + message);
    };
    std::vector<std::string> rest;
    try {
        rest = argparse_check(args, simulate_argparse_options());
    } catch (const ArgparseError& e) {
        first_line_error(e.what());
    }
    CLI::App app{prog};
    SimConfig c;
    add_simulate_options(&app, c);
    std::reverse(rest.begin(), rest.end());  // CLI11 takes a vector last argument first
    try {
        app.parse(rest);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0)
            first_line_error("--help is not a simulation argument (kvio simulate --help lists them)");
        first_line_error(e.what());
    }
    std::ostringstream dropped;
    finish_simulate_options(c, dropped);
}

}  // namespace kvio::cli
