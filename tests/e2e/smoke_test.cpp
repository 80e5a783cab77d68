#include <gtest/gtest.h>

#include "tests/e2e/helpers.h"

using namespace kvio::test;

TEST(Cli, HelpListsCommands) {
    auto r = run(kvio_bin() + " --help");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("trace"), std::string::npos) << r.out;
}

TEST(Cli, UnknownCommandFails) {
    auto r = run(kvio_bin() + " no-such-command");
    EXPECT_NE(r.status, 0);
}
