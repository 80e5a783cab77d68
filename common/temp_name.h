// The names outputs are written under until complete (common/output_file.h, PendingRename): NAME.tmp-PID.
#pragma once
#include <sys/types.h>

#include <string>
#include <string_view>

namespace kvio {

/// The temporary name of `path` written by process `pid`: "PATH.tmp-PID".
std::string temporary_name(const std::string& path, pid_t pid);

/// The writer's PID when `name` (a file name, no directory) is a temporary of an output: "NAME.tmp-PID" with PID a
/// positive decimal of at most 9 digits; with `base` non-empty, only of that output ("BASE.tmp-PID"). 0 otherwise.
pid_t temporary_writer(std::string_view name, std::string_view base = {});

}  // namespace kvio
