// Error type used across kvio libraries: one sentence a user can act on.
#pragma once
#include <stdexcept>
#include <string>

namespace kvio {

/// A user-facing failure (bad input, missing privilege, unusable device). The CLI prints
/// `kvio: <what()>` and exits non-zero. Messages name the file, line and field when there is one.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace kvio
