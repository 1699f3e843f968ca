#include "core/host_paths.h"

#include <gtest/gtest.h>

namespace allot::core {
namespace {

TEST(HostPathsTest, ListedPathsAndWhatIsUnderThem) {
  const Labels a = {{kHostPathsAnnotation, " /datasets, /scratch/team-a:rw ,/opt/x:ro"}};
  EXPECT_EQ(*HostPathAccess(a, "/datasets"), false);
  EXPECT_EQ(*HostPathAccess(a, "/datasets/imagenet"), false);
  EXPECT_EQ(*HostPathAccess(a, "/scratch/team-a/run1"), true);
  EXPECT_EQ(*HostPathAccess(a, "/opt/x"), false);
  Result<bool> r = HostPathAccess(a, "/datasets2");
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("/datasets, /scratch/team-a (rw), /opt/x"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(HostPathAccess(a, "/datasets/../etc").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HostPathAccess(a, "datasets").status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(HostPathAccess({}, "/x").status().message().find(kHostPathsAnnotation),
            std::string::npos);
  EXPECT_EQ(HostPathAccess({{kHostPathsAnnotation, "/a/../b"}}, "/b").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*HostPathAccess({{kHostPathsAnnotation, "/"}}, "/anything"), false);
}

}  // namespace
TEST(HostPathsTest, HostNetworkOnlyWhereAllowed) {
  EXPECT_TRUE(HostNetworkAllowed({{kHostNetworkAnnotation, "true"}}).ok());
  for (const Labels& a : {Labels{}, Labels{{kHostNetworkAnnotation, "yes"}},
                          Labels{{kHostPathsAnnotation, "/data"}}}) {
    Status s = HostNetworkAllowed(a);
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
    EXPECT_NE(s.message().find("allot.dev/host-network: \"true\""), std::string::npos)
        << s.message();
  }
}

}  // namespace allot::core
