// The message of the kvio::Error a call throws: the tests' one way to assert an error's text.
#pragma once
#include <string>

#include "common/error.h"

namespace kvio::test {

/// The what() of the kvio::Error `f()` throws, "" when it throws none (another exception propagates).
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const kvio::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace kvio::test
