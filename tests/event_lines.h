// One kvio.events/1 command record (docs/formats.md) as a JSON line, for tests that write traces by hand.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kvio::test {

/// A block-layer command record: `op` "read"/"write"/..., `sector` in 512-byte units, `bytes`, issue and completion
/// times in ns (d2c_ns = complete - issue), submitter `tid` (also its pid), device `dev` (MAJ:MIN) named `disk`.
inline std::string cmd_line(const char* op, uint64_t sector, uint64_t bytes, uint64_t issue, uint64_t complete,
                            uint32_t tid, const char* dev, const char* disk, const char* comm) {
    return nlohmann::json{{"type", "cmd"},
                          {"src", "block"},
                          {"dev", dev},
                          {"disk", disk},
                          {"op", op},
                          {"rwbs", op[0] == 'r' ? "R" : "W"},
                          {"sector", sector},
                          {"bytes", bytes},
                          {"ts_issue", issue},
                          {"ts_complete", complete},
                          {"d2c_ns", complete - issue},
                          {"pid", tid},
                          {"tid", tid},
                          {"comm", comm}}
        .dump();
}

}  // namespace kvio::test
