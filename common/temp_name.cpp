#include "common/temp_name.h"

#include <charconv>

namespace kvio {

std::string temporary_name(const std::string& path, pid_t pid) { return path + ".tmp-" + std::to_string(pid); }

pid_t temporary_writer(std::string_view name, std::string_view base) {
    constexpr std::string_view kTag = ".tmp-";
    const size_t at = base.empty() ? name.rfind(kTag) : base.size();
    if (at == std::string_view::npos || at == 0 || name.size() <= at + kTag.size()) return 0;
    if (!base.empty() && (name.substr(0, at) != base || name.substr(at, kTag.size()) != kTag)) return 0;
    const std::string_view digits = name.substr(at + kTag.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string_view::npos) return 0;
    pid_t pid = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    return pid > 0 ? pid : 0;
}

}  // namespace kvio
