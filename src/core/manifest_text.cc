// Manifest reading, the input text before it becomes Trees: the check that
// it is UTF-8, which every text passes first, and the fast path for a body
// that is one JSON object, read with Boost.JSON's SAX parser into a Tree.
// Other text goes to yaml-cpp (manifest_yaml.cc); ParseManifests
// (manifest.cc) calls both.
#include <boost/json/basic_parser_impl.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/manifest_internal.h"

namespace allot::core::internal {
namespace {

// Builds a Tree from JSON text with Boost.JSON's SAX parser. Unlike
// boost::json::parse it keeps repeated keys (CheckFields then reports
// "field given twice", as for YAML) and the exact text of numbers.
class TreeBuilder {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  using ec_t = boost::system::error_code;
  using sv = boost::json::string_view;

  Tree root;
  // Set before parsing: JSON has no aliases, so only the node count can
  // outgrow the text; depth is the parser's own max_depth.
  int64_t max_nodes = 0;
  bool over_limit = false;  // Parsing stopped at max_nodes.

  bool on_document_begin(ec_t&) { return true; }
  bool on_document_end(ec_t&) { return true; }
  bool on_object_begin(ec_t&) { return Open(Tree::Type::kMap); }
  bool on_object_end(std::size_t, ec_t&) { return Close(); }
  bool on_array_begin(ec_t&) { return Open(Tree::Type::kSeq); }
  bool on_array_end(std::size_t, ec_t&) { return Close(); }
  bool on_key_part(sv s, std::size_t, ec_t&) { return Append(&key_, s); }
  bool on_key(sv s, std::size_t, ec_t&) {
    Append(&key_, s);
    have_key_ = true;
    return true;
  }
  bool on_string_part(sv s, std::size_t, ec_t&) { return Append(&text_, s); }
  bool on_string(sv s, std::size_t, ec_t&) {
    Append(&text_, s);
    return Scalar();
  }
  bool on_number_part(sv s, ec_t&) { return Append(&text_, s); }
  bool on_int64(int64_t, sv s, ec_t&) { return Number(s); }
  bool on_uint64(uint64_t, sv s, ec_t&) { return Number(s); }
  bool on_double(double, sv s, ec_t&) { return Number(s); }
  bool on_bool(bool b, ec_t&) {
    text_ = b ? "true" : "false";
    return Scalar();
  }
  bool on_null(ec_t&) {
    NewValue();
    return true;
  }
  bool on_comment_part(sv, ec_t&) { return true; }
  bool on_comment(sv, ec_t&) { return true; }

 private:
  static bool Append(std::string* to, sv s) {
    to->append(s.data(), s.size());
    return true;
  }
  // The slot of the next value: the root, the next item of a list, or the
  // value of the key just read.
  Tree* NewValue() {
    ++nodes_;
    if (stack_.empty()) return &root;
    Tree* top = stack_.back();
    if (top->type == Tree::Type::kMap) {
      top->keys.push_back(std::move(key_));
      key_.clear();
      have_key_ = false;
    }
    top->items.emplace_back();
    return &top->items.back();
  }
  bool Open(Tree::Type type) {
    if (nodes_ >= max_nodes) return Over();
    Tree* t = NewValue();
    t->type = type;
    stack_.push_back(t);
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }
  bool Over() {
    over_limit = true;
    return false;
  }
  bool Scalar() {
    if (nodes_ >= max_nodes) return Over();
    Tree* t = NewValue();
    t->type = Tree::Type::kScalar;
    t->scalar = std::move(text_);
    text_.clear();
    return true;
  }
  bool Number(sv last) {
    Append(&text_, last);
    return Scalar();
  }

  // Open containers; a pointer stays valid because only the innermost
  // container's item list grows.
  std::vector<Tree*> stack_;
  int64_t nodes_ = 0;
  std::string key_;
  bool have_key_ = false;
  std::string text_;
};

}  // namespace

// A body that is one JSON object is read with Boost.JSON (an API client's
// usual body; about 10x faster than yaml-cpp). Anything else, including
// JSON that Boost.JSON rejects, goes to yaml-cpp, which also reports
// syntax errors with line and column. A body over a limit is refused here,
// not read a second time.
Status TryJson(const std::string& text, const std::string& file,
               const ParseLimits& limits, std::vector<Tree>* docs, bool* done) {
  *done = false;
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string::npos || text[i] != '{') return Status::Ok();
  boost::json::parse_options opts;
  opts.max_depth = static_cast<std::size_t>(limits.max_depth);
  boost::json::basic_parser<TreeBuilder> p(opts);
  p.handler().max_nodes = limits.max_nodes;
  boost::system::error_code ec;
  size_t n = p.write_some(false, text.data(), text.size(), ec);
  if (ec == boost::json::error::too_deep) {
    return Status::InvalidArgument(file + ": nested deeper than " +
                                   std::to_string(limits.max_depth) +
                                   " levels (the limit on nesting)");
  }
  if (p.handler().over_limit) {
    return Status::InvalidArgument(
        file + ": more than " + std::to_string(limits.max_nodes) +
        " nodes (the limit on values in one input, aliases expanded)");
  }
  if (ec || n != text.size() || !p.done()) return Status::Ok();
  docs->push_back(std::move(p.handler().root));
  *done = true;
  return Status::Ok();
}

// Checked before any parsing: the text is UTF-8 (the store keeps JSON,
// which must be UTF-8; invalid bytes once stored would stop the server from
// loading it). (The stray ',' that Debian's yaml-cpp 0.7 loops on needs no
// check: ParseYamlText's document loop cannot spin.)
Status CheckText(const std::string& text, const std::string& file) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), line = 1;
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c == '\n') ++line;
    size_t len = c < 0x80         ? 1
                 : (c >> 5) == 6  ? 2
                 : (c >> 4) == 14 ? 3
                 : (c >> 3) == 30 ? 4
                                  : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;  // No overlong forms.
    if (ok && len == 3) {
      unsigned cp =
          ((c & 15u) << 12) | ((p[i + 1] & 63u) << 6) | (p[i + 2] & 63u);
      ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok && len == 4) {
      unsigned cp = ((c & 7u) << 18) | ((p[i + 1] & 63u) << 12) |
                    ((p[i + 2] & 63u) << 6) | (p[i + 3] & 63u);
      ok = cp >= 0x10000 && cp <= 0x10FFFF;
    }
    if (!ok) {
      return Status::InvalidArgument(file + ": line " + std::to_string(line) +
                                     ": the text is not valid UTF-8");
    }
    i += len;
  }
  return Status::Ok();
}

}  // namespace allot::core::internal
