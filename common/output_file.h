// A file written through a std::ostream, compressed when its name says so: a path ending in ".zst" becomes one zstd
// frame (common/zstd_stream.h), as every kvio output does (--events, --semantic, --perfetto). Readers take either
// (common/input_file.h).
#pragma once
#include <memory>
#include <ostream>
#include <string>

namespace kvio {

class OutputFile {
public:
    /// Creates or truncates `path`. Throws kvio::Error "PATH: cannot write: REASON".
    explicit OutputFile(const std::string& path);
    /// Closes without reporting errors: call close() to know the file is whole.
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    /// Where to write the (uncompressed) text. Written through a 256 KiB buffer.
    std::ostream& stream();
    /// Writes what is buffered, ends the zstd frame (a finished .zst), closes. Throws kvio::Error
    /// "PATH: write failed: REASON" when any write failed.
    void close();

private:
    class Buf;
    std::string path_;
    std::unique_ptr<Buf> buf_;
    std::unique_ptr<std::ostream> os_;
};

}  // namespace kvio
