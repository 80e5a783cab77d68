// validate/files.h: per-file grouping of --files device commands (docs/validate_files.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "validate/files.h"

namespace {

std::string write_tmp(const std::string& name, const std::string& text) {
    std::string p = (std::filesystem::temp_directory_path() / (name + std::to_string(getpid()) + ".jsonl")).string();
    std::ofstream(p) << text;
    return p;
}

// A block command; `file` holds the ,"ino":..,"fs_dev":..,"gen":.. suffix or "".
std::string cmd(const char* op, uint64_t sector, uint64_t bytes, const std::string& file) {
    return std::string("{\"type\":\"cmd\",\"src\":\"block\",\"dev\":\"7:3\",\"op\":\"") + op +
           "\",\"sector\":" + std::to_string(sector) + ",\"bytes\":" + std::to_string(bytes) +
           ",\"ts_issue\":100,\"ts_complete\":200" + file + "}\n";
}

}  // namespace

TEST(ValidateFiles, GroupsCommandsPerFileAndScoresSyscalls) {
    const std::string a = ",\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":5", b = ",\"ino\":13,\"fs_dev\":\"7:3\",\"gen\":9";
    std::string text = cmd("write", 2048, 131072, a) + cmd("write", 2304, 65536, a) + cmd("read", 4096, 4096, b) +
                       cmd("write", 8, 4096, "") +  // journal: no file
                       "{\"type\":\"syscall\",\"name\":\"pread64\",\"pid\":1,\"tid\":1,\"comm\":\"x\",\"fd\":3,"
                       "\"ts_enter\":1,\"ts_exit\":2,\"ret\":16384,\"count\":16384,\"offset\":0,\"direct\":false,"
                       "\"file_size\":16384,\"ino\":13,\"fs_dev\":\"7:3\",\"gen\":9}\n";
    std::string p = write_tmp("kvio_files_ok", text);
    kvio::validate::FilesJoin j = kvio::validate::join_files(p);
    std::filesystem::remove(p);
    EXPECT_EQ(j.cmds, 4u);
    EXPECT_EQ(j.unattributed_cmds, 1u);
    ASSERT_EQ(j.files.size(), 2u);
    const auto& fa = j.files[0];
    EXPECT_EQ(fa.id.ino, 12u);
    EXPECT_EQ(fa.id.gen, 5u);
    EXPECT_EQ(fa.write_cmds, 2u);
    EXPECT_EQ(fa.write_bytes, 196608u);
    EXPECT_EQ(fa.min_cmd_bytes, 65536u);
    EXPECT_EQ(fa.max_cmd_bytes, 131072u);
    EXPECT_FALSE(fa.has_syscalls);
    EXPECT_EQ(fa.page_cache_read_share(), -1);
    const auto& fb = j.files[1];
    EXPECT_EQ(fb.id.ino, 13u);
    EXPECT_EQ(fb.read_bytes, 4096u);
    EXPECT_EQ(fb.sys_read_bytes, 16384u);
    EXPECT_EQ(fb.file_size, 16384u);
    EXPECT_DOUBLE_EQ(fb.page_cache_read_share(), 0.75);  // 12 KiB of 16 KiB never reached the device
}

// A write command of two files' blocks and 1 KiB of metadata (its "files"): each file takes its own bytes and counts
// the command once, with its part as the command's size; the record's own ino (the first file) is not counted whole.
TEST(ValidateFiles, EachFileTakesItsPartOfAMergedCommand) {
    const std::string a = ",\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":5";
    const std::string files = a +
                              ",\"nofile_bytes\":1024,\"files\":[{\"bytes\":6144,\"fs_dev\":\"7:3\",\"gen\":5,"
                              "\"ino\":12},{\"bytes\":5120,\"fs_dev\":\"7:3\",\"gen\":9,\"ino\":13}]";
    std::string p = write_tmp("kvio_files_parts", cmd("write", 2048, 12288, files) + cmd("write", 4096, 4096, a));
    kvio::validate::FilesJoin j = kvio::validate::join_files(p);
    std::filesystem::remove(p);
    EXPECT_EQ(j.cmds, 2u);
    EXPECT_EQ(j.unattributed_cmds, 0u);
    ASSERT_EQ(j.files.size(), 2u);
    EXPECT_EQ(j.files[0].id.ino, 12u);
    EXPECT_EQ(j.files[0].write_cmds, 2u);
    EXPECT_EQ(j.files[0].write_bytes, 6144u + 4096u);
    EXPECT_EQ(j.files[0].min_cmd_bytes, 4096u);
    EXPECT_EQ(j.files[0].max_cmd_bytes, 6144u);
    EXPECT_EQ(j.files[1].id.ino, 13u);
    EXPECT_EQ(j.files[1].id.gen, 9u);
    EXPECT_EQ(j.files[1].write_cmds, 1u);
    EXPECT_EQ(j.files[1].write_bytes, 5120u);
}

