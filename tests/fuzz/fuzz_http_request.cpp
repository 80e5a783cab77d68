// libFuzzer target: a request header block as a network client of `kvio trace --listen` sends it, through
// trace::parse_http_request (the request line, the query split, the Accept header), whole and cut at its first
// blank line as the server frames it. Any bytes are accepted: the parser returns false, never throws.
#include <string_view>

#include "trace/http_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    kvio::trace::HttpRequest req;
    volatile size_t sink = 0;
    if (kvio::trace::parse_http_request(in, req)) sink = sink + req.method.size() + req.path.size() + req.accept.size();
    size_t end = std::min(in.find("\r\n\r\n"), in.find("\n\n"));
    if (end != std::string_view::npos && kvio::trace::parse_http_request(in.substr(0, end), req))
        sink = sink + req.method.size() + req.path.size() + req.accept.size();
    return 0;
}
