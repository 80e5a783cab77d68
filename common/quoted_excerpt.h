// How a reader's error message shows a bad value.
#pragma once
#include <string>
#include <string_view>

namespace kvio {

/// A value as an error message quotes it: its first 64 bytes in double quotes ("..." after them when longer),
/// control and non-ASCII bytes shown as '?', so a binary or huge field cannot flood the message.
inline std::string quoted_excerpt(std::string_view v) {
    std::string s(v.substr(0, 64));
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    return "\"" + s + (v.size() > 64 ? "...\"" : "\"");
}

}  // namespace kvio
