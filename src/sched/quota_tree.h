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
