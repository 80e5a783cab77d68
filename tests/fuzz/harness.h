// Shared by the libFuzzer targets in tests/fuzz/: the readers take a path, so each input goes to an in-memory
// file (memfd) that a reader opens by name like any file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace kvio::fuzz {

/// Replaces the in-memory file's contents with [data, data + size) and returns a path that opens it
/// ("/proc/self/fd/N"; the memfd lives for the whole process). Aborts when memfd_create or the write fails:
/// that is the harness failing, not the reader.
const std::string& input_file(const uint8_t* data, size_t size);

/// Reads every record of a kvio.events/1 or kvio.events.bin/1 file through kvio::EventsReader and touches each
/// field (so ASan sees a string view that points outside the reader's buffers). kvio::Error, the reader's
/// answer to bad input, is caught; any other exception escapes to the fuzzer as a crash.
void drain_events(const std::string& path);

/// An ostream that discards what is written to it (a reader's output the target does not look at).
std::ostream& null_stream();

}  // namespace kvio::fuzz
