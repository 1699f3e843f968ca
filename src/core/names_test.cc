// Kubernetes' name syntax: qualified names (label keys, resource names) and
// label values, as k8s.io/apimachinery's validation accepts and refuses them.
#include "core/names.h"

#include <gtest/gtest.h>

#include <string>

namespace allot::core {
namespace {

TEST(NamesTest, QualifiedNames) {
  for (const char* ok : {"app", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "cpu", "a_b.c-d",
                         "kueue.x-k8s.io/queue-name", "A9", "x/Y"}) {
    EXPECT_EQ(QualifiedNameError(ok), "") << ok;
  }
  for (const char* bad : {"", "bad key!", "nvidia.com/mig-../../x", "-a", "a-", "/a", "a/",
                          "Example.com/x", "a..b/c", "é"}) {
    EXPECT_NE(QualifiedNameError(bad), "") << bad;
  }
  EXPECT_EQ(QualifiedNameError(std::string(63, 'a')), "");
  EXPECT_NE(QualifiedNameError(std::string(64, 'a')), "");
  EXPECT_NE(QualifiedNameError(std::string(254, 'a') + "/x"), "");
  EXPECT_NE(QualifiedNameError("a/b/c").find("one '/' at most"), std::string::npos);
}

TEST(NamesTest, LabelValues) {
  for (const char* ok : {"", "v", "H100", "1.2_3-x"}) EXPECT_EQ(LabelValueError(ok), "") << ok;
  for (const char* bad : {"a b", "l4/x", "-x", "x.", "1,2"}) EXPECT_NE(LabelValueError(bad), "") << bad;
  EXPECT_EQ(LabelValueError(std::string(63, 'v')), "");
  EXPECT_NE(LabelValueError(std::string(64, 'v')), "");
}

TEST(NamesTest, DnsNames) {
  EXPECT_TRUE(IsDnsLabel("team-a"));
  EXPECT_FALSE(IsDnsLabel("Team"));
  EXPECT_FALSE(IsDnsLabel("a.b"));
  EXPECT_TRUE(IsDnsSubdomain("a.b-c.d"));
  EXPECT_FALSE(IsDnsSubdomain("a..b"));
  EXPECT_FALSE(IsDnsSubdomain("a."));
}

}  // namespace
}  // namespace allot::core
