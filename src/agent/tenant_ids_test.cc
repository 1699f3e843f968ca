// Tenants' numbers on a node (tenant_ids.h): kept across restarts in their
// file, never given twice, and an error, not a number, when the file
// cannot be written.
#include "agent/tenant_ids.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace allot::agent {
namespace {

TEST(TenantIdsTest, NumbersAreKeptAcrossRestartsAndNeverGivenTwice) {
  char tmpl[] = "/tmp/allot_tenant_ids.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, file = dir + "/state/tenants";
  {
    TenantIds ids(file);
    EXPECT_EQ(*ids.Index("team-a"), 0u);
    EXPECT_EQ(*ids.Index("team-b"), 1u);
    EXPECT_EQ(*ids.Index("team-a"), 0u);
    EXPECT_EQ(*ids.HostId(1u << 20, "team-b"), (1 << 20) + 65536);
  }
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  TenantIds again(file);  // A restart: same numbers, the next one new.
  EXPECT_EQ(*again.Index("team-b"), 1u);
  EXPECT_EQ(*again.Index("team-c"), 2u);
  // Two agents sharing the file: a number one gives, the other never does.
  TenantIds other(file);
  EXPECT_EQ(*other.Index("team-x"), 3u);
  EXPECT_EQ(*again.Index("team-y"), 4u);
  EXPECT_EQ(*again.Index("team-x"), 3u);
  // A file that cannot be written: an error naming it, and no number.
  if (geteuid() != 0) {
    chmod((dir + "/state").c_str(), 0500);
    Result<size_t> k = again.Index("team-d");
    ASSERT_FALSE(k.ok());
    EXPECT_NE(k.status().message().find(file), std::string::npos) << k.status().message();
    chmod((dir + "/state").c_str(), 0700);
  }
  TenantIds broken(dir + "/state/tenants/x");  // Its directory is a file.
  Result<size_t> k = broken.Index("team-a");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("cannot record tenant team-a's number"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace allot::agent
