#include "tests/e2e/tracefs.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace kvio::test {

namespace {
void write_tracefs(const std::string& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
    f.close();
    if (!f) throw std::runtime_error("writing " + path);
}
}  // namespace

TracefsInstance::TracefsInstance(std::vector<std::string> evs, const std::string& filter) : events(std::move(evs)) {
    const std::string root =
        std::filesystem::exists("/sys/kernel/tracing/instances") ? "/sys/kernel/tracing" : "/sys/kernel/debug/tracing";
    static int made = 0;  // one name per instance: a name reused by --gtest_repeat must not find an old buffer
    dir = root + "/instances/kvio-test-" + std::to_string(getpid()) + "-" + std::to_string(made++);
    std::filesystem::create_directory(dir);
    write_tracefs(dir + "/trace", "");  // empty, whatever it held
    write_tracefs(dir + "/buffer_size_kb", "16384");
    write_tracefs(dir + "/trace_clock", "mono");
    for (const auto& ev : events) {
        write_tracefs(dir + "/events/block/" + ev + "/filter", filter);
        write_tracefs(dir + "/events/block/" + ev + "/enable", "1");
    }
}

TracefsInstance::~TracefsInstance() {
    try {
        for (const auto& ev : events) write_tracefs(dir + "/events/block/" + ev + "/enable", "0");
    } catch (const std::exception&) {}
    ::rmdir(dir.c_str());
}

void TracefsInstance::stop() { write_tracefs(dir + "/tracing_on", "0"); }

std::vector<std::string> TracefsInstance::lines() const {
    std::vector<std::string> out;
    std::ifstream f(dir + "/trace");
    std::string line;
    while (std::getline(f, line))
        if (!line.empty() && line[0] != '#') out.push_back(line);
    return out;
}

uint64_t TracefsInstance::overruns() const {
    uint64_t n = 0;
    for (const auto& cpu : std::filesystem::directory_iterator(dir + "/per_cpu")) {
        std::ifstream f(cpu.path() / "stats");
        std::string key;
        uint64_t v = 0;
        while (f >> key)
            if ((key == "overrun:" || key == "dropped") && f >> v) n += v;
    }
    return n;
}

uint32_t kernel_dev_of(const std::string& majmin) {
    unsigned maj = 0, min = 0;
    if (std::sscanf(majmin.c_str(), "%u:%u", &maj, &min) != 2) throw std::runtime_error("not MAJ:MIN: " + majmin);
    return (maj << 20) | min;
}

}  // namespace kvio::test
