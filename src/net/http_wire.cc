// HTTP/1.1 framing helpers (no Boost here).
#include "net/http_wire.h"

#include <cstdio>

#include "net/http.h"

namespace allot::net::wire {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool HasCrLf(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 428:
      return "Precondition Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

namespace {
std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string ErrorBody(const std::string& code, const std::string& message) {
  return "{\"error\":{\"code\":\"" + JsonEscape(code) + "\",\"message\":\"" +
         JsonEscape(message) + "\",\"field\":\"\"}}";
}

std::string ResponseHead(
    int status, const std::string& content_type,
    const std::vector<std::pair<std::string, std::string>>& extra,
    bool keep_alive, int64_t content_length, bool chunked) {
  if (status < 100 || status > 599) status = 500;
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  head += ReasonPhrase(status);
  head += "\r\nServer: allot\r\n";
  if (!content_type.empty() && !HasCrLf(content_type)) {
    head += "Content-Type: " + content_type + "\r\n";
  }
  for (const auto& [name, value] : extra) {
    if (name.empty() || HasCrLf(name) || HasCrLf(value) ||
        name.find(':') != std::string::npos ||
        IEquals(name, "content-length") || IEquals(name, "transfer-encoding") ||
        IEquals(name, "connection") || IEquals(name, "server") ||
        (!content_type.empty() && IEquals(name, "content-type"))) {
      continue;
    }
    head += name + ": " + value + "\r\n";
  }
  if (status == 204 || status == 304) {
    // No body, so no framing headers.
  } else if (content_length >= 0) {
    head += "Content-Length: " + std::to_string(content_length) + "\r\n";
  } else if (chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  if (!keep_alive) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

void SplitTarget(const std::string& target, std::string* path,
                 std::map<std::string, std::string>* query) {
  size_t mark = target.find('?');
  *path = UrlDecode(target.substr(0, mark), false);
  if (mark == std::string::npos) return;
  std::string_view q = std::string_view(target).substr(mark + 1);
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view part = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    std::string key = UrlDecode(std::string(part.substr(0, eq)), true);
    std::string value = eq == std::string_view::npos
                            ? std::string()
                            : UrlDecode(std::string(part.substr(eq + 1)), true);
    query->emplace(std::move(key), std::move(value));
  }
}

}  // namespace allot::net::wire
