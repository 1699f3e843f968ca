// The image cache's GC on a cache laid out as pulls leave it (no images
// pulled: directories and files stand in for them).
#include "agent/image_gc.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace allot::agent {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kDay = 86400000;

class ImageGcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/allot_image_gc.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/images");
    fs::create_directories(dir_ + "/pods");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Image `ref` with digest directories `digests` (the last is current),
  // last used `age_ms` ago, holding `bytes` in its current root.
  void Image(const std::string& ref, std::vector<std::string> digests, int64_t age_ms,
             size_t bytes = 4096) {
    const fs::path d = dir_ + "/images/" + ImageKey(ref);
    for (const std::string& g : digests) {
      fs::create_directories(d / g / "rootfs");
      std::ofstream(d / g / "rootfs" / "blob") << std::string(bytes, 'x');
    }
    std::ofstream(d / "lock").flush();
    fs::create_symlink(digests.back(), d / "current");
    std::ofstream(d / "last-used").flush();
    SetAge(d / "last-used", age_ms);
    SetAge(d / "current", age_ms, /*link=*/true);
  }
  void Pod(const std::string& id, const std::string& ref, int64_t age_ms = 0) {
    fs::create_directories(dir_ + "/pods/" + id);
    const fs::path pj = dir_ + "/pods/" + id + "/pod.json";
    std::ofstream(pj) << R"({"image":")" << ref << R"("})";
    SetAge(pj, age_ms);
  }
  static void SetAge(const fs::path& p, int64_t age_ms, bool link = false) {
    timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age_ms / 1000;
    t[1] = t[0];
    utimensat(AT_FDCWD, p.c_str(), t, link ? AT_SYMLINK_NOFOLLOW : 0);
  }
  bool Has(const std::string& ref, const std::string& digest = "") const {
    return fs::exists(dir_ + "/images/" + ImageKey(ref) + (digest.empty() ? "" : "/" + digest));
  }
  ImageGcResult Collect(ImageGcPolicy p, int used_percent = 10) {
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return CollectImages(dir_, p, now, [&] { return used_percent; });
  }

  std::string dir_;
};

TEST_F(ImageGcTest, RemovesWhatNoPodUsedForItsMaxAgeOnly) {
  Image("old:1", {"d1"}, 9 * kDay);
  Image("recent:1", {"d1"}, 1 * kDay);
  Image("used:1", {"d1"}, 30 * kDay);
  Pod("team-a_p", "used:1");
  ImageGcResult r = Collect({.max_age_ms = 7 * kDay, .high_percent = 85, .low_percent = 80});
  EXPECT_FALSE(Has("old:1"));
  EXPECT_TRUE(Has("recent:1"));
  EXPECT_TRUE(Has("used:1")) << "a pod names it";
  ASSERT_EQ(r.removed.size(), 1u) << ::testing::PrintToString(r.removed);
  EXPECT_NE(r.removed[0].find("unused 216 h"), std::string::npos) << r.removed[0];
  EXPECT_GE(r.bytes, 4096);
  // Age 0: never by age.
  Image("ancient:1", {"d1"}, 400 * kDay);
  Collect({.max_age_ms = 0, .high_percent = 100, .low_percent = 80});
  EXPECT_TRUE(Has("ancient:1"));
}

TEST_F(ImageGcTest, DiskPressureRemovesLeastRecentlyUsedFirstDownToLow) {
  Image("a:1", {"d1"}, 3 * kDay);
  Image("b:1", {"d1"}, 2 * kDay);
  Image("c:1", {"d1"}, 1 * kDay);
  Image("busy:1", {"d1"}, 5 * kDay);
  Pod("team-a_p", "busy:1");
  // 90% used, each removal frees 5 points: two removals reach 80%.
  int used = 90;
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const ImageGcPolicy p{.max_age_ms = 0, .high_percent = 85, .low_percent = 80};
  int asked = 0;
  ImageGcResult r = CollectImages(dir_, p, now, [&] {
    // The first ask decides whether to start; each later one follows a removal.
    if (asked++ > 1) used -= 5;
    return used;
  });
  EXPECT_FALSE(Has("a:1"));
  EXPECT_FALSE(Has("b:1"));
  EXPECT_TRUE(Has("c:1"));
  EXPECT_TRUE(Has("busy:1")) << "in use, however old";
  EXPECT_EQ(r.removed.size(), 2u) << ::testing::PrintToString(r.removed);
}

TEST_F(ImageGcTest, SupersededDigestsGoOnceNoOlderPodNeedsThem) {
  Image("x:latest", {"old", "new"}, 0);  // "new" is current, switched now.
  Pod("team-a_before", "x:latest", 60000);  // Started before the switch.
  Collect({.max_age_ms = 0, .high_percent = 100, .low_percent = 80});
  EXPECT_TRUE(Has("x:latest", "old")) << "a pod from before the switch may use it";
  fs::remove_all(dir_ + "/pods/team-a_before");
  Pod("team-a_after", "x:latest", 0);
  ImageGcResult r = Collect({.max_age_ms = 0, .high_percent = 100, .low_percent = 80});
  EXPECT_FALSE(Has("x:latest", "old"));
  EXPECT_TRUE(Has("x:latest", "new"));
  ASSERT_EQ(r.removed.size(), 1u) << ::testing::PrintToString(r.removed);
  EXPECT_NE(r.removed[0].find("superseded"), std::string::npos);
}

}  // namespace
}  // namespace allot::agent
