// The allot.dev/v1 NodePool kind: expansion into Nodes and its errors.
#include <gtest/gtest.h>

#include <string>

#include "core/manifest.h"

namespace allot::core {
namespace {

TEST(NodePoolTest, ExpandsIntoNamedNodesWithGpus) {
  // 12 nodes: indexes 0..11 are padded to two digits, so names sort in
  // pool order; metadata.labels and spec.labels both land on every node.
  Config c;
  Status s = ParseManifests(R"(
apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: pool, labels: {zone: a, tier: x}}
spec:
  count: 12
  gpus: 8
  product: V100
  gpuMemory: 32Gi
  cpu: "64"
  memory: 512Gi
  labels: {gpu.nvidia.com/model: V100, tier: y}
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
)",
                            "pool.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(c.nodes.size(), 12u);
  EXPECT_EQ(c.nodes[0].name, "pool-00");
  EXPECT_EQ(c.nodes[11].name, "pool-11");
  const Node& n = c.nodes[11];
  ASSERT_EQ(n.gpus.size(), 8u);
  EXPECT_EQ(n.gpus[7].uuid, "GPU-pool-11-7");
  EXPECT_EQ(n.gpus[7].product, "V100");
  EXPECT_EQ(n.gpus[7].memory, Quantity::Parse("32Gi").value());
  EXPECT_EQ(n.cpu.milli(), 64000);
  EXPECT_EQ(n.labels.at("zone"), "a");
  EXPECT_EQ(n.labels.at("tier"), "y");
  EXPECT_EQ(n.labels.at("gpu.nvidia.com/model"), "V100");
  ASSERT_EQ(n.taints.size(), 1u);
  EXPECT_EQ(n.source.kind, "NodePool");
  EXPECT_TRUE(ValidateConfig(&c).ok());
}

TEST(NodePoolTest, ErrorsNameFileDocumentAndField) {
  struct Case {
    const char* name;
    const char* spec;
    const char* field;
    const char* words;
  };
  const Case cases[] = {
      {"count missing", "gpus: 8", "spec.count", "required"},
      {"count zero", "count: 0", "spec.count", "between 1 and"},
      {"gpus negative", "count: 1\n  gpus: -1", "spec.gpus", "between 0"},
      {"unknown field", "count: 1\n  gpu: 8", "spec.gpu", "unknown field"},
      {"bad memory", "count: 1\n  memory: lots", "spec.memory", ""},
      // Bounded expansion: a small body must not become gigabytes.
      {"too many nodes", "count: 20001", "spec.count", "between 1 and 20000"},
      {"too many gpus", "count: 1\n  gpus: 17", "spec.gpus", "between 0 and 16"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Config c;
    std::string text =
        std::string("---\n---\napiVersion: allot.dev/v1\nkind: NodePool\n"
                    "metadata: {name: p}\nspec:\n  ") +
        k.spec + "\n";
    Status s = ParseManifests(text, "f.yaml", &c);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.field(), k.field);
    EXPECT_NE(s.message().find("f.yaml: document 1 (NodePool p)"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find(k.words), std::string::npos) << s.message();
    EXPECT_TRUE(c.nodes.empty());
  }
}

TEST(NodePoolTest, AllPoolsTogetherAreBounded) {
  std::string text;
  for (const char* name : {"a", "b", "c"}) {
    text += std::string("---\napiVersion: allot.dev/v1\nkind: NodePool\nmetadata: {name: ") +
            name + "}\nspec: {count: 8000, gpus: 8}\n";
  }
  Config c;
  Status s = ParseManifests(text, "f.yaml", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("at most 20000 nodes in all"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("NodePool c"), std::string::npos) << s.message();
}

TEST(NodePoolTest, DuplicateNodeNamesThePool) {
  // A Node named like a pool's node is a duplicate that ValidateConfig
  // reports against one of the two documents.
  Config c;
  Status s = ParseManifests(R"(
apiVersion: allot.dev/v1
kind: Node
metadata: {name: p-1}
---
apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: p}
spec: {count: 2, gpus: 1}
)",
                            "f.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  Status v = ValidateConfig(&c);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("p-1"), std::string::npos) << v.message();
}

TEST(NodePoolTest, WithAProviderItIsAutoscaledAndKept) {
  Config c;
  Status s = ParseManifests(R"(
apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: h100-cloud}
spec:
  minNodes: 1
  maxNodes: 16
  gpus: 8
  product: H100
  cpu: "96"
  labels: {allot.dev/flavor: h100}
  taints: [{key: cloud, value: "true", effect: NoSchedule}]
  provider: {type: exec, command: [/usr/local/sbin/pool, --region, x]}
  location: cloud
  zone: us-east-1a
  pricePerNodeHour: "98.32"
  bootTimeout: 15m
  scaleDownDelay: 5m
  disruptionBudget: {maxNodes: 2, windows: ["22:00-06:30"]}
  headroom: {gpus: 8, arrivals: true}
  failureThreshold: 4
---
apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: sim}
spec: {maxNodes: 4, gpus: 4, provider: {type: simulated, bootDelay: 3m, failureRate: "0.25"},
       headroom: {arrivals: 30m}}
)",
                            "pools.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.nodes.empty());  // Nothing expanded.
  ASSERT_EQ(c.node_pools.size(), 2u);
  const NodePool& p = c.node_pools[0];
  EXPECT_EQ(p.name, "h100-cloud");
  EXPECT_EQ(p.min_nodes, 1);
  EXPECT_EQ(p.max_nodes, 16);
  ASSERT_EQ(p.node.gpus.size(), 8u);
  EXPECT_EQ(p.node.gpus[0].product, "H100");
  EXPECT_EQ(p.node.cpu.milli(), 96000);
  EXPECT_EQ(p.node.labels.at("allot.dev/flavor"), "h100");
  ASSERT_EQ(p.node.taints.size(), 1u);
  EXPECT_EQ(p.provider.type, PoolProvider::Type::kExec);
  EXPECT_EQ(p.provider.command,
            (std::vector<std::string>{"/usr/local/sbin/pool", "--region", "x"}));
  EXPECT_EQ(p.location, "cloud");
  EXPECT_EQ(p.zone, "us-east-1a");
  EXPECT_EQ(p.price_micros_per_node_hour, 98320000);
  EXPECT_EQ(p.boot_timeout_ms, 15 * 60000);
  EXPECT_EQ(p.scale_down_delay_ms, 5 * 60000);
  EXPECT_EQ(p.max_disrupted, 2);
  ASSERT_EQ(p.windows.size(), 1u);
  EXPECT_EQ(p.windows[0], std::make_pair(22 * 60, 6 * 60 + 30));
  EXPECT_EQ(p.headroom_gpus, 8);
  EXPECT_TRUE(p.headroom_arrivals);
  EXPECT_EQ(p.headroom_window_ms, 0);  // One boot time.
  EXPECT_EQ(p.failure_threshold, 4);
  const NodePool& q = c.node_pools[1];
  EXPECT_EQ(q.location, "onprem");  // The defaults.
  EXPECT_EQ(q.min_nodes, 0);
  EXPECT_EQ(q.boot_timeout_ms, 600000);
  EXPECT_EQ(q.provider.type, PoolProvider::Type::kSimulated);
  EXPECT_EQ(q.provider.boot_delay_ms, 180000);
  EXPECT_DOUBLE_EQ(q.provider.failure_rate, 0.25);
  EXPECT_TRUE(q.headroom_arrivals);
  EXPECT_EQ(q.headroom_window_ms, 30 * 60000);
  EXPECT_TRUE(ValidateConfig(&c).ok());
}

