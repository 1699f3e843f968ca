// YAML text -> Trees, from yaml-cpp's event parser, within a ParseLimits
// budget.
//
// yaml-cpp's own Node API (YAML::LoadAll) is not used, for two reasons:
//  - Aliases share one node there, and copying such a graph into Trees
//    expands it: a 1 KiB "billion laughs" becomes gigabytes, and `&a [*a]`
//    is a cycle. Here an alias copies its anchor's finished subtree, and
//    every copied node and byte is counted against the budget before it is
//    made; an alias to a node that is still open is an error.
//  - Debian's yaml-cpp 0.7 never ends LoadAll on a token that cannot start
//    a node at the top of a document (a stray ',': jbeder/yaml-cpp#1040):
//    each document then consumes nothing and yields a null, forever. Here
//    the document loop checks that every document starts past where the
//    previous one started, so no input can make it spin, whatever the token.
// Depth, node count, alias count and text bytes are checked on every event,
// so a refusal happens before the memory is spent.
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <deque>
#include <sstream>
#include <string>
#include <vector>

#include "core/manifest_internal.h"

namespace allot::core::internal {
namespace {

// Thrown from the event handler through yaml-cpp's parser (which unwinds
// cleanly: it uses exceptions itself) and caught in ParseYamlText.
struct Refused {
  Status status;
};

class TreeEvents : public YAML::EventHandler {
 public:
  TreeEvents(const ParseLimits& limits, const std::string& file,
             std::vector<Tree>* docs)
      : limits_(limits), file_(file), docs_(docs) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (static_cast<int64_t>(docs_->size()) >= limits_.max_documents) {
      Refuse(mark, "more than " + std::to_string(limits_.max_documents) +
                       " documents (the limit on documents in one input)");
    }
    docs_->emplace_back();
    doc_start_ = mark;
    anchors_.clear();
    root_done_ = false;
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Tree* t = Slot(mark);
    t->type = Tree::Type::kNull;
    Done(anchor, *t, nodes_ - 1, bytes_);
  }

