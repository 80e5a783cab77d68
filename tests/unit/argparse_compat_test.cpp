// kv-cache.py's argparse conventions in front of CLI11 (cli/argparse_compat.h): unique-prefix abbreviations
// and argparse's error messages, checked against the words Python 3.11's argparse prints for the same input.
#include <gtest/gtest.h>

#include "cli/argparse_compat.h"
#include "cli/simulate_options.h"

using kvio::cli::argparse_check;
using kvio::cli::ArgparseError;
using kvio::cli::simulate_argparse_options;

namespace {

std::string error_of(const std::vector<std::string>& args) {
    try {
        argparse_check(args, simulate_argparse_options());
    } catch (const ArgparseError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(ArgparseCompat, UniquePrefixesExpandToTheFullName) {
    auto out = argparse_check({"--num-u", "5", "--dur=3", "--gen", "none", "--seed", "-7", "--quiet"},
                              simulate_argparse_options());
    EXPECT_EQ(out, (std::vector<std::string>{"--num-users=5", "--duration=3", "--generation-mode=none", "--seed=-7",
                                             "--quiet"}));
    // An exact name wins over longer names it prefixes; numbers lose what Python's int() ignores.
    out = argparse_check({"--model", "tiny-1b", "--num-users", " 1_000 "}, simulate_argparse_options());
    EXPECT_EQ(out, (std::vector<std::string>{"--model=tiny-1b", "--num-users=1000"}));
}

TEST(ArgparseCompat, ErrorsAreArgparses) {
    EXPECT_EQ(error_of({"--num", "3"}), "ambiguous option: --num could match --num-users, --num-gpus, --num-clients");
    EXPECT_EQ(error_of({"--num-users", "x"}), "argument --num-users: invalid int value: 'x'");
    EXPECT_EQ(error_of({"--gpu-mem-gb", "lots"}), "argument --gpu-mem-gb: invalid float value: 'lots'");
    EXPECT_EQ(error_of({"--num-users"}), "argument --num-users: expected one argument");
    EXPECT_EQ(error_of({"--num-users", "--duration", "3"}), "argument --num-users: expected one argument");
    EXPECT_EQ(error_of({"--generation-mode", "slow"}),
              "argument --generation-mode: invalid choice: 'slow' (choose from 'none', 'fast', 'realistic')");
    EXPECT_EQ(error_of({"--quiet=1"}), "argument --quiet: ignored explicit argument '1'");
    EXPECT_EQ(error_of({"--foo", "--duration", "3", "stray"}), "unrecognized arguments: --foo stray");
    EXPECT_EQ(error_of({"--duration", "3"}), "");
    EXPECT_EQ(kvio::cli::argparse_error_text("kvio simulate", "unrecognized arguments: --foo").substr(0, 6), "usage:");
}
