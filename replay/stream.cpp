#include "replay/stream.h"

#include <algorithm>

#include "common/error.h"

namespace kvio::replay {

DeviceStream load_stream(const std::string& path, const std::string& dev, const std::string& choose_with) {
    kvio::EventFilter f;
    f.dev = dev;
    kvio::EventTrace t;
    try {
        t = kvio::load_events(path, f);
    } catch (const Error& e) {
        std::string m = e.what();
        // The distiller's own flag is --dev; the caller's is --map-dev (replay) or --dev-a / --dev-b (compare).
        if (m.find("several devices") != std::string::npos && dev.empty())
            throw Error(m.substr(0, m.find("; choose")) + "; say which with " + choose_with);
        throw;
    }
    DeviceStream s;
    s.path = path;
    s.dev = t.dev;
    s.disk = t.disk;
    s.dropped = t.dropped;
    s.nvme_rows = std::any_of(t.cmds.begin(), t.cmds.end(), [](const kvio::Cmd& c) { return c.nvme; });
    for (auto& c : t.cmds) {
        if (c.nvme != s.nvme_rows) {
            ++s.other_src_rows;
            continue;
        }
        s.cmds.push_back(c);
    }
    return s;
}

bool is_data(const kvio::Cmd& c) { return (c.op == kvio::Op::Read || c.op == kvio::Op::Write) && c.bytes > 0; }

}  // namespace kvio::replay
