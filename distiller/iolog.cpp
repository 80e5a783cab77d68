#include "distiller/iolog.h"

#include <algorithm>
#include <ostream>

#include "common/error.h"

namespace kvio::distiller {

size_t write_iolog(std::ostream& os, const std::vector<Cmd>& in, const std::string& filename) {
    if (filename.empty()) throw Error("distill --iolog: --filename is required (the iolog names its target)");
    if (filename.find_first_of(" \t\n") != std::string::npos)
        throw Error("distill --iolog: the target '" + filename +
                    "' contains whitespace, which fio's iolog cannot hold");
    auto keep = [](const Cmd& c) { return c.op == Op::Read || c.op == Op::Write || c.op == Op::Discard; };
    // Issue order. load_events' output already is; only other input is sorted, through pointers.
    std::vector<const Cmd*> order;
    if (!std::is_sorted(in.begin(), in.end(), [](const Cmd& a, const Cmd& b) { return a.ts_issue < b.ts_issue; })) {
        for (const auto& c : in) order.push_back(&c);
        std::stable_sort(order.begin(), order.end(),
                         [](const Cmd* a, const Cmd* b) { return a->ts_issue < b->ts_issue; });
    }
    auto at = [&](size_t i) -> const Cmd& { return order.empty() ? in[i] : *order[i]; };
    uint64_t t0 = 0;
    for (size_t i = 0; i < in.size(); ++i)
        if (keep(at(i))) {
            t0 = at(i).ts_issue;
            break;
        }
    auto ts = [&](uint64_t t) { return (t - t0) / 1000 + 1; };
    os << "fio version 3 iolog\n";
    os << 1 << ' ' << filename << " add\n";
    os << 1 << ' ' << filename << " open\n";
    uint64_t last = 1;
    size_t n = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const Cmd& c = at(i);
        if (!keep(c)) continue;
        const char* act = c.op == Op::Read ? "read" : c.op == Op::Write ? "write" : "trim";
        last = ts(c.ts_issue);
        os << last << ' ' << filename << ' ' << act << ' ' << c.sector * 512 << ' ' << c.bytes << '\n';
        ++n;
    }
    os << last << ' ' << filename << " close\n";
    if (!os) throw Error("distill --iolog: write failed");
    return n;
}

}  // namespace kvio::distiller
