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

}  // namespace
}  // namespace allot::core
