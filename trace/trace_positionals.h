// `kvio trace [OPTIONS] [INTERVAL [COUNT]] [-- COMMAND ...]`: the positional words split the way biolatency and
// iostat users expect, without taking a command's own arguments (`-- sleep 1`) for an INTERVAL.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvio::trace {

struct TracePositionals {
    double interval_s = 0;  ///< 0: no interval output
    uint64_t count = 0;     ///< 0: until stopped
    std::vector<std::string> command;
};

/// `words`: the positionals in order as CLI11 gathered them (a "--" after the first positional is kept among them);
/// `dashdash_first`: a "--" came before any positional (CLI11 consumed it), so every word is COMMAND. Otherwise a
/// leading number is INTERVAL (seconds, > 0), a whole number after it COUNT (>= 1), then an optional "--", then
/// COMMAND. Throws kvio::Error for a number that is not a valid INTERVAL or COUNT, and for an option-looking word
/// where COMMAND would start without "--" (`kvio trace 1 3 -d loop1`: CLI11 stops parsing options at a positional),
/// and for any word after INTERVAL [COUNT] without "--" (`kvio trace -d loop0 1 2 3` ran "3" as a program).
TracePositionals split_trace_positionals(const std::vector<std::string>& words, bool dashdash_first);

}  // namespace kvio::trace
