#include "core/duration.h"

#include <gtest/gtest.h>

namespace allot::core {
namespace {

TEST(DurationTest, ParsesWholeUnitsInOrder) {
  struct Case {
    const char* text;
    int64_t seconds;  // -1: an error.
  } cases[] = {
      {"90s", 90},        {"45m", 2700},    {"4h", 14400},   {"1h30m", 5400},
      {"2h0m0s", 7200},   {"0s", 0},        {"1h1s", 3601},  {"", -1},
      {"90", -1},         {"1.5h", -1},     {"-1h", -1},     {"30m1h", -1},
      {"1h1h", -1},       {"h", -1},        {"1d", -1},      {"1h ", -1},
      {"99999999999999999999h", -1},
  };
  for (const Case& c : cases) {
    Result<int64_t> r = ParseDurationSeconds(c.text);
    if (c.seconds < 0) {
      EXPECT_FALSE(r.ok()) << c.text;
      if (!r.ok()) {
        EXPECT_NE(r.status().message().find("malformed duration"), std::string::npos);
      }
    } else {
      ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().ToString();
      EXPECT_EQ(*r, c.seconds) << c.text;
    }
  }
}

TEST(DurationTest, FormatsShortestAndRoundTrips) {
  EXPECT_EQ(FormatDurationSeconds(0), "0s");
  EXPECT_EQ(FormatDurationSeconds(90), "1m30s");
  EXPECT_EQ(FormatDurationSeconds(5400), "1h30m");
  EXPECT_EQ(FormatDurationSeconds(86400), "24h");
  for (int64_t s : {1, 59, 60, 61, 3599, 3600, 3601, 86399, 1000000}) {
    Result<int64_t> back = ParseDurationSeconds(FormatDurationSeconds(s));
    ASSERT_TRUE(back.ok()) << s;
    EXPECT_EQ(*back, s);
  }
}

}  // namespace
}  // namespace allot::core
