// How `allot apply` finds the v1 Secrets among a file's documents: the
// YAML stream cut into documents and joined again without changing what
// the server reads or how it numbers the documents.
#include "cli/secret.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/manifest.h"

namespace allot::cli {
namespace {

std::string Join(const std::vector<std::string>& docs) {
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) out += (i == 0 ? "" : "---\n") + docs[i];
  return out;
}

TEST(SplitYamlDocumentsTest, CutsWhereYamlDoesAndJoinsBackAlike) {
  auto named = [](const std::string& n) {
    return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + n + "}\n";
  };
  // A leading ---, a comment on a separator, CRLF, "..." ends followed by
  // a bare document and by a ---, an empty document, and a block scalar
  // holding "---" indented (not a separator).
  const std::string text = "---\n" + named("a") + "--- # b\r\n" + named("b") + "...\n" +
                           named("c") + "...\n---\n" + named("d") + "---\n---\n" +
                           "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: e\n"
                           "  annotations:\n    x: |\n      ---\n      not a separator\n";
  const std::vector<std::string> docs = SplitYamlDocuments(text);
  int with_kind = 0;
  for (const std::string& d : docs) {
    const size_t first = d.find("kind: Namespace");
    with_kind += first != std::string::npos;
    EXPECT_EQ(d.find("kind: Namespace", first + 1), std::string::npos) << "two in one: " << d;
  }
  EXPECT_EQ(with_kind, 5);
  core::Config a, b;
  Status parsed = core::ParseManifests(text, "t.yaml", &a);
  ASSERT_TRUE(parsed.ok()) << parsed.ToString();
  ASSERT_TRUE(core::ParseManifests(Join(docs), "t.yaml", &b).ok());
  ASSERT_EQ(a.namespaces.size(), 5u);
  ASSERT_EQ(b.namespaces.size(), 5u);
  for (size_t i = 0; i < a.namespaces.size(); ++i) {
    EXPECT_EQ(a.namespaces[i].name, b.namespaces[i].name);
    EXPECT_EQ(a.namespaces[i].source.doc_index, b.namespaces[i].source.doc_index) << i;
  }
}

}  // namespace
}  // namespace allot::cli
