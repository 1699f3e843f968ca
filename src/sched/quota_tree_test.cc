// QuotaTree: Kueue's hierarchical cohort arithmetic, checked against the
// worked examples of Kueue's docs (concepts/cluster_queue: "Borrowing
// example", "BorrowingLimit", "LendingLimit"; concepts/cohort: hierarchical
// cohorts with cohort-level quota) and against hand-computed trees.
//
// Every case builds a tree for one flavor-resource (fr 0), applies usage to
// ClusterQueues, then checks each named node. Numbers are whole units (the
// tree does not care about milli-units).
#include "sched/quota_tree.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace allot::sched {
namespace {

struct NodeSpec {
  NodeSpec(std::string n, std::string p, int64_t nom,
           std::optional<int64_t> bl = std::nullopt,
           std::optional<int64_t> ll = std::nullopt)
      : name(std::move(n)),
        parent(std::move(p)),
        nominal(nom),
        borrowing_limit(bl),
        lending_limit(ll) {}
  std::string name;
  std::string parent;  // "" for a root; must be declared earlier.
  int64_t nominal = 0;
  std::optional<int64_t> borrowing_limit;
  std::optional<int64_t> lending_limit;
};

// Expected values of one node; nullopt: not checked.
struct Expect {
  std::string node;
  std::optional<int64_t> subtree;
  std::optional<int64_t> guaranteed;
  std::optional<int64_t> usage;
  std::optional<int64_t> available;
  std::optional<int64_t> potential;
  std::optional<int64_t> borrowed;
};

struct Case {
  std::string name;
  std::vector<NodeSpec> nodes;
  std::vector<std::pair<std::string, int64_t>> usage;  // AddUsage, in order.
  std::vector<Expect> expect;
};

struct Built {
  QuotaTree tree{1};
  std::map<std::string, int32_t> idx;
};

void Build(const std::vector<NodeSpec>& nodes, Built* b) {
  for (const NodeSpec& n : nodes) {
    int32_t parent = n.parent.empty() ? -1 : b->idx.at(n.parent);
    int32_t i = b->tree.AddNode(parent);
    b->idx[n.name] = i;
    b->tree.SetQuota(i, 0, n.nominal, n.borrowing_limit, n.lending_limit);
  }
  b->tree.Finalize();
}

void Check(const Built& b, const Expect& e) {
  SCOPED_TRACE("node " + e.node);
  int32_t n = b.idx.at(e.node);
  // value_or(actual) turns an unchecked field into a trivially true check.
  EXPECT_EQ(b.tree.Subtree(n, 0), e.subtree.value_or(b.tree.Subtree(n, 0)))
      << "subtree";
  EXPECT_EQ(b.tree.Guaranteed(n, 0),
            e.guaranteed.value_or(b.tree.Guaranteed(n, 0)))
      << "guaranteed";
  EXPECT_EQ(b.tree.Usage(n, 0), e.usage.value_or(b.tree.Usage(n, 0)))
      << "usage";
  EXPECT_EQ(b.tree.Available(n, 0),
            e.available.value_or(b.tree.Available(n, 0)))
      << "available";
  EXPECT_EQ(b.tree.PotentialAvailable(n, 0),
            e.potential.value_or(b.tree.PotentialAvailable(n, 0)))
      << "potential";
  EXPECT_EQ(b.tree.Borrowed(n, 0), e.borrowed.value_or(b.tree.Borrowed(n, 0)))
      << "borrowed";
}

constexpr std::nullopt_t _ = std::nullopt;

TEST(QuotaTreeTest, Scenarios) {
  // Nodes: {name, parent, nominal, borrowingLimit, lendingLimit}.
  // Expectations: {node, subtree, guaranteed, usage, available, potential,
  // borrowed}; _ is not checked.
  const std::vector<Case> cases = {
      // Kueue docs, "Borrowing example": team-a (9) and team-b (12) share
      // cohort team-ab. With team-b idle, team-a can admit up to 12+9=21;
      // the cohort's subtree is the sum of its children's quota.
      {"docs borrowing example, idle cohort",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12}},
       {},
       {{"team-ab", 21, 0, 0, 21, 21, _},
        {"team-a", 9, 0, 0, 21, 21, 0},
        {"team-b", 12, 0, 0, 21, 21, 0}}},
      // Same cohort, team-b uses 10: its usage lands in the cohort (no
      // lendingLimit, nothing guaranteed), leaving 21-10=11 for team-a.
      // team-b is not borrowing (10 <= 12).
      {"docs borrowing example, team-b uses 10",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12}},
       {{"team-b", 10}},
       {{"team-ab", 21, _, 10, 11, _, _},
        {"team-a", _, _, 0, 11, 21, 0},
        {"team-b", _, _, 10, 11, 21, 0}}},
      // team-a uses 11 of its 9: it borrows 2 (Borrowed is usage above the
      // node's own quota). team-b still has 21-11=10 available, which
      // includes its whole nominal (12) minus what team-a borrowed.
      {"borrowed is usage above own quota",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12}},
       {{"team-a", 11}},
       {{"team-a", _, _, 11, 10, _, 2}, {"team-b", _, _, 0, 10, _, 0}}},
      // Kueue docs, "BorrowingLimit": team-a has nominal 9 and
      // borrowingLimit 1, so with team-b idle it can use 9+1=10; team-b
      // (no limit) can use 12+9=21.
      {"docs borrowingLimit example",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9, 1},
        {"team-b", "team-ab", 12}},
       {},
       {{"team-a", _, _, _, 10, 10, _}, {"team-b", _, _, _, 21, 21, _}}},
      // borrowingLimit after usage: team-a already uses 5 of its 9 and may
      // still borrow 1, so 4+1=5 are available, although the cohort has
      // 21-5=16 unused.
      {"borrowingLimit caps what is left to borrow",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9, 1},
        {"team-b", "team-ab", 12}},
       {{"team-a", 5}},
       {{"team-ab", _, _, 5, 16, _, _},
        {"team-a", _, _, 5, 5, 10, 0},
        {"team-b", _, _, 0, 16, 21, _}}},
      // borrowingLimit 0: the ClusterQueue never goes above its nominal,
      // whatever the cohort has.
      {"borrowingLimit zero",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9, 0},
        {"team-b", "team-ab", 12}},
       {{"team-a", 4}},
       {{"team-a", _, _, 4, 5, 9, 0}}},
      // Kueue docs, "LendingLimit": team-b has nominal 12 and lendingLimit
      // 1, so 12-1=11 is guaranteed to it and only 1 reaches the cohort.
      // team-a can use 9+1=10; team-b can use its 11 plus everything the
      // cohort holds (9+1), i.e. 9+12=21.
      {"docs lendingLimit example",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12, _, 1}},
       {},
       {{"team-ab", 10, 0, 0, 10, 10, _},
        {"team-a", 9, 0, 0, 10, 10, _},
        {"team-b", 12, 11, 0, 21, 21, _}}},
      // Docs, continued: while team-b stays within 12-1=11, team-a can still
      // admit 10. team-b's usage stays in its guaranteed part; the cohort
      // sees none of it.
      {"lendingLimit: usage within guaranteed stays local",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12, _, 1}},
       {{"team-b", 11}},
       {{"team-ab", _, _, 0, 10, _, _},
        {"team-a", _, _, 0, 10, _, _},
        {"team-b", _, _, 11, 10, _, 0}}},
      // team-b uses 12: one unit above its guaranteed 11 is taken from the
      // cohort, so team-a has 10-1=9 left.
      {"lendingLimit: usage above guaranteed reaches the cohort",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12, _, 1}},
       {{"team-b", 12}},
       {{"team-ab", _, _, 1, 9, _, _},
        {"team-a", _, _, 0, 9, _, _},
        {"team-b", _, _, 12, 9, _, 0}}},
      // lendingLimit 0 guarantees the whole nominal: nobody can borrow from
      // team-b, while team-b can still borrow team-a's 9.
      {"lendingLimit zero lends nothing",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12, _, 0}},
       {},
       {{"team-ab", 9, _, _, 9, _, _},
        {"team-a", _, 0, _, 9, 9, _},
        {"team-b", _, 12, _, 21, 21, _}}},
      // A lendingLimit above the quota guarantees nothing (max(0, 12-20)).
      {"lendingLimit above quota guarantees nothing",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12, _, 20}},
       {},
       {{"team-ab", 21, _, _, _, _, _}, {"team-b", _, 0, _, 21, 21, _}}},
      // Both limits: nominal 8, lendingLimit 2 (6 guaranteed), borrowingLimit
      // 3. With team-y (10) idle it can use 8+3=11 (not 6+12=18): the cap
      // counts the 2 it stored in the cohort plus the 3 it may borrow.
      {"lendingLimit and borrowingLimit together, idle",
       {{"c", "", 0}, {"x", "c", 8, 3, 2}, {"y", "c", 10}},
       {},
       {{"c", 12, _, _, 12, _, _},
        {"x", 8, 6, _, 11, 11, _},
        {"y", 10, 0, _, 12, 12, _}}},
      // x uses 9: 6 guaranteed + 3 from the cohort. It may hold 11, so 2
      // remain; the cohort has 12-3=9 unused, which y can take.
      {"lendingLimit and borrowingLimit together, in use",
       {{"c", "", 0}, {"x", "c", 8, 3, 2}, {"y", "c", 10}},
       {{"x", 9}},
       {{"c", _, _, 3, 9, _, _},
        {"x", _, _, 9, 2, 11, 1},
        {"y", _, _, 0, 9, _, _}}},
      // A ClusterQueue with no cohort is its own root: nominal minus usage,
      // never more.
      {"ClusterQueue without cohort",
       {{"solo", "", 8}},
       {{"solo", 3}},
       {{"solo", 8, 0, 3, 5, 8, 0}}},
      // Hierarchical cohorts with cohort-level quota (Kueue docs,
      // concepts/cohort): org holds 4 of its own; research (no quota) holds
      // a (8) and b (8); prod holds c (8, lendingLimit 2 -> 6 guaranteed).
      // org's subtree = 4 + 16 + (8-6) = 22. a can reach all of it; c can
      // reach its 6 plus the 22 = 28, which is the whole tree (4+8+8+8).
      {"nested cohorts with cohort quota",
       {{"org", "", 4},
        {"research", "org", 0},
        {"prod", "org", 0},
        {"a", "research", 8},
        {"b", "research", 8},
        {"c", "prod", 8, _, 2}},
       {},
       {{"org", 22, 0, 0, 22, 22, _},
        {"research", 16, 0, 0, 22, 22, _},
        {"prod", 2, 0, 0, 22, 22, _},
        {"a", 8, 0, 0, 22, 22, _},
        {"c", 8, 6, 0, 28, 28, _}}},
      // a uses 20: 8 of its own, 8 of b's and 4 from above research (org's
      // own quota or c's lendable 2). Usage flows up unchanged (nothing
      // guaranteed on the way): research and org both count 20. research
      // borrows 20-16=4 from org; 22-20=2 is left for a, b and prod.
      {"nested cohorts, usage flows to the root",
       {{"org", "", 4},
        {"research", "org", 0},
        {"prod", "org", 0},
        {"a", "research", 8},
        {"b", "research", 8},
        {"c", "prod", 8, _, 2}},
       {{"a", 20}},
       {{"org", _, _, 20, 2, _, _},
        {"research", _, _, 20, 2, _, 4},
        {"a", _, _, 20, 2, 22, 12},
        {"b", _, _, 0, 2, _, 0},
        {"c", _, _, 0, 8, 28, _}}},
      // c uses 7: 6 stay in its guaranteed part, 1 reaches prod and org.
      {"nested cohorts, guaranteed part stops propagation",
       {{"org", "", 4},
        {"research", "org", 0},
        {"prod", "org", 0},
        {"a", "research", 8},
        {"b", "research", 8},
        {"c", "prod", 8, _, 2}},
       {{"c", 7}},
       {{"org", _, _, 1, 21, _, _},
        {"prod", _, _, 1, 21, _, 0},
        {"c", _, _, 7, 21, _, 0},
        {"a", _, _, 0, 21, _, _}}},
      // A borrowingLimit on a cohort caps its whole subtree: research may
      // take at most 2 beyond its 16, so a sees 18 even though org has 22.
      {"cohort borrowingLimit caps the subtree",
       {{"org", "", 4},
        {"research", "org", 0, 2},
        {"prod", "org", 0},
        {"a", "research", 8},
        {"b", "research", 8},
        {"c", "prod", 8, _, 2}},
       {},
       {{"research", 16, _, _, 18, 18, _},
        {"a", _, _, _, 18, 18, _},
        {"b", _, _, _, 18, 18, _},
        {"c", _, _, _, 28, 28, _}}},
      // A lendingLimit on a cohort: research lends at most 4 of its 16, so
      // 12 are guaranteed to it; org's subtree = 4 + 4 + 2 = 10. c reaches
      // 6 + 10 = 16; a still reaches research's 12 plus org's 10 = 22.
      {"cohort lendingLimit guarantees part of the subtree",
       {{"org", "", 4},
        {"research", "org", 0, _, 4},
        {"prod", "org", 0},
        {"a", "research", 8},
        {"b", "research", 8},
        {"c", "prod", 8, _, 2}},
       {},
       {{"org", 10, _, _, 10, 10, _},
        {"research", 16, 12, _, 22, 22, _},
        {"a", _, _, _, 22, 22, _},
        {"c", _, _, _, 16, 16, _}}},
      // Same tree, a uses 14: research's guaranteed 12 absorbs 12, only 2
      // reach org. c now sees 6 + (10-2) = 14.
      {"cohort lendingLimit, usage above the guaranteed part",
       {{"org", "", 4},
        {"research", "org", 0, _, 4},
        {"prod", "org", 0},
        {"a", "research", 8},
        {"b", "research", 8},
        {"c", "prod", 8, _, 2}},
       {{"a", 14}},
       {{"org", _, _, 2, 8, _, _},
        {"research", _, _, 14, 8, _, _},
        {"a", _, _, 14, 8, _, 6},
        {"c", _, _, 0, 14, _, _}}},
      // A quota only at the cohort level: ClusterQueues with 0 nominal can
      // still run on the cohort's 16 (Kueue: cohort quota is lent to its
      // subtree), but nothing is theirs: Borrowed counts all their usage.
      {"quota only on the cohort",
       {{"pool", "", 16}, {"a", "pool", 0}, {"b", "pool", 0}},
       {{"a", 10}},
       {{"pool", 16, _, 10, 6, 16, _},
        {"a", 0, 0, 10, 6, 16, 10},
        {"b", 0, 0, 0, 6, 16, 0}}},
      // Over-commitment (possible when quotas shrink under running work):
      // Available clamps at 0 rather than going negative.
      {"available never negative",
       {{"team-ab", "", 0},
        {"team-a", "team-ab", 9},
        {"team-b", "team-ab", 12}},
       {{"team-a", 15}, {"team-b", 12}},
       {{"team-ab", _, _, 27, 0, _, _},
        {"team-a", _, _, 15, 0, _, 6},
        {"team-b", _, _, 12, 0, _, 0}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Built b;
    Build(c.nodes, &b);
    for (const auto& [node, val] : c.usage)
      b.tree.AddUsage(b.idx.at(node), 0, val);
    for (const Expect& e : c.expect) Check(b, e);
  }
}

