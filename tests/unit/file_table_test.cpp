// The per-file table of `kvio trace --files` (trace/file_table.h): how --group-by forms rows from paths.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "trace/file_table.h"

using kvio::trace::file_table_json;
using kvio::trace::FileEntry;
using kvio::trace::FileTableOptions;
using kvio::trace::mean_size;

namespace {

// A file `path` (inode `ino`) with `bytes` written in one command.
FileEntry file(const std::string& path, uint64_t ino, uint64_t bytes) {
    FileEntry f;
    f.key.ino = ino;
    f.key.fs_dev = (7u << 20) | 2;
    f.path = path;
    f.stats.dir[1].bytes = bytes;
    f.stats.dir[1].size[0] = 1;
    return f;
}

// Rows of a table by their "path": files and write bytes.
std::map<std::string, std::pair<uint64_t, uint64_t>> rows(const nlohmann::json& table) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;
    for (const auto& r : table)
        out[r.at("path").get<std::string>()] = {r.at("files").get<uint64_t>(),
                                                r.at("write").at("bytes").get<uint64_t>()};
    return out;
}

}  // namespace

// A match (or first group) of empty text names no group: the file keeps its own row, as a file the regex does not
// match does; files whose group is not empty share its row.
TEST(FileTable, EmptyGroupMatchKeepsTheFilesOwnRow) {
    const std::vector<FileEntry> files = {file("/kv/a/1", 1, 100), file("/kv/a/2", 2, 200), file("/kv/3", 3, 400),
                                          file("/kv/4", 4, 800)};
    auto r = rows(file_table_json(files, FileTableOptions{"", "^/kv/([a-z]*)/?"}));
    EXPECT_EQ(r.size(), 3u);
    EXPECT_EQ(r["a"], std::make_pair(uint64_t(2), uint64_t(300)));
    EXPECT_EQ(r["/kv/3"], std::make_pair(uint64_t(1), uint64_t(400)));
    EXPECT_EQ(r["/kv/4"], std::make_pair(uint64_t(1), uint64_t(800)));
    EXPECT_FALSE(r.count(""));
    // a pattern that matches every path with empty text: every file its own row
    r = rows(file_table_json(files, FileTableOptions{"", "x*"}));
    EXPECT_EQ(r.size(), 4u);
    EXPECT_EQ(r["/kv/a/1"], std::make_pair(uint64_t(1), uint64_t(100)));
    EXPECT_FALSE(r.count(""));
}

// A catastrophic --group-by ('(.*)*#' backtracks exponentially over a path without '#') cannot hold the table
// hostage: a stop flag that is set while it matches ends the wait (the matching child is killed), and the rows are
// the files ungrouped.
TEST(FileTable, StopWhileGroupingGivesTheTableUngrouped) {
    const std::string deep = "/kv/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const std::vector<FileEntry> files = {file(deep + "/1", 1, 100), file(deep + "/2", 2, 200)};
    volatile sig_atomic_t stop = 0;
    std::thread stopper([&stop] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        stop = SIGTERM;
    });
    FileTableOptions opts{"", "(.*)*#"};
    opts.stop = &stop;
    bool stopped = false;
    auto r = rows(file_table_json(files, opts, &stopped));
    stopper.join();
    EXPECT_TRUE(stopped);
    EXPECT_EQ(r.size(), 2u);
    EXPECT_EQ(r[deep + "/1"], std::make_pair(uint64_t(1), uint64_t(100)));
    EXPECT_EQ(r[deep + "/2"], std::make_pair(uint64_t(1), uint64_t(200)));
    // without a stop, a pattern that finishes groups as before, and says it was not stopped
    opts = FileTableOptions{"", "^/kv/(a*)/"};
    r = rows(file_table_json(files, opts, &stopped));
    EXPECT_FALSE(stopped);
    EXPECT_EQ(r[std::string(deep.size() - 4, 'a')], std::make_pair(uint64_t(2), uint64_t(300)));
}

// MEANSZ reads alike on every row: whole bytes below 1 KiB, one decimal above, whatever the mean divides into.
TEST(FileTable, MeanSizeHasOneFormat) {
    EXPECT_EQ(mean_size(0, 0), "-");
    EXPECT_EQ(mean_size(1000, 2), "500");
    EXPECT_EQ(mean_size(6000, 1), "5.9k");
    EXPECT_EQ(mean_size(6144, 1), "6.0k");
    EXPECT_EQ(mean_size(3 * 1048576, 3), "1.0m");
    EXPECT_EQ(mean_size(3 * 1048576 + 3, 3), "1.0m");
    EXPECT_EQ(mean_size(uint64_t(5) << 30, 2), "2.5g");
    EXPECT_EQ(mean_size(1048550, 1), "1.0m");  // not "1024.0k"
    EXPECT_EQ(mean_size(4095, 4), "1.0k");     // 1023.75: not "1024"
    EXPECT_EQ(mean_size(1023, 1), "1023");
}
