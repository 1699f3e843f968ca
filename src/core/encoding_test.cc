#include "core/encoding.h"

#include <gtest/gtest.h>

#include <string>

namespace allot::core {
namespace {

TEST(Base64Test, RoundTripsEveryLengthAndByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += char(i);
  for (size_t n = 0; n <= all.size(); n += 1 + n / 8) {
    std::string data = all.substr(0, n);
    Result<std::string> back = Base64Decode(Base64Encode(data));
    ASSERT_TRUE(back.ok()) << n << ": " << back.status().message();
    EXPECT_EQ(*back, data) << n;
  }
}

TEST(Base64Test, KnownVectors) {  // RFC 4648 section 10.
  const std::pair<const char*, const char*> kCases[] = {
      {"", ""},         {"f", "Zg=="},     {"fo", "Zm8="},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : kCases) {
    EXPECT_EQ(Base64Encode(plain), coded);
    EXPECT_EQ(*Base64Decode(coded), plain);
  }
}

TEST(Base64Test, RefusesWhatIsNotCanonical) {
  for (const char* bad : {"Zg", "Zg=", "Z===", "Zm9v\n", "Zm 9", "Zm9=v===",
                          "Zh==",  // Non-zero bits the padding drops.
                          "Zm8=Zm8=", "Zm-v", "Zm_v"}) {
    Result<std::string> r = Base64Decode(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("base64"), std::string::npos);
    }
  }
}

TEST(Utf8Test, AcceptsTextAndRefusesBrokenSequences) {
  EXPECT_TRUE(IsUtf8(""));
  EXPECT_TRUE(IsUtf8("plain ascii"));
  EXPECT_TRUE(IsUtf8("gr\xC3\xBC\xC3\x9F" "e \xE2\x82\xAC \xF0\x9F\x9A\x80"));
  EXPECT_FALSE(IsUtf8("\xFF"));
  EXPECT_FALSE(IsUtf8("\xC3"));              // Cut short.
  EXPECT_FALSE(IsUtf8("\xE2\x82"));          // Cut short.
  EXPECT_FALSE(IsUtf8("\xC0\xAF"));          // Overlong '/'.
  EXPECT_FALSE(IsUtf8("\xED\xA0\x80"));      // A surrogate.
  EXPECT_FALSE(IsUtf8("\xF4\x90\x80\x80"));  // Past U+10FFFF.
  EXPECT_FALSE(IsUtf8("a\x80" "b"));         // A lone continuation byte.
}

}  // namespace
}  // namespace allot::core
