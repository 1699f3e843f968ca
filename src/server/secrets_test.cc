// Secrets in memory (server/secrets.h) and their sealing (crypto.h): what
// the store holds does not show a value and does not open under another
// key or another name; pods get their values in Kubernetes' order, and a
// missing Secret names itself.
#include "server/secrets.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>

#include "core/encoding.h"
#include "server/crypto.h"

namespace allot::server {
namespace {

std::string Key(char c) { return std::string(kSealKeyBytes, c); }

TEST(SealTest, OpensWithItsKeyAndAadOnly) {
  const std::string sealed = Seal(Key('k'), "aad", "the value");
  EXPECT_EQ(sealed.find("the value"), std::string::npos);
  ASSERT_TRUE(Open(Key('k'), "aad", sealed).ok());
  EXPECT_EQ(*Open(Key('k'), "aad", sealed), "the value");
  EXPECT_FALSE(Open(Key('x'), "aad", sealed).ok());
  EXPECT_FALSE(Open(Key('k'), "other", sealed).ok());
  std::string flipped = sealed;
  flipped[flipped.size() / 2] ^= 1;
  EXPECT_FALSE(Open(Key('k'), "aad", flipped).ok());
  EXPECT_FALSE(Open(Key('k'), "aad", sealed.substr(0, 10)).ok());
  // A fresh nonce each time.
  EXPECT_NE(Seal(Key('k'), "aad", "v"), Seal(Key('k'), "aad", "v"));
}

core::Secret Opaque(const std::string& name, std::map<std::string, std::string> values) {
  core::Secret s;
  s.ns = "team-a";
  s.name = name;
  s.values = std::move(values);
  return s;
}

TEST(SecretsTest, StoredRowsCarryNoValueAndOpenOnlyUnderTheirKeyAndName) {
  Secrets secrets;
  secrets.SetKey(Key('k'));
  store::Batch b;
  ASSERT_EQ(*secrets.Put(Opaque("hf", {{"token", "hunter2"}}), false, "alice", 1, 7, &b),
            "created");
  ASSERT_EQ(b.puts.size(), 1u);
  const store::ObjectRow row = b.puts[0];
  EXPECT_EQ(row.kind, "Secret");
  EXPECT_EQ(row.key, "team-a/hf");
  EXPECT_EQ(row.body.find("hunter2"), std::string::npos) << row.body;
  EXPECT_EQ(row.body.find(core::Base64Encode("hunter2")), std::string::npos) << row.body;

  // Put again: same values are unchanged (nothing written), new ones
  // configure, create refuses.
  store::Batch b2;
  EXPECT_EQ(*secrets.Put(Opaque("hf", {{"token", "hunter2"}}), true, "bob", 2, 8, &b2),
            "unchanged");
  EXPECT_TRUE(b2.empty());
  EXPECT_EQ(secrets.Put(Opaque("hf", {}), false, "bob", 2, 8, &b2).status().code(),
            StatusCode::kAlreadyExists);

  Secrets loaded;
  loaded.SetKey(Key('k'));
  ASSERT_TRUE(loaded.Load(row).ok());
  EXPECT_TRUE(loaded.CheckKey().ok());
  Result<boost::json::object> shown = loaded.Reveal("team-a", "hf");
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->at("data").at("token").as_string(), core::Base64Encode("hunter2"));
  EXPECT_EQ(shown->at("createdBy").as_string(), "alice");
  Result<boost::json::object> meta = loaded.Describe("team-a", "hf");
  EXPECT_FALSE(meta->contains("data"));
  EXPECT_EQ(meta->at("keys").at("token").as_int64(), 7);

  Secrets wrong;
  wrong.SetKey(Key('w'));
  ASSERT_TRUE(wrong.Load(row).ok());
  Status s = wrong.CheckKey();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("team-a/hf"), std::string::npos) << s.message();

  // The same sealed values under another name do not open.
  store::ObjectRow moved = row;
  moved.key = "team-b/hf";
  boost::json::value body = boost::json::parse(moved.body);
  body.as_object()["namespace"] = "team-b";
  moved.body = boost::json::serialize(body);
  Secrets other;
  other.SetKey(Key('k'));
  ASSERT_TRUE(other.Load(moved).ok());
  EXPECT_FALSE(other.CheckKey().ok());
}

