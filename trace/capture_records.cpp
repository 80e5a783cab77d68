#include "trace/capture_records.h"

#include <cstring>

#include "common/error.h"

namespace kvio::trace {

void visit_capture(evbin::Reader& r, const std::string& path, const CaptureVisitor& v) {
    DevCache devs;
    evbin::Kind kind;
    std::string_view p;
    while (r.next(kind, p)) {
        switch (kind) {
            case evbin::Kind::Device: {
                uint32_t dev = 0;
                evbin::DeviceFacts d = evbin::read_device_record(p, dev);
                devs.put(dev, {d.majmin, d.disk, d.lba_bytes});
                break;
            }
            case evbin::Kind::Cmd: {
                kvio_cmd_event e;
                std::memcpy(&e, p.data(), sizeof e);
                if (v.cmd) v.cmd(e, devs, r.files());
                break;
            }
            case evbin::Kind::Syscall: {
                kvio_syscall_event e;
                std::memcpy(&e, p.data(), sizeof e);
                if (v.syscall) v.syscall(e);
                break;
            }
            case evbin::Kind::Stages: {
                kvio_stages_event e;
                std::memcpy(&e, p.data(), sizeof e);
                if (v.stages) v.stages(e, devs);
                break;
            }
            case evbin::Kind::Files:  // not returned by the reader: its parts are the next Cmd's files()
                break;
            case evbin::Kind::Json: {
                auto j = nlohmann::json::parse(p.begin(), p.end(), nullptr, false);
                if (j.is_discarded() || !j.is_object() || p.find('\n') != std::string_view::npos)
                    throw Error(path + ": record " + std::to_string(r.record()) + " at byte " +
                                std::to_string(r.offset()) + ": a json record that is not one JSON object");
                if (v.json) v.json(p, j);
                break;
            }
        }
    }
}

}  // namespace kvio::trace
