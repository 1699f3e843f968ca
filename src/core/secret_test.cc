// Kubernetes v1 Secrets read by ParseSecretManifest (core/secret.h).
#include "core/secret.h"

#include <gtest/gtest.h>

#include <string>

namespace allot::core {
namespace {

TEST(SecretManifestTest, ReadsDataAndStringDataFromYaml) {
  Result<Secret> s = ParseSecretManifest(R"(apiVersion: v1
kind: Secret
metadata: {name: hf, namespace: team-a}
type: Opaque
data: {token: aHVudGVyMg==, both: ZnJvbS1kYXRh}
stringData: {both: from-stringData, plain: "p w"}
)", "s.yaml", "team-a");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->ns, "team-a");
  EXPECT_EQ(s->name, "hf");
  EXPECT_EQ(s->values.at("token"), "hunter2");
  EXPECT_EQ(s->values.at("both"), "from-stringData");
  EXPECT_EQ(s->values.at("plain"), "p w");
}

TEST(SecretManifestTest, TheNamespaceDefaultsToTheRequestsTenant) {
  Result<Secret> s = ParseSecretManifest(
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"a":"b"}})",
      "body", "team-b");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->ns, "team-b");
  EXPECT_EQ(s->type, "Opaque");
}

TEST(SecretManifestTest, RegistryCredentials) {
  const std::string cfg = R"({\"auths\":{\"reg:5000\":{\"username\":\"u\",\"password\":\"p\"}}})";
  Result<Secret> s = ParseSecretManifest(
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"reg"},)"
      R"("type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":")" +
          cfg + R"("}})",
      "body", "t");
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::string merged;
  ASSERT_TRUE(MergeDockerConfig(s->values.at(".dockerconfigjson"), &merged).ok());
  EXPECT_EQ(merged, R"({"auths":{"reg:5000":{"auth":"dTpw"}}})");
}

TEST(SecretManifestTest, ErrorsNameTheFieldAndNeverAValue) {
  struct Case {
    std::string yaml;
    std::string field;
    std::string says;
  };
  const std::string head = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n";
  const Case kCases[] = {
      {head + "data: {k: 'not base64!'}\n", "data[k]", "base64"},
      {head + "stringData: {'a b': secretvalue}\n", "stringData[a b]", "not a valid key"},
      {head + "type: kubernetes.io/service-account-token\n", "type", "unsupported Secret type"},
      {head + "type: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: '{}'}\n",
       "data", "auths"},
      {head + "type: kubernetes.io/dockerconfigjson\n", "data", ".dockerconfigjson"},
      {head + "type: kubernetes.io/tls\nstringData: {tls.crt: secretvalue}\n", "data", "tls.key"},
      {head + "immutable: true\n", "immutable", "unknown field"},
      {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n", "kind", "kind Secret"},
      {"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: other}\n",
       "metadata.namespace", "tenant"},
      {"apiVersion: v1\nkind: Secret\nmetadata: {}\n", "metadata.name", ""},
      {head + "stringData: {big: " + std::string(kMaxSecretBytes, 'x') + "}\n", "data",
       "at most"},
  };
  for (const Case& c : kCases) {
    Result<Secret> s = ParseSecretManifest(c.yaml, "f.yaml", "team-a");
    ASSERT_FALSE(s.ok()) << c.yaml.substr(0, 200);
    EXPECT_EQ(s.status().field(), c.field) << s.status().message();
    EXPECT_NE(s.status().message().find(c.says), std::string::npos) << s.status().message();
    EXPECT_EQ(s.status().message().find("secretvalue"), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace allot::core