TEST(SecretsTest, ResolveOrdersEnvAsKubernetesAndNamesWhatIsMissing) {
  Secrets secrets;
  secrets.SetKey(Key('k'));
  store::Batch b;
  ASSERT_TRUE(secrets.Put(Opaque("all", {{"A", "from-all"}, {"B", "b"}}), false, "u", 1, 1, &b).ok());
  ASSERT_TRUE(secrets.Put(Opaque("one", {{"k", "from-one"}, {"bin", std::string("\xff\0", 2)}}),
                          false, "u", 1, 2, &b).ok());
  core::PodSet ps;
  ps.name = "main";
  ps.env_from = {{"all", "P_", false}, {"gone", "", true}};
  ps.env_secrets = {{"A", {"one", "k", false}}, {"Z", {"one", "nokey", true}}};
  ps.volumes = {{.name = "files", .type = core::Volume::Type::kSecret, .medium = "",
                 .size_limit_bytes = 0, .path = "", .secret = "one", .claim = "",
                 .read_only = false}};
  proto::DesiredPod d;
  d.env = {{"A", "literal"}, {"P_B", "literal-wins-over-envFrom"}};
  ASSERT_TRUE(secrets.Resolve("team-a", ps, &d).ok());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"P_A", "from-all"}, {"P_B", "b"}, {"A", "literal"},
      {"P_B", "literal-wins-over-envFrom"}, {"A", "from-one"}};
  EXPECT_EQ(d.env, want);
  ASSERT_EQ(d.files.size(), 2u);
  EXPECT_EQ(d.files[0].volume, "files");
  EXPECT_EQ(d.files[0].path, "bin");
  EXPECT_EQ(d.files[0].content, std::string("\xff\0", 2));

  // A binary value is a file, not a variable.
  core::PodSet bin = ps;
  bin.env_secrets = {{"X", {"one", "bin", false}}};
  proto::DesiredPod d2;
  Status s = secrets.Resolve("team-a", bin, &d2);
  EXPECT_NE(s.message().find("binary"), std::string::npos) << s.message();

  // A Secret of another tenant does not exist here.
  proto::DesiredPod d3;
  s = secrets.Resolve("team-b", ps, &d3);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("Secret team-b/all not found"), std::string::npos) << s.message();

  core::Workload w;
  w.ns = "team-a";
  w.pod_sets = {ps};
  EXPECT_TRUE(secrets.CheckRefs(w).ok());
  w.pod_sets[0].image_pull_secrets = {"one"};
  s = secrets.CheckRefs(w);
  EXPECT_NE(s.message().find("kubernetes.io/dockerconfigjson"), std::string::npos) << s.message();
  w.pod_sets[0].image_pull_secrets.clear();
  w.pod_sets[0].env_secrets = {{"A", {"one", "nokey", false}}};
  s = secrets.CheckRefs(w);
  EXPECT_NE(s.message().find("has no key nokey"), std::string::npos) << s.message();
}

TEST(SecretsTest, RegistryCredentialsMergeIntoOneAuthFile) {
  Secrets secrets;
  secrets.SetKey(Key('k'));
  store::Batch b;
  core::Secret r1 = Opaque("r1", {{".dockerconfigjson",
                                   R"({"auths":{"reg.one:5000":{"username":"u","password":"p"}}})"}});
  r1.type = core::kDockerConfigJsonType;
  core::Secret r2 = Opaque("r2", {{".dockerconfigjson",
                                   R"({"auths":{"reg.two":{"auth":"eDp5"}}})"}});
  r2.type = core::kDockerConfigJsonType;
  ASSERT_TRUE(secrets.Put(r1, false, "u", 1, 1, &b).ok());
  ASSERT_TRUE(secrets.Put(r2, false, "u", 1, 2, &b).ok());
  core::PodSet ps;
  ps.name = "main";
  ps.image_pull_secrets = {"r1", "r2"};
  proto::DesiredPod d;
  ASSERT_TRUE(secrets.Resolve("team-a", ps, &d).ok());
  boost::json::value auth = boost::json::parse(d.registry_auth);
  EXPECT_EQ(auth.at("auths").at("reg.one:5000").at("auth").as_string(),
            core::Base64Encode("u:p"));
  EXPECT_EQ(auth.at("auths").at("reg.two").at("auth").as_string(), "eDp5");
}

}  // namespace
}  // namespace allot::server
