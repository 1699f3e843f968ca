// GPU telemetry rollups: each GPU's agent samples (every ~10 s) averaged per
// minute (temperature: the minute's maximum) and kept as one store row per
// GPU-hour (store::RollupRow: 60 minutes x 6 bytes), for the dashboard's
// charts and GET /api/v1/telemetry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace allot::server {

struct MinutePoint {
  int64_t t_ms = 0;  // The minute's start.
  int util_pct = 0;
  int temp_c = 0;
  int power_w = 0;
  int64_t fb_used_mib = 0;
};

// The running minute of one GPU, and its hour so far.
class GpuRollup {
 public:
  // Adds one sample taken at `now_ms`. When it falls in a later minute than
  // the samples before it, that minute is closed first: *closed is then
  // set to the hour row that holds it (to be written) and true returned.
  bool Add(const std::string& uuid, const std::string& node, int64_t now_ms,
           int util_pct, int temp_c, double power_w, int64_t fb_used_bytes,
           store::RollupRow* closed);

 private:
  int64_t minute_ = -1;  // Minutes since the epoch of the running minute.
  int64_t n_ = 0, util_ = 0, power_ = 0, fb_ = 0;
  int temp_max_ = 0;
  int64_t hour_ms_ = -1;
  std::string hour_;  // 60 x kRollupMinuteBytes, 0xFF where no data.
};

// The minutes of `row` with data inside [since, until).
std::vector<MinutePoint> DecodeHour(const store::RollupRow& row, int64_t since,
                                    int64_t until);
// One minute's bytes (store::RollupRow layout).
void EncodeMinute(const MinutePoint& p, char* out);

}  // namespace allot::server