// AddUsage then RemoveUsage of the same amounts, in any order, must bring
// every node back to zero, and removing must undo exactly what adding did at
// each step in between (Kueue's addUsage/removeUsage are inverses as long as
// usage is removed no more than it was added). The tree mixes a guaranteed
// part (lendingLimit) at the ClusterQueue and at the cohort level, so the
// "stored in parent" split is exercised.
TEST(QuotaTreeTest, AddRemoveUsageSymmetry) {
  Built b;
  Build({{"org", "", 4},
         {"research", "org", 0, _, 6},
         {"a", "research", 8, _, 3},
         {"b", "research", 8},
         {"c", "org", 8, 2}},
        &b);
  const int32_t a = b.idx.at("a"), bb = b.idx.at("b"), c = b.idx.at("c");
  auto snapshot = [&] {
    std::vector<int64_t> s;
    for (const auto& [name, i] : b.idx) s.push_back(b.tree.Usage(i, 0));
    return s;
  };
  const std::vector<std::pair<int32_t, int64_t>> adds = {
      {a, 3}, {a, 4}, {bb, 9}, {c, 5}, {a, 2}, {bb, 1}};
  std::vector<std::vector<int64_t>> before;
  for (const auto& [n, v] : adds) {
    before.push_back(snapshot());
    b.tree.AddUsage(n, 0, v);
  }
  // a's guaranteed part is 8-3=5: of its 9, 4 reach research. research's
  // subtree is (8-5)+8=11 and its lendingLimit 6 guarantees it 11-6=5: it
  // holds 4+10=14, of which 14-5=9 reach org; c adds its 5.
  EXPECT_EQ(b.tree.Subtree(b.idx.at("research"), 0), 11);
  EXPECT_EQ(b.tree.Guaranteed(b.idx.at("research"), 0), 5);
  EXPECT_EQ(b.tree.Usage(a, 0), 9);
  EXPECT_EQ(b.tree.Usage(b.idx.at("research"), 0), 14);
  EXPECT_EQ(b.tree.Usage(b.idx.at("org"), 0), 14);

  // LIFO removal restores each intermediate state exactly.
  for (int i = int(adds.size()) - 1; i >= 0; --i) {
    b.tree.RemoveUsage(adds[i].first, 0, adds[i].second);
    EXPECT_EQ(snapshot(), before[i]) << "after undoing add #" << i;
  }

  // FIFO removal ends at zero too, with consistent totals on the way: a
  // cohort's usage is always what its children hold above their guaranteed
  // part.
  for (const auto& [n, v] : adds) b.tree.AddUsage(n, 0, v);
  for (const auto& [n, v] : adds) {
    b.tree.RemoveUsage(n, 0, v);
    int64_t research =
        std::max<int64_t>(0, b.tree.Usage(a, 0) - 5) + b.tree.Usage(bb, 0);
    EXPECT_EQ(b.tree.Usage(b.idx.at("research"), 0), research);
    int64_t org = std::max<int64_t>(0, research - 5) + b.tree.Usage(c, 0);
    EXPECT_EQ(b.tree.Usage(b.idx.at("org"), 0), org);
  }
  for (const auto& [name, i] : b.idx) EXPECT_EQ(b.tree.Usage(i, 0), 0) << name;
}

