#include "core/names.h"

namespace allot::core {
namespace {

bool Alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?
bool IsNamePart(std::string_view s) {
  if (s.empty() || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

constexpr char kNameRule[] =
    "at most 63 characters: letters, digits, '-', '_' and '.', starting and "
    "ending with a letter or digit";

}  // namespace

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < s.size())) return false;
  }
  return true;
}

bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  for (;;) {
    size_t dot = s.find('.', start);
    if (!IsDnsLabel(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string QualifiedNameError(std::string_view s) {
  std::string_view name = s;
  if (size_t slash = s.find('/'); slash != std::string_view::npos) {
    std::string_view prefix = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (!IsDnsSubdomain(prefix)) {
      return "its prefix '" + std::string(prefix) +
             "' is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
             "at most 253 characters)";
    }
  }
  if (name.size() > 63 || !IsNamePart(name)) {
    return "its name part '" + std::string(name) + "' is not " + kNameRule +
           (name.find('/') != std::string_view::npos ? " (one '/' at most)" : "");
  }
  return "";
}

std::string LabelValueError(std::string_view s) {
  if (s.empty()) return "";
  if (s.size() > 63 || !IsNamePart(s)) return std::string("a label value is ") + kNameRule;
  return "";
}

std::vector<std::string> SplitCommaList(std::string_view list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(at, comma - at);
    const size_t b = item.find_first_not_of(" \t");
    item = b == std::string_view::npos ? std::string_view()
                                       : item.substr(b, item.find_last_not_of(" \t") - b + 1);
    out.emplace_back(item);
    at = comma + 1;
  }
  return out;
}

std::string PoolNodeName(std::string_view pool, int32_t index, int32_t count) {
  const size_t width = std::to_string(count > 1 ? count - 1 : 0).size();
  std::string idx = std::to_string(index);
  if (idx.size() < width) idx.insert(0, width - idx.size(), '0');
  return std::string(pool) + "-" + idx;
}

std::string PoolGpuUuid(std::string_view node, int32_t g) {
  return "GPU-" + std::string(node) + "-" + std::to_string(g);
}

}  // namespace allot::core
