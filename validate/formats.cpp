#include "validate/formats.h"

#include <cstring>

#include "common/events_bin.h"
#include "common/input_file.h"
#include "validate/commands_monitor.h"
#include "validate/events.h"
#include "validate/semantic_lmcache.h"

namespace kvio::validate {

namespace {

constexpr size_t kPeekBytes = 64 << 10;  // a first record is far shorter (a kvio meta line is ~2 KB)

// The first non-blank line of `head` as a JSON object; null when it is not one (the real reader then says why).
json first_record(const std::string& head) {
    size_t b = head.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return nullptr;
    size_t e = head.find('\n', b);
    json j = json::parse(head.begin() + std::ptrdiff_t(b),
                         e == std::string::npos ? head.end() : head.begin() + std::ptrdiff_t(e), nullptr, false);
    return j.is_object() ? j : json(nullptr);
}

std::string event_type(const json& j) {
    auto it = j.is_object() ? j.find("event_type") : j.end();
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

SemanticFormat parse_semantic_format(const std::string& s) {
    if (s == "auto") return SemanticFormat::Auto;
    if (s == "kvio") return SemanticFormat::Kvio;
    if (s == "lmcache") return SemanticFormat::Lmcache;
    throw Error("--semantic-format: expected auto, kvio or lmcache, got \"" + s + "\"");
}

CommandsFormat parse_commands_format(const std::string& s) {
    if (s == "auto") return CommandsFormat::Auto;
    if (s == "kvio") return CommandsFormat::Kvio;
    if (s == "monitor") return CommandsFormat::Monitor;
    throw Error("--commands-format: expected auto, kvio or monitor, got \"" + s + "\"");
}

SemanticFormat detect_semantic_format(const std::string& path) {
    return event_type(first_record(peek_input(path, kPeekBytes))) == "kvio_meta" ? SemanticFormat::Lmcache
                                                                                 : SemanticFormat::Kvio;
}

CommandsFormat detect_commands_format(const std::string& path) {
    const std::string head = peek_input(path, kPeekBytes);
    if (evbin::has_magic(head.data(), head.size())) return CommandsFormat::Kvio;
    const std::string t = event_type(first_record(head));
    for (const char* m : {"nvme_cmd", "nvme_cmp", "cq_overflow", "clock_anchor", "drops"})
        if (t == m) return CommandsFormat::Monitor;
    return CommandsFormat::Kvio;
}

SemanticTrace read_semantic_as(const std::string& path, SemanticFormat f) {
    if (f == SemanticFormat::Auto) f = detect_semantic_format(path);
    return f == SemanticFormat::Lmcache ? read_semantic_lmcache(path) : read_semantic(path);
}

std::unique_ptr<CommandReader> open_commands(const std::string& path, CommandsFormat f) {
    if (f == CommandsFormat::Auto) f = detect_commands_format(path);
    if (f == CommandsFormat::Monitor) return std::make_unique<MonitorReader>(path);
    return std::make_unique<EventsReader>(path);
}

}  // namespace kvio::validate