  void OnScalar(const YAML::Mark& mark, const std::string&,
                YAML::anchor_t anchor, const std::string& value) override {
    int64_t bytes_before = bytes_;
    Tree* t = Slot(mark);
    AddBytes(mark, static_cast<int64_t>(value.size()));
    t->type = Tree::Type::kScalar;
    t->scalar = value;
    Done(anchor, *t, nodes_ - 1, bytes_before);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (++aliases_ > limits_.max_aliases) {
      Refuse(mark, "more than " + std::to_string(limits_.max_aliases) +
                       " aliases (the limit on aliases in one input)");
    }
    if (anchor >= anchors_.size() || !anchors_[anchor].done) {
      Refuse(mark, anchor < anchors_.size() && anchors_[anchor].open
                       ? "an alias refers to a node that contains it"
                       : "an alias refers to an anchor that cannot be used "
                         "here (a mapping key that is not a scalar)");
    }
    const Anchor& a = anchors_[anchor];
    // Copying the subtree makes a.nodes nodes and a.bytes bytes: count
    // them first, then copy.
    alias_nodes_ += a.nodes;
    if (alias_nodes_ > limits_.max_alias_nodes) {
      Refuse(mark, "aliases expand to more than " +
                       std::to_string(limits_.max_alias_nodes) +
                       " nodes (the limit on nodes copied by aliases)");
    }
    Tree* t = Slot(mark);
    --nodes_;  // Slot counted the copy's root; a.nodes includes it.
    AddNodes(mark, a.nodes);
    AddBytes(mark, a.bytes);
    *t = Find(a);
    Complete();
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    Open(mark, Tree::Type::kSeq, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&,
                  YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    Open(mark, Tree::Type::kMap, anchor);
  }
  void OnMapEnd() override { Close(); }

  // Where the last document started.
  const YAML::Mark& doc_start() const { return doc_start_; }

 private:
  // An open mapping or list.
  struct Frame {
    Tree* node = nullptr;
    YAML::anchor_t anchor = YAML::NullAnchor;
    int64_t nodes_before = 0;  // nodes_ before this node was counted.
    int64_t bytes_before = 0;
    bool value_next = false;  // kMap: the next node is a value.
    bool key_ok = false;      // kMap: the pending key is a scalar.
    bool in_key = false;      // This node is a mapping key (or its part).
    Tree key;                 // kMap: the pending key.
    Tree dropped;             // kMap: the value of a key that is no scalar.
  };
  struct Anchor {
    bool open = false;
    bool done = false;
    std::vector<size_t> path;  // Item indices from the document's root.
    bool copied = false;       // A scalar outside the tree: `copy` holds it.
    Tree copy;
    int64_t nodes = 0;
    int64_t bytes = 0;
  };

  [[noreturn]] void Refuse(const YAML::Mark& mark, const std::string& what) {
    std::string where = mark.is_null() ? ""
                        : " at line " + std::to_string(mark.line + 1) +
                              ", column " + std::to_string(mark.column + 1);
    throw Refused{Status::InvalidArgument(file_ + where + ": " + what)};
  }

  void AddNodes(const YAML::Mark& mark, int64_t n) {
    nodes_ += n;
    if (nodes_ > limits_.max_nodes) {
      Refuse(mark, "more than " + std::to_string(limits_.max_nodes) +
                       " nodes (the limit on values in one input, aliases "
                       "expanded)");
    }
  }
  void AddBytes(const YAML::Mark& mark, int64_t n) {
    bytes_ += n;
    if (bytes_ > limits_.max_text_bytes) {
      Refuse(mark, "more than " + std::to_string(limits_.max_text_bytes) +
                       " bytes of text (the limit on the size of one input's "
                       "values, aliases expanded)");
    }
  }

  // Where the next node goes; counts it.
  Tree* Slot(const YAML::Mark& mark) {
    AddNodes(mark, 1);
    if (frames_.empty()) {
      if (root_done_) Refuse(mark, "a second node at the top of a document");
      return &docs_->back();
    }
    Frame& top = frames_.back();
    if (top.node->type == Tree::Type::kSeq) {
      top.node->items.emplace_back();
      return &top.node->items.back();
    }
    if (!top.value_next) {
      top.key = Tree();
      return &top.key;
    }
    if (!top.key_ok) {
      top.dropped = Tree();
      return &top.dropped;
    }
    top.node->keys.push_back(std::move(top.key.scalar));
    top.node->items.emplace_back();
    return &top.node->items.back();
  }

  // Whether the slot just handed out is outside the document's tree (a
  // mapping key, or the value of a key that is no scalar).
  bool SlotIsLoose() const {
    for (const Frame& f : frames_) {
      if (f.in_key) return true;
    }
    if (frames_.empty()) return false;
    const Frame& top = frames_.back();
    return top.node->type == Tree::Type::kMap &&
           (!top.value_next || !top.key_ok);
  }

  // The path of the slot just handed out (a scalar's, or an open node's
  // own: frames_ then ends with it).
  std::vector<size_t> PathOfLast(size_t frames) const {
    std::vector<size_t> path;
    for (size_t i = 0; i < frames; ++i) {
      path.push_back(frames_[i].node->items.size() - 1);
    }
    return path;
  }

  // A finished scalar or null node, with anchor `anchor`. One outside the
  // tree (a key) is copied: its size is the input's own.
  void Done(YAML::anchor_t anchor, const Tree& t, int64_t nodes_before,
            int64_t bytes_before) {
    if (anchor != YAML::NullAnchor) {
      Anchor& a = AnchorAt(anchor);
      a.done = true;
      a.copied = SlotIsLoose();
      if (a.copied) {
        a.copy = t;
      } else {
        a.path = PathOfLast(frames_.size());
      }
      a.nodes = nodes_ - nodes_before;
      a.bytes = bytes_ - bytes_before;
    }
    Complete();
  }

  Anchor& AnchorAt(YAML::anchor_t anchor) {
    if (anchor >= anchors_.size()) anchors_.resize(anchor + 1);
    return anchors_[anchor];
  }

  const Tree& Find(const Anchor& a) const {
    if (a.copied) return a.copy;
    const Tree* t = &docs_->back();
    for (size_t i : a.path) t = &t->items[i];
    return *t;
  }

  // The node just made (or closed) is finished: a mapping now wants its
  // value or its next key.
  void Complete() {
    if (frames_.empty()) {
      root_done_ = true;
      return;
    }
    Frame& top = frames_.back();
    if (top.node->type != Tree::Type::kMap) return;
    if (!top.value_next) {
      top.key_ok = top.key.type == Tree::Type::kScalar;
      if (!top.key_ok) top.node->bad_key = true;
      top.value_next = true;
    } else {
      top.value_next = false;
    }
  }

  void Open(const YAML::Mark& mark, Tree::Type type, YAML::anchor_t anchor) {
    if (static_cast<int>(frames_.size()) >= limits_.max_depth) {
      Refuse(mark, "nested deeper than " + std::to_string(limits_.max_depth) +
                       " levels (the limit on nesting)");
    }
    int64_t nodes_before = nodes_, bytes_before = bytes_;
    Tree* t = Slot(mark);
    bool loose = SlotIsLoose();
    t->type = type;
    Frame& f = frames_.emplace_back();
    f.node = t;
    f.anchor = anchor;
    f.nodes_before = nodes_before;
    f.bytes_before = bytes_before;
    f.in_key = loose;
    if (anchor != YAML::NullAnchor) AnchorAt(anchor).open = true;
  }

  void Close() {
    Frame& f = frames_.back();
    YAML::anchor_t anchor = f.anchor;
    int64_t nodes_before = f.nodes_before, bytes_before = f.bytes_before;
    bool loose = f.in_key;
    std::vector<size_t> path = PathOfLast(frames_.size() - 1);
    frames_.pop_back();
    if (anchor != YAML::NullAnchor) {
      Anchor& a = AnchorAt(anchor);
      a.open = false;
      if (!loose) {
        a.done = true;
        a.path = std::move(path);
        a.nodes = nodes_ - nodes_before;
        a.bytes = bytes_ - bytes_before;
      }
    }
    Complete();
  }

  const ParseLimits& limits_;
  const std::string& file_;
  std::vector<Tree>* docs_;
  // A deque: a key's frame points into its parent frame's `key`, which
  // must not move when frames are pushed.
  std::deque<Frame> frames_;
  std::vector<Anchor> anchors_;  // By yaml-cpp's anchor id (per document).
  YAML::Mark doc_start_;
  bool root_done_ = false;
  int64_t nodes_ = 0, bytes_ = 0, aliases_ = 0, alias_nodes_ = 0;
};

}  // namespace

Status ParseYamlText(const std::string& text, const std::string& file,
                     const ParseLimits& limits, std::vector<Tree>* docs) {
  std::vector<Tree> out;
  TreeEvents events(limits, file, &out);
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    int last_line = -1, last_column = -1;
    while (parser.HandleNextDocument(events)) {
      // A document must consume something: one that starts where the last
      // one started consumed nothing, and so would every next one.
      const YAML::Mark& m = events.doc_start();
      if (m.line < last_line || (m.line == last_line && m.column <= last_column)) {
        size_t pos = m.pos >= 0 ? static_cast<size_t>(m.pos) : text.size();
        std::string what = pos < text.size() && text[pos] >= 0x20
                               ? "'" + std::string(1, text[pos]) + "'"
                               : "this token";
        return Status::InvalidArgument(
            file + ": line " + std::to_string(m.line + 1) + ", column " +
            std::to_string(m.column + 1) + ": " + what +
            " where a document or value should start (a ',' outside any "
            "{...} or [...]? write one mapping per document)");
      }
      last_line = m.line;
      last_column = m.column;
    }
  } catch (const Refused& r) {
    return r.status;
  } catch (const YAML::Exception& e) {
    std::string where =
        e.mark.is_null() ? ""
                         : " at line " + std::to_string(e.mark.line + 1) +
                               ", column " + std::to_string(e.mark.column + 1);
    return Status::InvalidArgument(file + ": YAML error" + where + ": " +
                                   e.msg);
  }
  for (Tree& t : out) docs->push_back(std::move(t));
  return Status::Ok();
}

}  // namespace allot::core::internal
