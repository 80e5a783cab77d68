// What `kvio gen` and `kvio replay` do with their --target before writing a byte: read-only devices and files are
// refused, a missing image file is created (and removed again when refused), object files about to be rewritten
// count as room, and the refusals are whole sentences.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/helpers.h"

using namespace kvio::test;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMiB = 1 << 20;
const std::string kGen = " gen -q --model llama3.2-1b --num-chunks 1 ";  // llama3.2-1b: 8 MiB objects

}  // namespace

TEST(GenTarget, ReadOnlyDeviceIsRefusedByGenAndReplay) {
    TempDir d;
    LoopDevice rw(32 * kMiB);
    auto g = run(kvio_bin() + kGen + "--target " + rw.path + " --record " + d.file("rec.json"));
    ASSERT_EQ(g.status, 0) << g.err;
    // The same backing file attached again read-only (losetup -r): refused before any I/O, --force or not.
    auto ro = run("losetup --find --show -r " + rw.backing);
    ASSERT_EQ(ro.status, 0) << ro.err;
    std::string dev = ro.out.substr(0, ro.out.find('\n'));
    std::ofstream(d.file("ev.jsonl"))
        << R"({"type":"cmd","src":"block","dev":"7:200","disk":"loop200","op":"write","rwbs":"W",)"
        << R"("sector":2048,"bytes":4096,"ts_issue":1000,"ts_complete":2000,"d2c_ns":1000,)"
        << R"("pid":1,"tid":1,"comm":"app"})"
        << "\n";
    for (const std::string& cmd :
         {kGen + "--target " + dev, kGen + "--force --target " + dev,
          std::string(" replay -q --force --record ") + d.file("rec.json") + " --target " + dev,
          std::string(" replay --force --events ") + d.file("ev.jsonl") + " --target " + dev}) {
        SCOPED_TRACE(cmd);
        auto r = run(kvio_bin() + cmd);
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_NE(r.err.find("refusing " + dev + ": " + dev + " is read-only"), std::string::npos) << r.err;
        EXPECT_EQ(r.out.find("ERRORS"), std::string::npos) << r.out;  // nothing was attempted
    }
    run("losetup -d " + dev);
}

TEST(GenTarget, ReadOnlyFileIsRefused) {
    Ext4Mount m(64 * kMiB);
    const std::string img = m.mnt + "/slots.img";
    { std::ofstream(img) << ""; }
    ASSERT_EQ(run("mount -o remount,ro " + m.mnt).status, 0);
    auto r = run(kvio_bin() + kGen + "--target " + img);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(
        r.err.find("refusing " + img + ": it is a regular file this process cannot write (Read-only file system)"),
        std::string::npos)
        << r.err;
    run("mount -o remount,rw " + m.mnt);
}

TEST(GenTarget, MissingImageFileIsCreated) {
    Ext4Mount m(64 * kMiB);
    const std::string img = m.mnt + "/new.img";
    auto r = run(kvio_bin() + kGen + "--target " + img);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_GE(fs::file_size(img), kMiB + 4096 + 8 * kMiB);  // created, then grown with fallocate
    // A refused run removes the file it created; a missing device under /dev is never created as a file.
    const std::string refused = m.mnt + "/refused.img";
    r = run(kvio_bin() + kGen + "--engine uring_cmd --target " + refused);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("but " + refused + " is a regular file; use --engine posix or io_uring"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(refused));
    r = run(kvio_bin() + kGen + "--target /dev/kvio-no-such-device");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists("/dev/kvio-no-such-device"));
}

TEST(GenTarget, LayoutRefusalIsASentence) {
    LoopDevice loop(32 * kMiB);
    auto r = run(kvio_bin() + kGen + "--layout files --target " + loop.path);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--layout files needs a directory as --target, but " + loop.path + " is a block device."),
              std::string::npos)
        << r.err;
}

TEST(GenTarget, ObjectFilesItRewritesCountAsRoom) {
    Ext4Mount m(96 * kMiB);
    const std::string dir = m.mnt + "/kv";
    fs::create_directory(dir);
    // 6 objects of 8 MiB fill most of the filesystem; 8 need more than is free, but 6 of them rewrite files already
    // there.
    auto r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 6 --target " + dir);
    ASSERT_EQ(r.status, 0) << r.err;
    auto df = run("df -B1 --output=avail " + m.mnt + " | tail -1");
    const uint64_t avail = std::stoull(df.out);
    ASSERT_LT(avail, 8 * 8 * kMiB) << "the second run must need the rewritten files' room";
    ASSERT_GT(avail + 6 * 8 * kMiB, 8 * 8 * kMiB);
    r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 8 --target " + dir);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(fs::file_size(dir + "/kvobj-7.bin"), 8 * kMiB);
    // Beyond free + rewritable it is still refused, and the message says what it counted.
    r = run(kvio_bin() + " gen -q --model llama3.2-1b --num-chunks 40 --target " + dir);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find(" in object files it rewrites)"), std::string::npos) << r.err;
}
