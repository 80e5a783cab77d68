#include "userspace/simulate_options.h"

#include <ostream>

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
        CLI::Option* o = std::visit(
            Overload{
                [&](bool SimConfig::*m) { return sub->add_flag(f.name, c.*m, help); },
                [&](std::optional<int64_t> SimConfig::*m) {
                    return sub->add_option_function<int64_t>(f.name, [&c, m](const int64_t& v) { c.*m = v; }, help);
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

std::vector<ArgparseOption> simulate_argparse_options() {
    std::vector<ArgparseOption> v;
    for (const auto& f : serving::flag_table()) {
        const auto ch = serving::flag_choices(f);
        v.push_back({f.name, f.type, std::vector<std::string>(ch.begin(), ch.end())});
    }
    return v;
}

void finish_simulate_options(SimConfig& c, std::ostream& warn) {
    std::vector<std::string> warnings;
    const auto errors = serving::validate_config(c, warnings);
    for (const auto& w : warnings) warn << "kvio simulate: warning: " << w << "\n";
    if (!errors.empty()) {
        std::string msg = "invalid arguments:";
        for (const auto& e : errors) msg += "\n  " + e;
        throw Error(msg);
    }
    if (!c.config.empty()) serving::load_yaml_config(c.config, c);
    (void)serving::resolve_model(c);
}

}  // namespace kvio::cli
