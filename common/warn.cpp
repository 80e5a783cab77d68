#include "common/warn.h"

#include <cstdio>

namespace kvio {

namespace {
void to_stderr(const std::string& msg) { std::fprintf(stderr, "kvio: warning: %s\n", msg.c_str()); }
std::function<void(const std::string&)>& sink() {
    static std::function<void(const std::string&)> s = to_stderr;
    return s;
}
}  // namespace

void warn(const std::string& msg) { sink()(msg); }

std::function<void(const std::string&)> set_warning_sink(std::function<void(const std::string&)> s) {
    auto old = std::move(sink());
    sink() = s ? std::move(s) : std::function<void(const std::string&)>(to_stderr);
    return old;
}

}  // namespace kvio
