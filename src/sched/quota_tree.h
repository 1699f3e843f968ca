// QuotaTree: quota and usage over the cohort tree, with Kueue's hierarchical
// cohort arithmetic (borrowingLimit, lendingLimit, nested cohorts).
//
// Nodes are ClusterQueues (leaves) and Cohorts (inner nodes). Quantities are
// indexed by a dense "flavor-resource" index (fr) and counted in
// milli-units. For every node and fr:
//   guaranteed   = max(0, subtree - lendingLimit) when lendingLimit is set,
//                  else 0: the part of its quota the node never lends;
//   subtree      = own nominal + sum over children (child.subtree -
//                  child.guaranteed): the quota the node can hand out;
//   usage        = own usage for a ClusterQueue; for a cohort, what its
//                  children take from it (their usage above their
//                  guaranteed part).
// Available(cq, fr) is what a ClusterQueue can take now: its unused
// guaranteed quota plus what its ancestors can give, capped by every
// borrowingLimit on the way up. PotentialAvailable is the same with no
// usage anywhere: the most it could ever hold.
//
// Not thread-safe; pure. Call Finalize() after the last SetQuota/AddNode and
// before any usage change or query.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace allot::sched {

class QuotaTree {
 public:
  explicit QuotaTree(int32_t num_fr) : num_fr_(num_fr) {}

  // Adds a node under `parent` (-1: a root). Returns its index.
  int32_t AddNode(int32_t parent);
  void SetParent(int32_t node, int32_t parent);
  void SetQuota(int32_t node, int32_t fr, int64_t nominal,
                std::optional<int64_t> borrowing_limit,
                std::optional<int64_t> lending_limit);
  // Computes subtree quotas bottom-up. Requires an acyclic tree.
  void Finalize();

  int32_t num_fr() const { return num_fr_; }
  int32_t Parent(int32_t node) const { return nodes_[node].parent; }
  int32_t Root(int32_t node) const;
  bool HasParent(int32_t node) const { return nodes_[node].parent >= 0; }
  const std::vector<int32_t>& Children(int32_t node) const {
    return nodes_[node].children;
  }
  int32_t NodeCount() const { return int32_t(nodes_.size()); }

  int64_t Nominal(int32_t node, int32_t fr) const {
    return At(node, fr).nominal;
  }
  int64_t Subtree(int32_t node, int32_t fr) const {
    return At(node, fr).subtree;
  }
  int64_t Usage(int32_t node, int32_t fr) const { return At(node, fr).usage; }
  int64_t Guaranteed(int32_t node, int32_t fr) const;
  std::optional<int64_t> BorrowingLimit(int32_t node, int32_t fr) const;
  std::optional<int64_t> LendingLimit(int32_t node, int32_t fr) const;

  // Usage above the node's own (subtree) quota; 0 when not borrowing.
  int64_t Borrowed(int32_t node, int32_t fr) const;
  int64_t Available(int32_t node, int32_t fr) const;
  // Computed by Finalize().
  int64_t PotentialAvailable(int32_t node, int32_t fr) const {
    return At(node, fr).potential;
  }

  // The part of the node's guaranteed quota it does not use
  // (Kueue's LocalAvailable): quota only its subtree sees.
  int64_t LocalAvailable(int32_t node, int32_t fr) const {
    const Cell& c = At(node, fr);
    return std::max<int64_t>(0, c.guaranteed - c.usage);
  }
  // Usage within its own (subtree) quota, with `extra` more.
  bool WithinQuota(int32_t node, int32_t fr, int64_t extra = 0) const {
    const Cell& c = At(node, fr);
    return c.usage + extra <= c.subtree;
  }
  // Distance from the node to the furthest leaf below it (0 for a
  // ClusterQueue or an empty cohort). Computed by Finalize().
  int32_t Height(int32_t node) const { return nodes_[node].height; }
  // Kueue's FindHeightOfLowestSubtreeThatFits: 0 when `val` more of `fr`
  // fits the node's own quota (or it has no parent); else the height of the
  // lowest ancestor whose subtree quota holds what the node cannot, or of
  // the root when none does. `*below_root` (may be null) says whether that
  // subtree is smaller than the whole tree: quota of its own subtree that
  // the node may reclaim from outside it.
  int32_t BorrowHeight(int32_t node, int32_t fr, int64_t val,
                       bool* below_root) const;

  void AddUsage(int32_t node, int32_t fr, int64_t val);
  void RemoveUsage(int32_t node, int32_t fr, int64_t val);

 private:
  struct Cell {
    int64_t nominal = 0;
    int64_t subtree = 0;
    int64_t usage = 0;
    int64_t borrowing_limit = -1;  // -1: unlimited.
    int64_t lending_limit = -1;    // -1: unlimited.
    int64_t guaranteed = 0;        // Guaranteed(), set by Finalize().
    int64_t potential = 0;         // PotentialAvailable(), set by Finalize().
  };
  struct Node {
    int32_t parent = -1;
    int32_t height = 0;  // Height(), set by Finalize().
    std::vector<int32_t> children;
  };
  Cell& At(int32_t node, int32_t fr) {
    return cells_[size_t(node) * num_fr_ + fr];
  }
  const Cell& At(int32_t node, int32_t fr) const {
    return cells_[size_t(node) * num_fr_ + fr];
  }
  // Deeper trees take the recursive path of Available().
  static constexpr int32_t kMaxDepth = 16;
  int64_t AvailableRecursive(int32_t node, int32_t fr) const;
  void FinalizeNode(int32_t node);
  void FinalizePotential(int32_t node);

  int32_t num_fr_;
  std::vector<Node> nodes_;
  std::vector<Cell> cells_;
};

}  // namespace allot::sched
