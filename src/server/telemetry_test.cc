// GPU telemetry rollups: the minute arithmetic, the store's merge and prune,
// the state writing hour rows as samples arrive, and GET /api/v1/telemetry
// reading them back from a real server's store.
#include "server/telemetry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "server/state.h"
#include "server/test_server.h"

namespace allot::server {
namespace {

namespace json = boost::json;
constexpr int64_t kHour = 3600000;
constexpr int64_t kT0 = 1764547200000;  // 2025-12-01T00:00:00Z, an hour start.

TEST(GpuRollupTest, AveragesEachMinuteAndKeepsTheHour) {
  GpuRollup r;
  store::RollupRow row;
  // Minute 0: three samples; nothing is closed until a later minute.
  EXPECT_FALSE(r.Add("G", "n", kT0 + 1000, 10, 40, 100.4, 1LL << 30, &row));
  EXPECT_FALSE(r.Add("G", "n", kT0 + 11000, 20, 45, 200.4, 1LL << 30, &row));
  EXPECT_FALSE(r.Add("G", "n", kT0 + 21000, 30, 41, 300.4, 3LL << 30, &row));
  // Minute 2 (minute 1 had no sample) closes minute 0.
  ASSERT_TRUE(r.Add("G", "n", kT0 + 2 * 60000 + 5, 90, 60, 500, 0, &row));
  EXPECT_EQ(row.uuid, "G");
  EXPECT_EQ(row.node, "n");
  EXPECT_EQ(row.hour_unix_ms, kT0);
  std::vector<MinutePoint> pts = DecodeHour(row, 0, kT0 + kHour);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0].t_ms, kT0);
  EXPECT_EQ(pts[0].util_pct, 20);
  EXPECT_EQ(pts[0].temp_c, 45);  // The minute's maximum.
  EXPECT_EQ(pts[0].power_w, 200);
  EXPECT_EQ(pts[0].fb_used_mib, 1728);  // 5/3 GiB, in 64 MiB steps.
  // The next hour's first minute closes minute 2 in the first hour's row.
  ASSERT_TRUE(r.Add("G", "n", kT0 + kHour + 1, 50, 50, 50, 0, &row));
  EXPECT_EQ(row.hour_unix_ms, kT0);
  pts = DecodeHour(row, 0, kT0 + kHour);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[1].t_ms, kT0 + 120000);
  EXPECT_EQ(pts[1].util_pct, 90);
  // The window clips.
  EXPECT_EQ(DecodeHour(row, kT0 + 60000, kT0 + kHour).size(), 1u);
  ASSERT_TRUE(r.Add("G", "n", kT0 + kHour + 60000, 50, 50, 50, 0, &row));
  EXPECT_EQ(row.hour_unix_ms, kT0 + kHour);
  EXPECT_EQ(DecodeHour(row, 0, kT0 + 2 * kHour).size(), 1u);  // A fresh hour.
}

class TelemetryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "allot_tel_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

store::RollupRow Hour(const std::string& uuid, int64_t hour, std::vector<int> minutes_util) {
  store::RollupRow r{uuid, "n1", hour, std::string(60 * store::kRollupMinuteBytes, char(0xFF))};
  for (size_t m = 0; m < minutes_util.size(); ++m) {
    if (minutes_util[m] < 0) continue;
    MinutePoint p;
    p.util_pct = minutes_util[m];
    EncodeMinute(p, &r.minutes[m * store::kRollupMinuteBytes]);
  }
  return r;
}

TEST_F(TelemetryStoreTest, MergesMinutesAndPrunesOldHours) {
  auto st = store::OpenStore("sqlite:" + dir_ + "/a.db");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  store::Batch b;
  b.rollups = {Hour("G1", kT0, {10, 11}), Hour("G1", kT0 + kHour, {5}),
               Hour("G2", kT0, {7})};
  ASSERT_TRUE((*st)->Commit(b).ok());
  // A server that restarted mid-hour writes the hour with only its own
  // minutes: the earlier ones stay.
  store::Batch again;
  again.rollups = {Hour("G1", kT0, {-1, 12, 13})};
  ASSERT_TRUE((*st)->Commit(again).ok());
  auto rows = (*st)->ListRollups({"", "G1", 0, kT0 + 10 * kHour});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  std::vector<MinutePoint> pts = DecodeHour((*rows)[0], 0, kT0 + kHour);
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_EQ(pts[0].util_pct, 10);
  EXPECT_EQ(pts[1].util_pct, 12);
  EXPECT_EQ(pts[2].util_pct, 13);
  // Window and node filters.
  EXPECT_EQ((*st)->ListRollups({"n1", "", kT0 + kHour, kT0 + 2 * kHour})->size(), 1u);
  EXPECT_EQ((*st)->ListRollups({"n2", "", 0, kT0 + 2 * kHour})->size(), 0u);
  EXPECT_EQ((*st)->ListRollups({"", "", 5, 5}).status().code(), StatusCode::kInvalidArgument);
  // Pruning drops hours that ended by then.
  store::Batch prune;
  prune.prune_rollups_before_ms = kT0 + kHour;
  ASSERT_TRUE((*st)->Commit(prune).ok());
  rows = (*st)->ListRollups({});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].hour_unix_ms, kT0 + kHour);
}

