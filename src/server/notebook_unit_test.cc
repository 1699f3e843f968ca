// The notebook pieces that need no Jupyter: what counts as activity in
// Jupyter's answers, and Allot's cookie among the browser's others.
#include <gtest/gtest.h>

#include <string>

#include "server/notebook_auth.h"
#include "server/notebook_probe.h"

namespace allot::server {
namespace {

TEST(NotebookProbeTest, ABusyKernelOrMovedActivityCountsAndTheFirstLookOnlyWhenBusy) {
  const std::string idle =
      R"([{"id": "k1", "execution_state": "idle", "last_activity": "2026-12-07T10:00:00Z"}])";
  const std::string busy =
      R"([{"id": "k1", "execution_state": "busy", "last_activity": "2026-12-07T10:00:00Z"}])";
  const std::string moved =
      R"([{"id": "k1", "execution_state": "idle", "last_activity": "2026-12-07T10:00:05Z"}])";
  const std::string term = R"([{"name": "1", "last_activity": "2026-12-07T10:00:00Z"}])";
  const std::string typed = R"([{"name": "1", "last_activity": "2026-12-07T10:01:00Z"}])";
  std::string seen;
  EXPECT_FALSE(NotebookProbe::Active(idle, "[]", &seen)) << "a first look has no before";
  EXPECT_FALSE(NotebookProbe::Active(idle, "[]", &seen));
  EXPECT_TRUE(NotebookProbe::Active(busy, "[]", &seen)) << "a silent cell still runs";
  EXPECT_TRUE(NotebookProbe::Active(busy, "[]", &seen));
  EXPECT_TRUE(NotebookProbe::Active(moved, "[]", &seen)) << "it printed, or went idle";
  EXPECT_FALSE(NotebookProbe::Active(moved, "[]", &seen));
  EXPECT_TRUE(NotebookProbe::Active(moved, term, &seen)) << "a terminal was opened";
  EXPECT_FALSE(NotebookProbe::Active(moved, term, &seen));
  EXPECT_TRUE(NotebookProbe::Active(moved, typed, &seen)) << "someone typed";
  EXPECT_TRUE(NotebookProbe::Active("[]", "[]", &seen)) << "its kernel was shut down";
  EXPECT_FALSE(NotebookProbe::Active("[]", "[]", &seen));
  EXPECT_FALSE(NotebookProbe::Active("not json", "[]", &seen));
  std::string first;
  EXPECT_TRUE(NotebookProbe::Active(busy, "[]", &first));
}

TEST(NotebookAuthTest, AllotsCookieIsFoundAndTakenOutOfTheOthers) {
  EXPECT_EQ(NotebookCookie("allot-notebook=abc"), "abc");
  EXPECT_EQ(NotebookCookie("_xsrf=1; allot-notebook=a.b.c; other=2"), "a.b.c");
  EXPECT_EQ(NotebookCookie("xallot-notebook=no; _xsrf=1"), "");
  EXPECT_EQ(NotebookCookie(""), "");
  EXPECT_EQ(WithoutNotebookCookie("_xsrf=1; allot-notebook=a.b.c; other=2"), "_xsrf=1; other=2");
  EXPECT_EQ(WithoutNotebookCookie("allot-notebook=a"), "");
  EXPECT_EQ(WithoutNotebookCookie("username-x=y"), "username-x=y");
  EXPECT_EQ(NotebookCredential::CookieHeader("v", "/notebooks/t/n/", 3600000),
            "allot-notebook=v; Path=/notebooks/t/n/; Max-Age=3600; HttpOnly; SameSite=Lax");
}

}  // namespace
}  // namespace allot::server