TEST(NodePoolTest, AutoscaledPoolErrors) {
  struct Case {
    const char* name;
    const char* spec;
    const char* field;
    const char* words;
  };
  const Case cases[] = {
      {"count with provider", "count: 2\n  maxNodes: 2\n  provider: {type: local}",
       "spec.count", "remove count"},
      {"max missing", "provider: {type: local}", "spec.maxNodes", "required"},
      {"max zero", "maxNodes: 0\n  provider: {type: local}", "spec.maxNodes",
       "between 1 and 20000"},
      {"min above max", "minNodes: 3\n  maxNodes: 2\n  provider: {type: local}",
       "spec.minNodes", "between 0 and maxNodes (2)"},
      {"autoscaling field without provider", "count: 1\n  maxNodes: 2",
       "spec.maxNodes", "give spec.provider"},
      {"unknown provider", "maxNodes: 2\n  provider: {type: ipmi}",
       "spec.provider.type", "exec, local, simulated"},
      {"exec without command", "maxNodes: 2\n  provider: {type: exec}",
       "spec.provider.command", "required"},
      {"command on local", "maxNodes: 2\n  provider: {type: local, command: [x]}",
       "spec.provider.command", "is for type exec"},
      {"boot delay on exec",
       "maxNodes: 2\n  provider: {type: exec, command: [x], bootDelay: 1m}",
       "spec.provider.bootDelay", "is for types simulated and local"},
      {"failure rate above 1",
       "maxNodes: 2\n  provider: {type: simulated, failureRate: \"1.5\"}",
       "spec.provider.failureRate", "between 0 and 1"},
      {"bad location", "maxNodes: 2\n  provider: {type: local}\n  location: moon",
       "spec.location", "onprem, edge or cloud"},
      {"bad price", "maxNodes: 2\n  provider: {type: local}\n  pricePerNodeHour: cheap",
       "spec.pricePerNodeHour", "malformed price"},
      {"bad duration", "maxNodes: 2\n  provider: {type: local}\n  scaleDownDelay: soon",
       "spec.scaleDownDelay", ""},
      {"zero boot timeout", "maxNodes: 2\n  provider: {type: local}\n  bootTimeout: 0s",
       "spec.bootTimeout", "longer than 0s"},
      {"bad window",
       "maxNodes: 2\n  provider: {type: local}\n  disruptionBudget: {windows: [\"25:00-01:00\"]}",
       "spec.disruptionBudget.windows[0]", "HH:MM-HH:MM"},
      {"negative headroom", "maxNodes: 2\n  provider: {type: local}\n  headroom: {gpus: -1}",
       "spec.headroom.gpus", "negative"},
      {"bad arrivals", "maxNodes: 2\n  provider: {type: local}\n  headroom: {arrivals: often}",
       "spec.headroom.arrivals", "a window such as 30m"},
      {"zero threshold", "maxNodes: 2\n  provider: {type: local}\n  failureThreshold: 0",
       "spec.failureThreshold", "at least 1"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Config c;
    std::string text =
        std::string("apiVersion: allot.dev/v1\nkind: NodePool\n"
                    "metadata: {name: p}\nspec:\n  ") +
        k.spec + "\n";
    Status s = ParseManifests(text, "f.yaml", &c);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.field(), k.field) << s.message();
    EXPECT_NE(s.message().find(k.words), std::string::npos) << s.message();
    EXPECT_TRUE(c.node_pools.empty());
  }
}

}  // namespace
}  // namespace allot::core
