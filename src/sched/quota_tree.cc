#include "sched/quota_tree.h"

#include <algorithm>

#include "core/status.h"

namespace allot::sched {

int32_t QuotaTree::AddNode(int32_t parent) {
  int32_t idx = static_cast<int32_t>(nodes_.size());
  nodes_.push_back(Node{});
  cells_.resize(cells_.size() + num_fr_);
  SetParent(idx, parent);
  return idx;
}

void QuotaTree::SetParent(int32_t node, int32_t parent) {
  Node& n = nodes_[node];
  if (n.parent >= 0) {
    auto& sib = nodes_[n.parent].children;
    sib.erase(std::find(sib.begin(), sib.end(), node));
  }
  n.parent = parent;
  if (parent >= 0) nodes_[parent].children.push_back(node);
}

void QuotaTree::SetQuota(int32_t node, int32_t fr, int64_t nominal,
                         std::optional<int64_t> borrowing_limit,
                         std::optional<int64_t> lending_limit) {
  Cell& c = At(node, fr);
  c.nominal = nominal;
  c.borrowing_limit = borrowing_limit.value_or(-1);
  c.lending_limit = lending_limit.value_or(-1);
}

void QuotaTree::Finalize() {
  for (int32_t n = 0; n < static_cast<int32_t>(nodes_.size()); ++n) {
    if (nodes_[n].parent < 0) {
      FinalizeNode(n);
      FinalizePotential(n);
    }
  }
}

// Top-down, once subtree quotas are known: the most a node could hold
// with no usage anywhere (see PotentialAvailable).
void QuotaTree::FinalizePotential(int32_t node) {
  const int32_t parent = nodes_[node].parent;
  for (int32_t fr = 0; fr < num_fr_; ++fr) {
    Cell& c = At(node, fr);
    if (parent < 0) {
      c.potential = c.subtree;
    } else {
      c.potential = c.guaranteed + At(parent, fr).potential;
      if (c.borrowing_limit >= 0)
        c.potential = std::min(c.potential, c.subtree + c.borrowing_limit);
    }
  }
  for (int32_t child : nodes_[node].children) FinalizePotential(child);
}

void QuotaTree::FinalizeNode(int32_t node) {
  nodes_[node].height = 0;
  for (int32_t child : nodes_[node].children) {
    FinalizeNode(child);
    nodes_[node].height =
        std::max(nodes_[node].height, nodes_[child].height + 1);
  }
  for (int32_t fr = 0; fr < num_fr_; ++fr) {
    int64_t s = At(node, fr).nominal;
    for (int32_t child : nodes_[node].children) {
      s += At(child, fr).subtree - Guaranteed(child, fr);
    }
    Cell& c = At(node, fr);
    c.subtree = s;
    c.guaranteed =
        c.lending_limit < 0 ? 0 : std::max<int64_t>(0, s - c.lending_limit);
  }
}

int32_t QuotaTree::Root(int32_t node) const {
  while (nodes_[node].parent >= 0) node = nodes_[node].parent;
  return node;
}

int64_t QuotaTree::Guaranteed(int32_t node, int32_t fr) const {
  return At(node, fr).guaranteed;
}

std::optional<int64_t> QuotaTree::BorrowingLimit(int32_t node,
                                                 int32_t fr) const {
  const Cell& c = At(node, fr);
  if (c.borrowing_limit < 0) return std::nullopt;
  return c.borrowing_limit;
}

std::optional<int64_t> QuotaTree::LendingLimit(int32_t node, int32_t fr) const {
  const Cell& c = At(node, fr);
  if (c.lending_limit < 0) return std::nullopt;
  return c.lending_limit;
}

int64_t QuotaTree::Borrowed(int32_t node, int32_t fr) const {
  const Cell& c = At(node, fr);
  return std::max<int64_t>(0, c.usage - c.subtree);
}

int32_t QuotaTree::BorrowHeight(int32_t node, int32_t fr, int64_t val,
                                bool* below_root) const {
  bool ignored;
  if (below_root == nullptr) below_root = &ignored;
  *below_root = HasParent(node);
  if (!HasParent(node) || WithinQuota(node, fr, val)) return 0;
  int64_t remaining = val - LocalAvailable(node, fr);
  int32_t n = Parent(node);
  for (; n >= 0; n = Parent(n)) {
    if (WithinQuota(n, fr, remaining)) {
      *below_root = HasParent(n);
      return Height(n);
    }
    remaining -= LocalAvailable(n, fr);
  }
  *below_root = false;
  return Height(Root(node));
}

int64_t QuotaTree::Available(int32_t node, int32_t fr) const {
  // From the root down: what each node on the path can take.
  int32_t path[kMaxDepth];
  int32_t depth = 0;
  for (int32_t n = node; n >= 0; n = nodes_[n].parent) {
    if (depth == kMaxDepth) return AvailableRecursive(node, fr);
    path[depth++] = n;
  }
  const Cell& root = At(path[depth - 1], fr);
  int64_t avail = std::max<int64_t>(0, root.subtree - root.usage);
  for (int32_t i = depth - 2; i >= 0; --i) {
    const Cell& c = At(path[i], fr);
    int64_t local = std::max<int64_t>(0, c.guaranteed - c.usage);
    int64_t from_parent = avail;
    if (c.borrowing_limit >= 0) {
      int64_t stored_in_parent = c.subtree - c.guaranteed;
      int64_t used_in_parent = std::max<int64_t>(0, c.usage - c.guaranteed);
      int64_t cap = stored_in_parent - used_in_parent + c.borrowing_limit;
      from_parent = std::min(from_parent, cap);
    }
    avail = std::max<int64_t>(0, local + from_parent);
  }
  return avail;
}

int64_t QuotaTree::AvailableRecursive(int32_t node, int32_t fr) const {
  const Cell& c = At(node, fr);
  if (nodes_[node].parent < 0) return std::max<int64_t>(0, c.subtree - c.usage);
  int64_t local = std::max<int64_t>(0, c.guaranteed - c.usage);
  int64_t from_parent = AvailableRecursive(nodes_[node].parent, fr);
  if (c.borrowing_limit >= 0) {
    int64_t stored_in_parent = c.subtree - c.guaranteed;
    int64_t used_in_parent = std::max<int64_t>(0, c.usage - c.guaranteed);
    int64_t cap = stored_in_parent - used_in_parent + c.borrowing_limit;
    from_parent = std::min(from_parent, cap);
  }
  return std::max<int64_t>(0, local + from_parent);
}

void QuotaTree::AddUsage(int32_t node, int32_t fr, int64_t val) {
  while (node >= 0 && val > 0) {
    Cell& c = At(node, fr);
    int64_t local = std::max<int64_t>(0, Guaranteed(node, fr) - c.usage);
    c.usage += val;
    val -= local;
    node = nodes_[node].parent;
  }
}

void QuotaTree::RemoveUsage(int32_t node, int32_t fr, int64_t val) {
  while (node >= 0 && val > 0) {
    Cell& c = At(node, fr);
    int64_t stored_in_parent = c.usage - Guaranteed(node, fr);
    c.usage -= val;
    ALLOT_CHECK(c.usage >= 0);
    if (stored_in_parent <= 0) return;
    val = std::min(val, stored_in_parent);
    node = nodes_[node].parent;
  }
}

}  // namespace allot::sched