TEST(ValidateFiles, NoFileAttributionSaysTraceWithFiles) {
    std::string p = write_tmp("kvio_files_none", cmd("write", 2048, 4096, "") + cmd("read", 8, 4096, ""));
    try {
        kvio::validate::join_files(p);
        std::filesystem::remove(p);
        FAIL() << "expected an error";
    } catch (const kvio::Error& e) {
        std::filesystem::remove(p);
        EXPECT_NE(std::string(e.what()).find("trace with --files"), std::string::npos) << e.what();
    }
}

TEST(ValidateFiles, SameInodeNewGenerationIsAnotherFile) {
    std::string p =
        write_tmp("kvio_files_gen", cmd("write", 2048, 4096, ",\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":1") +
                                        cmd("write", 4096, 8192, ",\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":2"));
    kvio::validate::FilesJoin j = kvio::validate::join_files(p);
    std::filesystem::remove(p);
    ASSERT_EQ(j.files.size(), 2u);
    EXPECT_EQ(j.files[0].write_bytes, 4096u);
    EXPECT_EQ(j.files[1].write_bytes, 8192u);
}

// --trace-json names the files: a row of one file by its (fs_dev, ino, gen); a --group-by row of several files names
// none; a file the table lacks keeps no path; a summary traced without --files is an error naming the field.
TEST(ValidateFiles, TraceJsonNamesEachFileByItsIdentity) {
    std::string ev =
        write_tmp("kvio_files_named", cmd("write", 2048, 4096, ",\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":5") +
                                          cmd("write", 4096, 4096, ",\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":6") +
                                          cmd("write", 8192, 4096, ",\"ino\":14,\"fs_dev\":\"7:3\",\"gen\":1"));
    std::string tj = write_tmp("kvio_files_trace",
                               "{\"schema\":\"kvio.trace/1\",\"files\":["
                               "{\"path\":\"/m/a\",\"files\":1,\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":5},"
                               "{\"path\":\"/m/old\",\"files\":1,\"ino\":12,\"fs_dev\":\"7:4\",\"gen\":6},"
                               "{\"path\":\"/m/dir\",\"files\":2}]}");
    std::string none = write_tmp("kvio_files_nofiles", "{\"schema\":\"kvio.trace/1\",\"devices\":[]}");
    kvio::validate::FilesJoin j = kvio::validate::join_files(ev);
    EXPECT_EQ(kvio::validate::name_files_from_trace_json(j, tj, ev), 1u);
    ASSERT_EQ(j.files.size(), 3u);
    EXPECT_EQ(j.files[0].path, "/m/a");
    EXPECT_EQ(j.files[1].path, "");  // same inode, another generation and filesystem: not the row's file
    EXPECT_EQ(j.files[2].path, "");
    const auto js = kvio::validate::files_report_json(j);
    EXPECT_EQ(js["files"][0]["path"], "/m/a");
    EXPECT_TRUE(js["files"][1]["path"].is_null());
    std::string err;
    try {
        kvio::validate::name_files_from_trace_json(j, none, ev);
    } catch (const kvio::Error& e) {
        err = e.what();
    }
    for (const auto& p : {ev, tj, none}) std::filesystem::remove(p);
    EXPECT_NE(err.find("'files'"), std::string::npos) << err;
    EXPECT_NE(err.find("--files"), std::string::npos) << err;
}

// The stream's summary record and the kvio.trace/1 summary carry one trace's `trace_id`: another trace's summary is
// refused naming both files and both ids; the same id, or an id on one side only (an older kvio's file), is taken.
TEST(ValidateFiles, TraceJsonOfAnotherTraceIsRefusedByItsTraceId) {
    const std::string rows = "\"files\":[{\"path\":\"/m/a\",\"files\":1,\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":5}]";
    std::string ev = write_tmp("kvio_files_id", cmd("write", 2048, 4096, ",\"ino\":12,\"fs_dev\":\"7:3\",\"gen\":5") +
                                                    "{\"type\":\"summary\",\"trace_id\":\"00000000000000aa\"}\n");
    std::string same =
        write_tmp("kvio_files_id_same", "{\"schema\":\"kvio.trace/1\",\"trace_id\":\"00000000000000aa\"," + rows + "}");
    std::string other = write_tmp("kvio_files_id_other",
                                  "{\"schema\":\"kvio.trace/1\",\"trace_id\":\"00000000000000bb\"," + rows + "}");
    std::string old = write_tmp("kvio_files_id_old", "{\"schema\":\"kvio.trace/1\"," + rows + "}");
    kvio::validate::FilesJoin j = kvio::validate::join_files(ev);
    EXPECT_EQ(j.tally.trace_id, "00000000000000aa");
    EXPECT_EQ(kvio::validate::name_files_from_trace_json(j, same, ev), 1u);
    EXPECT_EQ(kvio::validate::name_files_from_trace_json(j, old, ev), 1u);
    std::string err;
    try {
        kvio::validate::name_files_from_trace_json(j, other, ev);
    } catch (const kvio::Error& e) {
        err = e.what();
    }
    for (const auto& p : {ev, same, other, old}) std::filesystem::remove(p);
    EXPECT_NE(err.find("are not the same trace"), std::string::npos) << err;
    for (const auto& part : {ev, other, std::string("00000000000000aa"), std::string("00000000000000bb")})
        EXPECT_NE(err.find(part), std::string::npos) << part << " not in: " << err;
}
