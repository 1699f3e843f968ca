#include "ctrl/autoscaler.h"

#include <gtest/gtest.h>

#include <deque>

#include "core/pool_order.h"
#include "ctrl/test_view.h"

namespace allot::ctrl {
namespace {

using testing::TestView;
using State = PoolNodeView::State;

constexpr int64_t kMin = 60'000;
constexpr int64_t kNow = 1000 * kMin;  // 16:40 UTC on day 0.

// A node as the scenario states it; pools fill their remaining names with
// suspended nodes.
struct N {
  State state = State::kSuspended;
  int64_t since_ms = 0;
  int32_t gpus_free = 0;
  int64_t idle_since_ms = 0;
  int64_t underused_since_ms{};
  int64_t cpu_free{};  // Units.
  int64_t lost_since_ms{};
  std::vector<PoolNodeWorkload> workloads{};
  bool drained{};
  bool cordoned{};
};
N Booting(int64_t since) { return {State::kBooting, since, 0, 0}; }
N Ready(int32_t free, int64_t idle_since = 0) { return {State::kReady, 0, free, idle_since}; }
N Suspending() { return {State::kSuspending, kNow - kMin, 0, 0}; }

struct PoolCase {
  core::NodePool spec;
  std::vector<N> nodes{};
  int32_t failures = 0;
  int64_t retry_after_ms = 0;
  double arrivals_per_hour = 0;
  std::string last_error{};
  int64_t next_list_ms{};
};

core::NodePool Spec(const std::string& name, int32_t gpus, int32_t max,
                    const std::string& flavor = "h100") {
  core::NodePool p;
  p.name = name;
  p.node.labels = {{"gpu", flavor}};
  p.node.gpus.resize(size_t(gpus));
  p.max_nodes = max;
  p.boot_timeout_ms = 10 * kMin;
  p.scale_down_delay_ms = 10 * kMin;
  return p;
}
template <typename F>
core::NodePool With(core::NodePool p, F f) {
  f(p);
  return p;
}

sched::CapacityDemand Gang(const std::string& key, int32_t pods, int32_t gpus,
                           std::vector<std::string> flavors = {"h100"}) {
  sched::CapacityDemand d;
  d.key = key;
  d.flavors = std::move(flavors);
  sched::CapacityDemandPodSet& ps = d.pod_sets.emplace_back();
  ps.count = pods;
  ps.gpus = gpus;
  return d;
}

struct Case {
  const char* why;
  std::vector<PoolCase> pools;
  std::vector<sched::CapacityDemand> demand;
  std::vector<std::string> actions;  // Rendered as Render does.
  int64_t next_wake_ms = kNever;
  int64_t now_ms = kNow;
};

std::string Render(const Action& a) {
  std::string s = std::string(ToString(a.type)) + " " + a.target;
  if (!a.nodes.empty()) {
    s += " [";
    for (size_t i = 0; i < a.nodes.size(); ++i) s += (i ? " " : "") + a.nodes[i];
    s += "]";
  }
  if (a.type != Action::Type::kExplain) s += " " + a.reason;
  return s;
}

Plan RunCase(const Case& c, std::vector<std::string>* rendered, TestView* v = nullptr) {
  TestView local;
  TestView& view = v ? *v : local;
  std::deque<std::string> names;
  for (const PoolCase& pc : c.pools) {
    PoolView& pv = view.pools.emplace_back();
    pv.spec = &pc.spec;
    pv.failures_in_a_row = pc.failures;
    pv.retry_after_ms = pc.retry_after_ms;
    pv.arrival_gpus_per_hour = pc.arrivals_per_hour;
    pv.last_error = pc.last_error;
    pv.next_list_ms = pc.next_list_ms;
    for (int32_t i = 0; i < pc.spec.max_nodes; ++i) {
      names.push_back(pc.spec.name + "-" + std::to_string(i));
      PoolNodeView& n = pv.nodes.emplace_back();
      n.name = names.back();
      if (size_t(i) < pc.nodes.size()) {
        n.state = pc.nodes[size_t(i)].state;
        n.since_ms = pc.nodes[size_t(i)].since_ms;
        n.gpus_free = pc.nodes[size_t(i)].gpus_free;
        n.idle_since_ms = pc.nodes[size_t(i)].idle_since_ms;
        n.underused_since_ms = pc.nodes[size_t(i)].underused_since_ms;
        n.cpu_free = Quantity::FromUnits(pc.nodes[size_t(i)].cpu_free);
        n.lost_since_ms = pc.nodes[size_t(i)].lost_since_ms;
        n.workloads = pc.nodes[size_t(i)].workloads;
        n.drained = pc.nodes[size_t(i)].drained;
        n.cordoned = pc.nodes[size_t(i)].cordoned;
      }
    }
  }
  view.demand = c.demand;
  for (const char* f : {"h100", "a100"}) {
    core::ResourceFlavor& rf = view.flavors.emplace_back();
    rf.name = f;
    rf.node_labels = {{"gpu", f}};
  }
  Plan plan = Autoscaler().Run(view, c.now_ms);
  for (const Action& a : plan.actions) rendered->push_back(Render(a));
  return plan;
}

TEST(Autoscaler, Scenarios) {
  const Case cases[] = {
      {"no pools: nothing", {}, {Gang("t/a", 1, 8)}, {}},
      {"a gang asks for all its nodes at once",
       {{Spec("p", 8, 4)}},
       {Gang("t/a", 3, 8)},
       {"resume-nodes p [p-0 p-1 p-2] ScaleUp", "explain t/a"}, kNow + 10 * kMin},
      {"a gang larger than the pool's maxNodes asks for nothing (no half gang)",
       {{Spec("p", 8, 3)}},
       {Gang("t/big", 4, 8), Gang("t/small", 1, 8)},
       {"resume-nodes p [p-0] ScaleUp", "explain t/small"}, kNow + 10 * kMin},
      {"a pod larger than the node shape: nothing", {{Spec("p", 8, 4)}}, {Gang("t/a", 1, 16)}, {}},
      {"booting nodes are counted: the same backlog never asks twice",
       {{Spec("p", 8, 4), {Booting(kNow - kMin), Booting(kNow - kMin)}}},
       {Gang("t/a", 2, 8)},
       {"explain t/a"},
       kNow + 9 * kMin},
      {"one node booting, one more asked for",
       {{Spec("p", 8, 4), {Booting(kNow - kMin)}}},
       {Gang("t/a", 2, 8)},
       {"resume-nodes p [p-1] ScaleUp", "explain t/a"},
       kNow + 9 * kMin},
      {"free room on a ready node takes what it can hold",
       {{Spec("p", 8, 4), {Ready(8), Ready(2)}}},
       {Gang("t/a", 2, 8), Gang("t/b", 1, 2)},
       {"resume-nodes p [p-2] ScaleUp", "explain t/a"}, kNow + 10 * kMin},
      {"small pods pack onto one new node",
       {{Spec("p", 8, 4)}},
       {Gang("t/a", 1, 4), Gang("t/b", 1, 2), Gang("t/c", 1, 2)},
       {"resume-nodes p [p-0] ScaleUp", "explain t/a", "explain t/b", "explain t/c"}, kNow + 10 * kMin},
      {"on-prem before cloud, then the cheapest per GPU",
       {{With(Spec("cloud", 8, 4), [](auto& p) { p.location = "cloud"; })},
        {With(Spec("dear", 8, 4), [](auto& p) { p.price_micros_per_node_hour = 40; })},
        {With(Spec("cheap", 4, 4), [](auto& p) { p.price_micros_per_node_hour = 10; })}},
       {Gang("t/a", 1, 4)},
       {"resume-nodes cheap [cheap-0] ScaleUp", "explain t/a"}, kNow + 10 * kMin},
      {"a pool at maxNodes (suspending nodes count): the next pool",
       {{Spec("onprem", 8, 2), {Ready(0), Suspending()}},
        {With(Spec("cloud", 8, 4), [](auto& p) { p.location = "cloud"; })}},
       {Gang("t/a", 1, 8)},
       {"resume-nodes cloud [cloud-0] ScaleUp", "explain t/a"}, kNow + 10 * kMin},
      {"a pool backing off takes nothing until its retry time (and the workload hears why)",
       {{Spec("p", 8, 4), {}, 1, kNow + 30'000}},
       {Gang("t/a", 1, 8)},
       {"explain t/a"},
       kNow + 30'000},
      {"a degraded pool comes after a healthy one, whatever it costs",
       {{With(Spec("bad", 8, 4), [](auto& p) { p.failure_threshold = 2; }), {}, 2, 0},
        {With(Spec("good", 8, 4), [](auto& p) { p.location = "cloud"; })}},
       {Gang("t/a", 1, 8)},
       {"resume-nodes good [good-0] ScaleUp", "explain t/a"}, kNow + 10 * kMin},
      {"the first of the workload's flavors with a pool that fits",
       {{Spec("h", 8, 4, "h100")}, {Spec("a", 8, 4, "a100")}},
       {Gang("t/a", 1, 8, {"a100", "h100"})},
       {"resume-nodes a [a-0] ScaleUp", "explain t/a"}, kNow + 10 * kMin},
      {"a taint the pods do not tolerate: not that pool",
       {{With(Spec("tainted", 8, 4),
              [](auto& p) { p.node.taints = {{"spot", "true", core::TaintEffect::kNoSchedule}}; })}},
       {Gang("t/a", 1, 8)},
       {}},
      {"boot timeout: reported, not counted; the pool backs off before asking again",
       {{Spec("p", 8, 4), {Booting(kNow - 10 * kMin)}, 1}},
       {Gang("t/a", 1, 8)},
       {"boot-failed p [p-0] BootTimeout", "explain t/a"},
       kNow + 60'000},
      {"minNodes: brought up to it",
       {{With(Spec("p", 8, 4), [](auto& p) { p.min_nodes = 2; }), {Booting(kNow)}}},
       {},
       {"resume-nodes p [p-1] MinNodes"},
       kNow + 10 * kMin},
      {"headroom in GPUs: one more node when fewer are free",
       {{With(Spec("p", 8, 4), [](auto& p) { p.headroom_gpus = 12; }), {Ready(6)}}},
       {},
       {"resume-nodes p [p-1] Headroom"}, kNow + 10 * kMin},
      {"headroom by arrivals: 16 GPUs an hour over a 30-minute boot keeps 8 free",
       {{With(Spec("p", 8, 4),
              [](auto& p) {
                p.headroom_arrivals = true;
                p.boot_timeout_ms = 30 * kMin;
              }),
         {},
         0,
         0,
         16.0}},
       {},
       {"resume-nodes p [p-0] Headroom"}, kNow + 30 * kMin},
      {"idle for the scale-down delay: suspended",
       {{Spec("p", 8, 4), {Ready(8, kNow - 10 * kMin), Ready(8, kNow - 5 * kMin), Ready(0)}}},
       {},
       {"suspend-nodes p [p-0] ScaleDown"},
       kNow + 5 * kMin},
      {"the disruption budget: one suspending already, none more",
       {{Spec("p", 8, 4), {Ready(8, kNow - 20 * kMin), Suspending()}}},
       {},
       {}},
      {"a budget of 2: the two longest idle go",
       {{With(Spec("p", 8, 4), [](auto& p) { p.max_disrupted = 2; }),
         {Ready(8, kNow - 11 * kMin), Ready(8, kNow - 30 * kMin), Ready(8, kNow - 20 * kMin)}}},
       {},
       {"suspend-nodes p [p-1 p-2] ScaleDown"}},
      {"outside the disruption windows: wait for the next one",
       {{With(Spec("p", 8, 4), [](auto& p) { p.windows = {{22 * 60, 6 * 60}}; }),
         {Ready(8, kNow - 20 * kMin)}}},
       {},
       {},
       22 * 60 * kMin},
      {"inside a window across midnight: suspended",
       {{With(Spec("p", 8, 4), [](auto& p) { p.windows = {{22 * 60, 6 * 60}}; }),
         {Ready(8, 1 * 60 * kMin - 20 * kMin)}}},
       {},
       {"suspend-nodes p [p-0] ScaleDown"},
       kNever,
       1 * 60 * kMin},
      {"minNodes and headroom keep idle nodes",
       {{With(Spec("p", 8, 4), [](auto& p) { p.min_nodes = 1; }), {Ready(8, kNow - 20 * kMin)}},
        {With(Spec("q", 8, 4),
              [](auto& p) {
                p.headroom_gpus = 8;
                p.max_disrupted = 4;
              }),
         {Ready(8, kNow - 20 * kMin), Ready(8, kNow - 20 * kMin)}}},
       {},
       {"suspend-nodes q [q-0] ScaleDown"}},
      {"an idle node that demand was packed on stays",
       {{Spec("p", 8, 4), {Ready(8, kNow - 20 * kMin)}}},
       {Gang("t/a", 2, 8)},
       {"resume-nodes p [p-1] ScaleUp", "explain t/a"}, kNow + 10 * kMin},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    std::vector<std::string> got;
    Plan plan = RunCase(c, &got);
    EXPECT_EQ(got, c.actions);
    EXPECT_EQ(plan.next_wake_ms, c.next_wake_ms);
  }
}

// A ready node running `used` GPUs of preemptible (or not) work, underused
// since `since`.
N Underused(int32_t used, bool movable, int64_t since = kNow - 20 * kMin) {
  N n = Ready(8 - used);
  n.underused_since_ms = since;
  PoolNodeWorkload w;
  w.key = "t/w" + std::to_string(used);
  w.gpus = used;
  w.movable = movable;
  n.workloads = {w};
  return n;
}
N Busy(int32_t used) {
  N n = Ready(8 - used);
  PoolNodeWorkload w;
  w.key = "t/busy";
  w.gpus = used;
  n.workloads = {w};
  return n;
}

TEST(Autoscaler, ConsolidationMovesPreemptibleWorkOffAnUnderusedNode) {
  auto drained = [] {
    N n = Ready(8);
    n.drained = true;
    n.cordoned = true;
    return n;
  };
  const Case cases[] = {
      {"2 of 8 GPUs of preemptible work that fits beside the busy node: drained",
       {{Spec("p", 8, 4), {Underused(2, true), Busy(5)}}},
       {},
       {"consolidate p [p-0] Consolidation"}},
      {"not preemptible: stays",
       {{Spec("p", 8, 4), {Underused(2, false), Busy(5)}}},
       {},
       {}},
      {"no room elsewhere for it: stays",
       {{Spec("p", 8, 4), {Underused(4, true), Busy(6)}}},
       {},
       {}},
      {"underused for less than the scale-down delay: stays, looked at again then",
       {{Spec("p", 8, 4), {Underused(2, true, kNow - 2 * kMin), Busy(5)}}},
       {},
       {},
       kNow + 8 * kMin},
      {"the disruption budget is taken by a node suspending: stays",
       {{Spec("p", 8, 4), {Underused(2, true), Busy(5), Suspending()}}},
       {},
       {}},
      {"a drained node, empty now, is suspended at once; one draining uses the budget",
       {{Spec("p", 8, 4), {drained(), Underused(1, true), Busy(5)}}},
       {},
       {"suspend-nodes p [p-0] Consolidation"}},
      {"no cpu for it beside the busy node: stays",
       {{With(Spec("p", 8, 4), [](auto& p) { p.node.cpu = Quantity::FromUnits(32); }),
         {[] {
            N n = Underused(2, true);
            n.workloads[0].cpu_milli = 8000;
            return n;
          }(),
          [] {
            N n = Busy(5);
            n.cpu_free = 4;
            return n;
          }()}}},
       {},
       {}},
      {"minNodes holds it",
       {{With(Spec("p", 8, 4), [](auto& p) { p.min_nodes = 2; }), {Underused(2, true), Busy(5)}}},
       {},
       {}},
      {"the least used of two goes first, the other stays within the budget",
       {{Spec("p", 8, 4), {Underused(3, true), Underused(1, true), Busy(4)}}},
       {},
       {"consolidate p [p-1] Consolidation"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> got;
    Plan plan = RunCase(c, &got);
    EXPECT_EQ(got, c.actions) << c.why;
    EXPECT_EQ(plan.next_wake_ms, c.next_wake_ms) << c.why;
  }
  // It says what moves where.
  std::vector<std::string> got;
  Plan plan = RunCase(cases[0], &got);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].message,
            "p-0 had 2 of 8 GPUs allocated for 10m or more; its preemptible workloads move: "
            "t/w2 (room on p-1)");
}

TEST(Autoscaler, ANodeLostForItsBootTimeoutIsGivenUpAndItsSlotBootsAgain) {
  auto lost = [](int64_t since) {
    N n = Ready(0);
    n.lost_since_ms = since;
    return n;
  };
  const Case cases[] = {
      {"lost for 11 of the 10 boot minutes: suspended, whatever the budget",
       {{Spec("p", 8, 2), {lost(kNow - 11 * kMin), Suspending()}}},
       {},
       {"suspend-nodes p [p-0] NodeLost"}},
      {"lost for 3 minutes: kept (its agent may come back), looked at again then",
       {{Spec("p", 8, 2), {lost(kNow - 3 * kMin)}}},
       {Gang("t/a", 1, 8)},
       {"resume-nodes p [p-1] ScaleUp", "explain t/a"},
       kNow + 7 * kMin},
  };
  for (const Case& c : cases) {
    std::vector<std::string> got;
    Plan plan = RunCase(c, &got);
    EXPECT_EQ(got, c.actions) << c.why;
    EXPECT_EQ(plan.next_wake_ms, c.next_wake_ms) << c.why;
  }
}

TEST(Autoscaler, APoolsProviderIsAskedWhatRunsWhenItsListIsDue) {
  Case due{"", {{Spec("p", 8, 2)}}, {}, {"list-nodes p List"}};
  due.pools[0].next_list_ms = kNow;
  Case later{"", {{Spec("p", 8, 2)}}, {}, {}, kNow + 4 * kMin};
  later.pools[0].next_list_ms = kNow + 4 * kMin;
  for (const Case& c : {due, later}) {
    std::vector<std::string> got;
    Plan plan = RunCase(c, &got);
    EXPECT_EQ(got, c.actions);
    EXPECT_EQ(plan.next_wake_ms, c.next_wake_ms);
  }
}

TEST(Autoscaler, AClusterQueueMayAskForCloudFirstOrTheCheapest) {
  const Case c{"",
               {{With(Spec("cloud", 8, 4), [](auto& p) {
                   p.location = "cloud";
                   p.price_micros_per_node_hour = 50;
                 })},
                {With(Spec("edge", 8, 4), [](auto& p) {
                   p.location = "edge";
                   p.price_micros_per_node_hour = 10;
                 })},
                {With(Spec("onprem", 8, 4), [](auto& p) { p.price_micros_per_node_hour = 30; })}},
               {},
               {}};
  const std::pair<const char*, std::string> want[] = {
      {"", "onprem"},              // The default: on-prem first.
      {"cloud", "cloud"},          // Cloud, then the rest as by default.
      {"edge, cloud", "edge"},
      {"price", "edge"},           // The cheapest per GPU wherever it is.
  };
  for (const auto& [annotation, pool] : want) {
    TestView view;
    core::ClusterQueue& cq = view.queues.emplace_back();
    cq.name = "cq";
    if (*annotation) cq.annotations[core::kPoolOrderKey] = annotation;
    Case one = c;
    sched::CapacityDemand d = Gang("t/a", 1, 8);
    d.cluster_queue = "cq";
    one.demand = {d};
    std::vector<std::string> got;
    RunCase(one, &got, &view);
    ASSERT_FALSE(got.empty()) << annotation;
    EXPECT_EQ(got[0], "resume-nodes " + pool + " [" + pool + "-0] ScaleUp") << annotation;
  }
  EXPECT_FALSE(core::ParsePoolOrder("cloud,moon").ok());
  EXPECT_FALSE(core::ParsePoolOrder("cloud,cloud").ok());
  EXPECT_FALSE(core::ParsePoolOrder("").ok());
}

TEST(Autoscaler, PendingReasonsSayWhatTheWorkloadWaitsFor) {
  Case c{"", {{Spec("p", 8, 4), {Booting(kNow - 2 * kMin)}}}, {Gang("t/a", 2, 8)}, {}};
  c.pools[0].spec.boot_timeout_ms = 10 * kMin;
  std::vector<std::string> got;
  TestView view;
  Plan plan = RunCase(c, &got, &view);
  ASSERT_EQ(plan.actions.size(), 2u);
  const Action& a = plan.actions[1];
  EXPECT_EQ(a.type, Action::Type::kExplain);
  EXPECT_EQ(a.target, "t/a");
  // With no measured boot time, the boot timeout stands for it.
  EXPECT_EQ(a.message,
            "waits for 1 node of pool p, booting, ready in about 8m; and for 1 node of pool p "
            "asked for now (a boot takes about 10m)");
  EXPECT_EQ(plan.actions[0].message, "1 node (8 GPUs) for 1 pending workload that quota admits: t/a");
}

TEST(Autoscaler, AWorkloadHearsWhyItsPoolCannotStartNodes) {
  const std::string why = "pool p: /usr/local/sbin/pool resume exited with code 3: no capacity";
  Case c{"", {{Spec("p", 8, 4), {}, 2, kNow + 90'000}}, {Gang("t/a", 1, 8)}, {}};
  c.pools[0].last_error = why;
  std::vector<std::string> got;
  Plan plan = RunCase(c, &got);
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].type, Action::Type::kExplain);
  EXPECT_EQ(plan.actions[0].message,
            "pool p cannot start nodes before about 2m from now (2 failed boots in a row; last: " +
                why + ")");
}

TEST(Autoscaler, BootRetryDelayDoublesUpToTenMinutes) {
  EXPECT_EQ(BootRetryDelayMs(0), 0);
  EXPECT_EQ(BootRetryDelayMs(1), 30'000);
  EXPECT_EQ(BootRetryDelayMs(2), 60'000);
  EXPECT_EQ(BootRetryDelayMs(5), 480'000);
  EXPECT_EQ(BootRetryDelayMs(6), 600'000);
  EXPECT_EQ(BootRetryDelayMs(60), 600'000);
}

}  // namespace
}  // namespace allot::ctrl
