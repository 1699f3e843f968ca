// Internal to src/net: the Boost-free pieces of HTTP/1.1 framing shared by
// the server and the client (response heads, error bodies, request
// targets, header-name helpers). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace allot::net::wire {

// ASCII case-insensitive equality (header names and tokens).
bool IEquals(std::string_view a, std::string_view b);
std::string ToLower(std::string_view s);
bool HasCrLf(std::string_view s);

// "OK", "Not Found", ...; "Unknown" for codes without a standard phrase.
const char* ReasonPhrase(int status);

// Allot's error JSON: {"error":{"code":..,"message":..,"field":""}}.
std::string ErrorBody(const std::string& code, const std::string& message);

// A response head, through the blank line. It always carries
// "Server: allot". `extra` headers that would break the framing
// (Content-Length, Transfer-Encoding, Connection, Server, a Content-Type
// when `content_type` is set) or the head (CR, LF, ':' in the name) are
// dropped. `content_length` < 0: none is sent and the body is chunked
// when `chunked`, else delimited by the connection's end. 204 and 304 get
// no framing headers. A status outside 100..599 becomes 500.
std::string ResponseHead(
    int status, const std::string& content_type,
    const std::vector<std::pair<std::string, std::string>>& extra,
    bool keep_alive, int64_t content_length, bool chunked);

// Splits "/a%20b?x=1&y" into the decoded path "/a b" and the decoded query
// {x: "1", y: ""}; for a repeated key the first value wins.
void SplitTarget(const std::string& target, std::string* path,
                 std::map<std::string, std::string>* query);

}  // namespace allot::net::wire