// The state turns agents' samples into hour rows as minutes close.
TEST(StateTelemetryTest, SamplesBecomeHourRows) {
  auto st = State::Load(store::Snapshot{});
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  auto sync = [&](int64_t now, int util) {
    AgentReport r;
    r.node.name = "n1";
    r.node.cpu = Quantity::FromMilli(8000);
    r.node.memory = Quantity::FromMilli(int64_t(8) << 40);
    r.node.gpus.push_back({"GPU-1", "H100", Quantity::FromMilli(int64_t(80) << 40), true, {}});
    GpuTelemetry t;
    t.uuid = "GPU-1";
    t.utilization_pct = util;
    t.temperature_c = 50;
    r.gpu_samples.push_back(t);
    Txn txn;
    txn.now_unix_ms = now;
    Status s = (*st)->AgentSync(std::move(r), &txn);
    EXPECT_TRUE(s.ok()) << s.ToString();
    (*st)->FinishTurn(&txn);
    return txn.batch;
  };
  EXPECT_TRUE(sync(kT0 + 1000, 40).rollups.empty());
  EXPECT_TRUE(sync(kT0 + 31000, 60).rollups.empty());
  store::Batch b = sync(kT0 + 61000, 0);
  ASSERT_EQ(b.rollups.size(), 1u);
  std::vector<MinutePoint> pts = DecodeHour(b.rollups[0], 0, kT0 + kHour);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0].util_pct, 50);
  EXPECT_EQ(b.rollups[0].node, "n1");
  // The newest sample, for pages that show current values.
  auto latest = (*st)->LatestTelemetry("n1");
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest["GPU-1"].first, kT0 + 61000);
  EXPECT_EQ(latest["GPU-1"].second.utilization_pct, 0);
  EXPECT_TRUE((*st)->LatestTelemetry("n2").empty());
}

// GET /api/v1/telemetry reads the store of a real server.
TEST(TelemetryApiTest, ServesTheStoredMinutes) {
  // Two hours ago (older hours than the retention, 30 days, are pruned).
  const int64_t h = (std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count() / kHour - 2) * kHour;
  auto srv = testing::TestServer::Start();
  ASSERT_NE(srv, nullptr);
  srv->Stop();
  {
    auto st = store::OpenStore(srv->store_url());
    ASSERT_TRUE(st.ok());
    store::Batch b;
    b.rollups = {Hour("GPU-a", h, {10, 20, -1, 40}), Hour("GPU-b", h, {99}),
                 Hour("GPU-old", h - 40 * 24 * kHour, {1})};
    ASSERT_TRUE((*st)->Commit(b).ok());
  }
  ASSERT_TRUE(srv->Restart());
  int code = 0;
  json::value r = srv->Json("GET", "/api/v1/telemetry?sinceUnixMs=" + std::to_string(h) +
                                       "&untilUnixMs=" + std::to_string(h + kHour),
                            "", &code);
  ASSERT_EQ(code, 200) << json::serialize(r);
  const json::array& items = r.at("items").as_array();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].at("uuid").as_string(), "GPU-a");
  EXPECT_EQ(items[0].at("node").as_string(), "n1");
  const json::array& pts = items[0].at("points").as_array();
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_EQ(pts[2].at(0).as_int64(), h + 3 * 60000);
  EXPECT_EQ(pts[2].at(1).as_int64(), 40);
  r = srv->Json("GET", "/api/v1/telemetry?uuid=GPU-b&sinceUnixMs=" + std::to_string(h) +
                           "&untilUnixMs=" + std::to_string(h + kHour), "", &code);
  ASSERT_EQ(r.at("items").as_array().size(), 1u);
  r = srv->Json("GET", "/api/v1/telemetry?sinceUnixMs=10&untilUnixMs=5", "", &code);
  EXPECT_EQ(code, 400);
  EXPECT_EQ(r.at("error").at("field").as_string(), "untilUnixMs");
  // Past the retention (30 days): pruned by the server's first turn.
  const int64_t old = h - 40 * 24 * kHour;
  r = srv->Json("GET", "/api/v1/telemetry?sinceUnixMs=" + std::to_string(old) +
                           "&untilUnixMs=" + std::to_string(old + kHour), "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(r.at("items").as_array().size(), 0u) << json::serialize(r);
  // The default window is the last hour: nothing from two hours ago.
  r = srv->Json("GET", "/api/v1/telemetry", "", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(r.at("items").as_array().size(), 0u);
}

}  // namespace
}  // namespace allot::server
