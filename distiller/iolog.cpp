#include "distiller/iolog.h"

#include <algorithm>
#include <ostream>

#include "common/error.h"

namespace kvio::distiller {

size_t write_iolog(std::ostream& os, const std::vector<Cmd>& in, const std::string& filename) {
    if (filename.empty()) throw Error("distill --iolog: --filename is required (the iolog names its target)");
    if (filename.find_first_of(" \t\n") != std::string::npos)
        throw Error("distill --iolog: the target '" + filename + "' contains whitespace, which fio's iolog cannot hold");
    std::vector<const Cmd*> cmds;
    for (const auto& c : in)
        if (c.op == Op::Read || c.op == Op::Write || c.op == Op::Discard) cmds.push_back(&c);
    std::stable_sort(cmds.begin(), cmds.end(), [](const Cmd* a, const Cmd* b) { return a->ts_issue < b->ts_issue; });
    const uint64_t t0 = cmds.empty() ? 0 : cmds.front()->ts_issue;
    auto ts = [&](uint64_t t) { return (t - t0) / 1000 + 1; };
    os << "fio version 3 iolog\n";
    os << 1 << ' ' << filename << " add\n";
    os << 1 << ' ' << filename << " open\n";
    uint64_t last = 1;
    for (const Cmd* c : cmds) {
        const char* act = c->op == Op::Read ? "read" : c->op == Op::Write ? "write" : "trim";
        last = ts(c->ts_issue);
        os << last << ' ' << filename << ' ' << act << ' ' << c->sector * 512 << ' ' << c->bytes << '\n';
    }
    os << last << ' ' << filename << " close\n";
    if (!os) throw Error("distill --iolog: write failed");
    return cmds.size();
}

}  // namespace kvio::distiller
