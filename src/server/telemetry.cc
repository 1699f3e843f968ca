#include "server/telemetry.h"

#include <algorithm>

namespace allot::server {

namespace {
constexpr int64_t kMinute = 60000;
constexpr int64_t kHour = 3600000;
constexpr int64_t kFbUnit = 64;  // MiB.
}  // namespace

void EncodeMinute(const MinutePoint& p, char* out) {
  auto u16 = [&](int at, int64_t v) {
    v = std::clamp<int64_t>(v, 0, 0xFFFE);
    out[at] = char(v & 0xFF);
    out[at + 1] = char((v >> 8) & 0xFF);
  };
  out[0] = char(std::clamp(p.util_pct, 0, 100));
  out[1] = char(std::clamp(p.temp_c, 0, 254));
  u16(2, p.power_w);
  u16(4, (p.fb_used_mib + kFbUnit / 2) / kFbUnit);
}

bool GpuRollup::Add(const std::string& uuid, const std::string& node, int64_t now_ms,
                    int util_pct, int temp_c, double power_w, int64_t fb_used_bytes,
                    store::RollupRow* closed) {
  const int64_t minute = now_ms / kMinute;
  bool wrote = false;
  if (minute_ >= 0 && minute != minute_ && n_ > 0) {
    const int64_t hour = minute_ * kMinute / kHour * kHour;
    if (hour != hour_ms_) {
      hour_ms_ = hour;
      hour_.assign(60 * store::kRollupMinuteBytes, char(0xFF));
    }
    MinutePoint p;
    p.util_pct = int(util_ / n_);
    p.temp_c = temp_max_;
    p.power_w = int(power_ / n_);
    p.fb_used_mib = fb_ / n_;
    const int64_t slot = (minute_ * kMinute - hour_ms_) / kMinute;
    EncodeMinute(p, &hour_[size_t(slot * store::kRollupMinuteBytes)]);
    closed->uuid = uuid;
    closed->node = node;
    closed->hour_unix_ms = hour_ms_;
    closed->minutes = hour_;
    wrote = true;
  }
  if (minute != minute_) {
    minute_ = minute;
    n_ = util_ = power_ = fb_ = 0;
    temp_max_ = 0;
  }
  ++n_;
  util_ += std::clamp(util_pct, 0, 100);
  power_ += int64_t(std::max(0.0, power_w) + 0.5);
  fb_ += std::max<int64_t>(0, fb_used_bytes) >> 20;
  temp_max_ = std::max(temp_max_, temp_c);
  return wrote;
}

std::vector<MinutePoint> DecodeHour(const store::RollupRow& row, int64_t since,
                                    int64_t until) {
  std::vector<MinutePoint> out;
  if (row.minutes.size() != size_t(60 * store::kRollupMinuteBytes)) return out;
  const auto* b = reinterpret_cast<const unsigned char*>(row.minutes.data());
  for (int m = 0; m < 60; ++m) {
    const unsigned char* s = b + m * store::kRollupMinuteBytes;
    if (std::all_of(s, s + store::kRollupMinuteBytes, [](unsigned char c) { return c == 0xFF; })) {
      continue;
    }
    MinutePoint p;
    p.t_ms = row.hour_unix_ms + m * kMinute;
    if (p.t_ms < since || p.t_ms >= until) continue;
    p.util_pct = s[0];
    p.temp_c = s[1];
    p.power_w = s[2] | (s[3] << 8);
    p.fb_used_mib = int64_t(s[4] | (s[5] << 8)) * kFbUnit;
    out.push_back(p);
  }
  return out;
}

}  // namespace allot::server
