#include "core/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace allot {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

struct ParseCase {
  std::string text;
  int64_t milli;          // Expected value when `error` is empty.
  std::string canonical;  // Expected ToString(), when ok.
  std::string error;      // Expected message fragment, or "" for success.
};

// Values are milli-units: "8" GPUs is 8000, "64Gi" is 64 * 2^30 * 1000.
TEST(QuantityTest, ParseTable) {
  const std::vector<ParseCase> cases = {
      {"500m", 500, "500m", ""},
      {"8", 8000, "8", ""},
      {"1.5", 1500, "1500m", ""},
      {"64Gi", 64 * kGi * 1000, "64Gi", ""},
      {"1Ti", (int64_t{1} << 40) * 1000, "1Ti", ""},
      {"2e3", 2000 * 1000, "2000", ""},
      {"1k", 1000 * 1000, "1000", ""},
      {"-1", -1000, "-1", ""},
      {"0", 0, "0", ""},
      {"+2", 2000, "2", ""},
      {"1536Mi", int64_t{1536} * (1 << 20) * 1000, "1536Mi", ""},
      // Sub-milli precision rounds up, as in Kubernetes.
      {"1u", 1, "1m", ""},
      {"0.0001", 1, "1m", ""},
      {"12x", 0, "", "malformed quantity \"12x\": unknown suffix \"x\""},
      {"", 0, "", "empty quantity"},
      {"1.2.3", 0, "", "malformed quantity \"1.2.3\""},
      {"Gi", 0, "", "expected a number"},
      {"1Xi", 0, "", "unknown suffix \"Xi\""},
      {"1e", 0, "", "unknown suffix \"e\""},
      {"100Ei", 0, "", "quantity \"100Ei\" is too large"},
      {"99999999999999999999", 0, "", "is too large"},
  };
  for (const ParseCase& c : cases) {
    SCOPED_TRACE("input \"" + c.text + "\"");
    Result<Quantity> q = Quantity::Parse(c.text);
    if (!c.error.empty()) {
      ASSERT_FALSE(q.ok());
      EXPECT_NE(q.status().message().find(c.error), std::string::npos)
          << q.status().message();
      continue;
    }
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(q->milli(), c.milli);
    EXPECT_EQ(q->ToString(), c.canonical);
  }
}

// ToString is canonical: parsing it gives back the same value.
TEST(QuantityTest, ToStringRoundTrips) {
  const std::vector<int64_t> values = {0,
                                       1,
                                       999,
                                       1000,
                                       1500,
                                       -2500,
                                       1024000,
                                       3 * kGi * 1000,
                                       kGi * 1000 + 1,
                                       -kGi * 1000};
  for (int64_t milli : values) {
    Quantity q = Quantity::FromMilli(milli);
    SCOPED_TRACE(q.ToString());
    Result<Quantity> back = Quantity::Parse(q.ToString());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, q);
  }
}

TEST(QuantityTest, UnitsCeilAndCheckedAdd) {
  EXPECT_EQ(Quantity::FromMilli(1500).UnitsCeil(), 2);
  EXPECT_EQ(Quantity::FromMilli(2000).UnitsCeil(), 2);
  EXPECT_EQ(Quantity::FromMilli(-1500).UnitsCeil(), -1);
  Quantity sum;
  EXPECT_TRUE(Quantity::CheckedAdd(Quantity::FromUnits(1),
                                   Quantity::FromMilli(500), &sum));
  EXPECT_EQ(sum.milli(), 1500);
  EXPECT_FALSE(Quantity::CheckedAdd(Quantity::FromMilli(INT64_MAX),
                                    Quantity::FromMilli(1), &sum));
}

}  // namespace
// A mantissa times a suffix factor can exceed even __int128: it must be
// "too large", never wrap (the fuzzer found 2^68 Ei reading as 0).
TEST(QuantityTest, HugeMantissaWithSuffixIsTooLarge) {
  EXPECT_FALSE(Quantity::Parse("295147905179352825856Ei").ok());
  EXPECT_FALSE(Quantity::Parse("-1.092233720368547758071E").ok());
  // A huge negative exponent once wrapped the divisor to 0: SIGFPE.
  EXPECT_FALSE(Quantity::Parse("1e-128").ok());
  EXPECT_FALSE(Quantity::Parse("1e-200").ok());
  EXPECT_FALSE(Quantity::Parse("1e-39").ok());
  EXPECT_FALSE(Quantity::Parse("0." + std::string(40, '0') + "1").ok());
  EXPECT_EQ(Quantity::Parse("1e-3")->milli(), 1);
}

}  // namespace allot
