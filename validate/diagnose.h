// Why a join joined nothing: the facts of the commands file that tell a join mode that cannot apply, or files
// of two different runs, from a real 0 %.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "validate/join.h"
#include "validate/types.h"

namespace kvio::validate {

/// What the data commands (reads and writes with bytes > 0) of an events file carried, gathered while joining.
struct CommandFacts {
    uint64_t data = 0;                         ///< read/write commands with bytes > 0
    uint64_t with_key = 0;                     ///< ... carrying a non-empty `key`
    uint64_t with_user_data = 0;               ///< ... carrying user_data with a trace id (upper 32 bits non-zero)
    uint64_t ts_min = UINT64_MAX, ts_max = 0;  ///< their ts_issue range, ns
    std::vector<uint32_t> devs;                ///< the devices they are on (kernel dev_t), in order of first command
    void add(const Command& c);
};

/// One-sentence warnings for a join that attributed no data command to any op, naming the first cause found:
/// no data commands; `--join key` with no command (or op) carrying a key; `--join user_data` with no command
/// carrying a trace id (or no op a trace_id); commands on other devices than the ops; commands outside every
/// op's time window (files of two runs); else that no command lies in an op's byte range at its time.
/// Empty when something joined or there are no ops.
std::vector<std::string> join_warnings(const SemanticTrace& t, const JoinResult& j, const CommandFacts& f);

/// When there are ops, nothing joined and the commands hold nothing for them — no read or write command at all (an
/// empty or cut-off trace), or none on a device of the ops (a trace of another disk) — the sentence that says so
/// and what to check; "" otherwise. Scores then describe no measured command: `kvio validate` exits 1.
std::string nothing_measured(const SemanticTrace& t, const JoinResult& j, const CommandFacts& f);

}  // namespace kvio::validate
