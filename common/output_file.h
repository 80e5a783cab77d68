// A file written through a std::ostream, compressed when its name says so: a path ending in ".zst" becomes one zstd
// frame (common/zstd_stream.h), as every kvio output does (--events, --semantic, --perfetto). Readers take either
// (common/input_file.h).
#pragma once
#include <cstddef>
#include <memory>
#include <ostream>
#include <string>

namespace kvio {

/// The name an output is written under until it is complete: a regular file (or a name that does not exist yet)
/// is written as PATH.tmp-PID in PATH's directory and renamed over PATH by commit(), so a full disk, an error or a
/// kill never leaves a cut file under PATH (a SIGKILL leaves PATH.tmp-PID, which the next writer of PATH removes:
/// remove_stale_temporaries()); a device, pipe or symbolic link is written
/// in place (write_path() == path()). Not committed, the destructor removes the temporary file.
class PendingRename {
public:
    explicit PendingRename(std::string path);
    ~PendingRename();
    PendingRename(const PendingRename&) = delete;
    PendingRename& operator=(const PendingRename&) = delete;

    /// The final name.
    const std::string& path() const { return path_; }
    /// Where to write until commit(): PATH.tmp-PID, or PATH itself when written in place.
    const std::string& write_path() const { return tmp_; }
    /// Renames the written file to path(). Throws kvio::Error "PATH: cannot write: REASON" (the temporary removed).
    void commit();
    /// Removes the temporary file (no-op in place or once committed).
    void discard();

private:
    std::string path_, tmp_;
    bool done_ = false;
};

/// Removes PATH.tmp-PID files beside `path` whose process is gone (kill(PID, 0) fails with ESRCH): what a SIGKILL
/// of an earlier writer of PATH left (PendingRename). Each removal is a warning naming the file. A temporary of a
/// process still alive, or of a PID now reused, is left alone. Returns how many were removed.
size_t remove_stale_temporaries(const std::string& path);

/// Fails early for an output written at the end of a run: throws kvio::Error "PATH: cannot write: REASON" when
/// `path` cannot be opened for writing; leaves no file that was not there.
void check_writable(const std::string& path);

class OutputFile {
public:
    /// Opens `path` for writing as PATH.tmp-PID (PendingRename). Throws kvio::Error "PATH: cannot write: REASON".
    explicit OutputFile(const std::string& path);
    /// Without close(): closes and removes the temporary file (nothing under PATH).
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    /// Where to write the (uncompressed) text. Written through a 256 KiB buffer.
    std::ostream& stream();
    /// Writes what is buffered, ends the zstd frame (a finished .zst), closes and renames to PATH. Throws kvio::Error
    /// "PATH: write failed: REASON" when any write failed (nothing is left under PATH then).
    void close();

private:
    class Buf;
    std::string path_;
    PendingRename pending_;
    std::unique_ptr<Buf> buf_;
    std::unique_ptr<std::ostream> os_;
};

}  // namespace kvio