// Flavor-resources are independent: usage of one never changes another's
// availability, and limits are per fr.
TEST(QuotaTreeTest, FlavorResourcesAreIndependent) {
  QuotaTree t(2);
  int32_t cohort = t.AddNode(-1);
  int32_t a = t.AddNode(cohort);
  int32_t b = t.AddNode(cohort);
  t.SetQuota(a, 0, 8, 0, std::nullopt);  // fr 0: a may not borrow.
  t.SetQuota(a, 1, 4, std::nullopt, std::nullopt);
  t.SetQuota(b, 0, 8, std::nullopt, std::nullopt);
  t.SetQuota(b, 1, 4, std::nullopt, 0);  // fr 1: b lends nothing.
  t.Finalize();
  t.AddUsage(b, 0, 6);
  // fr 0: a is capped at its nominal 8; b's 6 leave 10 in the cohort.
  EXPECT_EQ(t.Available(a, 0), 8);
  EXPECT_EQ(t.PotentialAvailable(a, 0), 8);
  EXPECT_EQ(t.Available(b, 0), 10);
  // fr 1 is untouched by fr 0's usage: a sees only its own 4 (b lends 0),
  // b sees its 4 plus a's 4.
  EXPECT_EQ(t.Available(a, 1), 4);
  EXPECT_EQ(t.Available(b, 1), 8);
  EXPECT_EQ(t.Usage(cohort, 1), 0);
  EXPECT_EQ(t.BorrowingLimit(a, 0), std::optional<int64_t>(0));
  EXPECT_EQ(t.BorrowingLimit(a, 1), std::nullopt);
  EXPECT_EQ(t.LendingLimit(b, 1), std::optional<int64_t>(0));
}

