#include "trace/trace_positionals.h"

#include <cmath>
#include <cstdlib>

#include "common/error.h"

namespace kvio::trace {

namespace {

/// The word as a number when all of it is one.
bool as_number(const std::string& w, double& v) {
    if (w.empty()) return false;
    char* end = nullptr;
    v = std::strtod(w.c_str(), &end);
    return end == w.c_str() + w.size();
}

}  // namespace

TracePositionals split_trace_positionals(const std::vector<std::string>& words, bool dashdash_first) {
    TracePositionals p;
    size_t i = 0;
    double v = 0;
    if (!dashdash_first && i < words.size() && as_number(words[i], v)) {
        if (!std::isfinite(v) || v <= 0) throw UsageError("INTERVAL " + words[i] + ": must be a number of seconds > 0");
        p.interval_s = v;
        ++i;
        if (i < words.size() && as_number(words[i], v)) {
            if (!std::isfinite(v) || v < 1 || v != std::floor(v) || v > 1e15)
                throw UsageError("COUNT " + words[i] + ": must be a whole number of intervals >= 1");
            p.count = uint64_t(v);
            ++i;
        }
    }
    if (!dashdash_first && i < words.size()) {
        if (words[i] == "--") {
            ++i;
        } else if (words[i].size() > 1 && words[i][0] == '-') {  // CLI11 takes every word after a positional as one
            throw UsageError(
                "'" + words[i] +
                "' after the positionals: options go before INTERVAL [COUNT] (kvio trace -d nvme0n1 1 10); "
                "a COMMAND that starts with '-' needs -- before it");
        } else if (p.interval_s > 0) {  // `trace -d loop0 1 2 3`: a third number is a typo, not a program named "3"
            throw UsageError("'" + words[i] + "' after INTERVAL" + (p.count ? " COUNT" : "") +
                             ": a COMMAND after them needs -- before it (kvio trace -d loop0 1 10 -- fio job.ini)");
        }
    }
    p.command.assign(words.begin() + long(i), words.end());
    return p;
}

}  // namespace kvio::trace
