// metadata.generateName: reading it, and the names GenerateNames picks.
#include "core/generate_name.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/manifest.h"

namespace allot::core {
namespace {

constexpr char kJob[] = R"(apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template: {spec: {containers: [{name: c}]}}
)";

Config Parse(const std::string& text) {
  Config c;
  Status s = ParseManifests(text, "test.yaml", &c);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

// Returns the values of `script` in turn (then 0s): a random source whose
// draws a test chooses.
std::function<uint64_t()> Scripted(std::vector<uint64_t> script) {
  auto q = std::make_shared<std::deque<uint64_t>>(script.begin(), script.end());
  return [q] {
    if (q->empty()) return uint64_t{0};
    uint64_t v = q->front();
    q->pop_front();
    return v;
  };
}

TEST(GenerateNameTest, ReadsWithoutAName) {
  Config c = Parse(kJob);
  ASSERT_EQ(c.workloads.size(), 1u);
  EXPECT_EQ(c.workloads[0].name, "");
  EXPECT_EQ(c.workloads[0].generate_name, "sample-job-");
  EXPECT_EQ(c.workloads[0].ns, "team-a");
}

// Five characters of Kubernetes' alphabet (index 0 is 'b', 26 is '9'),
// after the prefix cut to 58 characters.
TEST(GenerateNameTest, SuffixAndPrefix) {
  EXPECT_EQ(GenerateName("job-", Scripted({0, 1, 26, 27, 53})), "job-bc9b9");
  const std::string long_prefix(70, 'a');
  std::string name = GenerateName(long_prefix, Scripted({}));
  EXPECT_EQ(name, std::string(58, 'a') + "bbbbb");
  // Random draws give names of lower-case consonants and digits.
  auto random = SeededRandom(7);
  for (int i = 0; i < 100; ++i) {
    std::string n = GenerateName("p-", random);
    ASSERT_EQ(n.size(), 7u);
    EXPECT_EQ(n.find_first_not_of("bcdfghjklmnpqrstvwxz2456789", 2),
              std::string::npos)
        << n;
  }
}

// A name that exists (on the server, or earlier in the same body) is drawn
// again; names are per kind and, for namespaced kinds, per namespace.
TEST(GenerateNameTest, RetriesOnCollision) {
  Config c = Parse(std::string(kJob) + "---\n" + kJob);
  std::set<std::string> existing = {"team-a/sample-job-bbbbb"};
  auto taken = [&](std::string_view kind, const std::string& key) {
    return kind == "Workload" && existing.count(key) > 0;
  };
  // First Job: bbbbb (taken), then ccccc. Second: ccccc (just given), then
  // ddddd.
  Status s = GenerateNames(
      &c, taken, Scripted({0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2}));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.workloads[0].name, "sample-job-ccccc");
  EXPECT_EQ(c.workloads[1].name, "sample-job-ddddd");
  EXPECT_EQ(c.workloads[0].generate_name, "sample-job-");  // Kept.
}

TEST(GenerateNameTest, GivesUpWhenEveryDrawIsTaken) {
  Config c = Parse(kJob);
  Status s = GenerateNames(
      &c, [](std::string_view, const std::string&) { return true; },
      SeededRandom(1));
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.field(), "metadata.generateName");
  EXPECT_NE(s.message().find("test.yaml: document 0 (Job "
                             "team-a/sample-job-*): metadata.generateName: 16 "
                             "generated names were all taken"),
            std::string::npos)
      << s.message();
}

// A generated Namespace gets its name label with its name.
TEST(GenerateNameTest, NamespaceGetsItsLabel) {
  Config c = Parse("apiVersion: v1\nkind: Namespace\nmetadata: {generateName: t-}\n");
  ASSERT_TRUE(GenerateNames(&c, nullptr, Scripted({})).ok());
  EXPECT_EQ(c.namespaces[0].name, "t-bbbbb");
  EXPECT_EQ(c.namespaces[0].labels.at(kNamespaceNameLabel), "t-bbbbb");
}

// Until named, an object does not validate; a name given with
// generateName is the name.
TEST(GenerateNameTest, ValidateNeedsNames) {
  Config c = Parse(kJob);
  Status s = ValidateConfig(&c);
  EXPECT_EQ(s.field(), "metadata.generateName");
  Config given = Parse(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f, generateName: f-}
)");
  EXPECT_EQ(given.flavors[0].name, "f");
  EXPECT_EQ(given.flavors[0].generate_name, "f-");
}

TEST(GenerateNameTest, BadUses) {
  struct Case {
    std::string yaml, message, field;
  };
  const std::vector<Case> cases = {
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: "
       "{namespace: a}\nspec: {clusterQueue: cq}\n",
       "metadata.name: required field is missing (or give "
       "metadata.generateName for a generated name)",
       "metadata.name"},
      {"apiVersion: allot.dev/v1\nkind: NodePool\nmetadata: {generateName: "
       "p-}\nspec: {count: 1}\n",
       "a NodePool names its nodes after metadata.name", "metadata.generateName"},
      {"apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: "
       "{kubernetes.io/metadata.name: b}}\n",
       "must be the namespace's own name \"a\" (Kubernetes sets it), not \"b\"",
       "metadata.labels[kubernetes.io/metadata.name]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    Config config;
    Status s = ParseManifests(c.yaml, "bad.yaml", &config);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_EQ(s.field(), c.field);
  }
}

}  // namespace
}  // namespace allot::core
