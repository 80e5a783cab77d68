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

// Python's int() reads leading zeros as decimal ('042' is 42); CLI11 would read them as octal (34; '09' an error).
TEST(ArgparseCompat, LeadingZerosAreDecimal) {
    const auto out = argparse_check({"--seed", "042", "--num-users", "010", "--duration=09", "--max-requests", "-007",
                                     "--num-clients", "0", "--trial-seconds", "00"},
                                    simulate_argparse_options());
    EXPECT_EQ(out, (std::vector<std::string>{"--seed=42", "--num-users=10", "--duration=9", "--max-requests=-7",
                                             "--num-clients=0", "--trial-seconds=0"}));
    EXPECT_EQ(error_of({"--seed", "0x10"}), "argument --seed: invalid int value: '0x10'");
}

// kvio's own flags (the CLOSED protocol's, --num-clients, --mpi, --audit, ...) take their full name only: an
// abbreviation is an unrecognized argument naming the flag it would have been, never a guess; kv-cache.py's flags keep
// argparse's abbreviations (scripts written against the benchmark use them), expanded to their canonical name.
TEST(ArgparseCompat, KvioFlagsAreNotAbbreviated) {
    EXPECT_EQ(error_of({"--mlperf-closed", "--trial-second", "5"}),
              "unrecognized arguments: --trial-second 5 (kvio's own flags take their full name: --trial-seconds)");
    EXPECT_EQ(error_of({"--trial-s=5"}),
              "unrecognized arguments: --trial-s=5 (kvio's own flags take their full name: --trial-seconds)");
    EXPECT_EQ(error_of({"--test-"}),
              "unrecognized arguments: --test- (kvio's own flags take their full name: "
              "--test-cpu-mem-gb, --test-memory-cache)");
    EXPECT_EQ(error_of({"--num-cl", "2"}),
              "unrecognized arguments: --num-cl 2 (kvio's own flags take their full name: --num-clients)");
    EXPECT_EQ(error_of({"--aud"}), "unrecognized arguments: --aud (kvio's own flags take their full name: --audit)");
    EXPECT_EQ(error_of({"--bogus"}), "unrecognized arguments: --bogus");
    const auto out = argparse_check({"--mlperf-closed", "--trial-seconds", "5", "--num-clients", "2", "--num-u", "3"},
                                    simulate_argparse_options());
    EXPECT_EQ(out,
              (std::vector<std::string>{"--mlperf-closed", "--trial-seconds=5", "--num-clients=2", "--num-users=3"}));
}

TEST(ArgparseCompat, ErrorsAreArgparses) {
    // kvio's --num-clients is no candidate: as Python's argparse says it for the benchmark's own flags.
    EXPECT_EQ(error_of({"--num", "3"}), "ambiguous option: --num could match --num-users, --num-gpus");
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