// PotentialAvailable ignores usage everywhere: it is the most a
// ClusterQueue could ever hold, used to tell "preempt" from "never fits".
TEST(QuotaTreeTest, PotentialAvailableIgnoresUsage) {
  Built b;
  Build({{"org", "", 4},
         {"research", "org", 0, 2},
         {"a", "research", 8, 6},
         {"b", "research", 8},
         {"c", "org", 8, _, 2}},
        &b);
  const int32_t a = b.idx.at("a");
  // research can reach 16+2=18 from org; a is capped by 8+6=14.
  EXPECT_EQ(b.tree.PotentialAvailable(a, 0), 14);
  EXPECT_EQ(b.tree.PotentialAvailable(b.idx.at("b"), 0), 18);
  // c: 6 guaranteed plus org's whole subtree (4 + 16 + 2 = 22).
  EXPECT_EQ(b.tree.PotentialAvailable(b.idx.at("c"), 0), 28);
  b.tree.AddUsage(b.idx.at("b"), 0, 16);
  b.tree.AddUsage(b.idx.at("c"), 0, 8);
  // Now research holds 16 of its 16 and org 16+2 of its 22: a can only get
  // the 2 research may still borrow, but could potentially hold 14.
  EXPECT_EQ(b.tree.Available(a, 0), 2);
  EXPECT_EQ(b.tree.PotentialAvailable(a, 0), 14);
  EXPECT_EQ(b.tree.PotentialAvailable(b.idx.at("c"), 0), 28);
}

// Re-parenting before Finalize moves a subtree: the old parent loses it.
TEST(QuotaTreeTest, SetParentMovesSubtree) {
  QuotaTree t(1);
  int32_t old_root = t.AddNode(-1);
  int32_t new_root = t.AddNode(-1);
  int32_t cq = t.AddNode(old_root);
  t.SetQuota(cq, 0, 5, std::nullopt, std::nullopt);
  t.SetParent(cq, new_root);
  t.Finalize();
  EXPECT_EQ(t.Subtree(old_root, 0), 0);
  EXPECT_EQ(t.Subtree(new_root, 0), 5);
  EXPECT_EQ(t.Root(cq), new_root);
  EXPECT_EQ(t.Parent(cq), new_root);
  EXPECT_TRUE(t.HasParent(cq));
  EXPECT_FALSE(t.HasParent(new_root));
}

// Heights and Kueue's FindHeightOfLowestSubtreeThatFits (the borrowing
// height that orders heads and ranks flavors). Tree (nominal quota):
//   root(0) - mid(4) - leaf(0) - q(2)
//           \_ other(0)         \_ sib(0)
TEST(QuotaTreeTest, BorrowHeight) {
  Built b;
  Build({{"root", "", 0},
         {"mid", "root", 4},
         {"leaf", "mid", 0},
         {"q", "leaf", 2},
         {"sib", "leaf", 0},
         {"other", "root", 0}},
        &b);
  const auto at = [&](const char* n) { return b.idx.at(n); };
  EXPECT_EQ(b.tree.Height(at("q")), 0);
  EXPECT_EQ(b.tree.Height(at("leaf")), 1);
  EXPECT_EQ(b.tree.Height(at("mid")), 2);
  EXPECT_EQ(b.tree.Height(at("root")), 3);
  bool below_root = false;
  // Within q's own quota: 0, and q may reclaim (it has a parent).
  EXPECT_EQ(b.tree.BorrowHeight(at("q"), 0, 2, &below_root), 0);
  EXPECT_TRUE(below_root);
  // 3 does not fit q (2) nor leaf (2), fits mid (6): mid's height.
  EXPECT_EQ(b.tree.BorrowHeight(at("q"), 0, 3, &below_root), 2);
  EXPECT_TRUE(below_root);
  // other borrows from the root, the only subtree holding its 2.
  b.tree.AddUsage(at("other"), 0, 4);
  EXPECT_EQ(b.tree.BorrowHeight(at("other"), 0, 2, &below_root), 3);
  EXPECT_FALSE(below_root);
  // mid's subtree (6) still holds 3 for q although root has only 2 left:
  // q may reclaim it from other.
  EXPECT_EQ(b.tree.BorrowHeight(at("q"), 0, 3, &below_root), 2);
  EXPECT_TRUE(below_root);
  // 7 is more than any subtree holds: the root's height, not below it.
  EXPECT_EQ(b.tree.BorrowHeight(at("q"), 0, 7, &below_root), 3);
  EXPECT_FALSE(below_root);
  EXPECT_EQ(b.tree.LocalAvailable(at("q"), 0), 0);  // No lendingLimit.
  EXPECT_TRUE(b.tree.WithinQuota(at("mid"), 0, 6));
  EXPECT_FALSE(b.tree.WithinQuota(at("mid"), 0, 7));
}

}  // namespace
}  // namespace allot::sched
