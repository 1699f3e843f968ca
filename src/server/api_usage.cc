// The API's handlers for /metrics, telemetry, the overview and usage and cost.
// Network threads: each parses and checks its request, then posts its work
// to the owner through ApiCall::authed (api_internal.h).
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_encode.h"
#include "core/names.h"
#include "server/api.h"
#include "server/api_internal.h"
#include "server/audit.h"
#include "server/query_params.h"
#include "server/telemetry.h"
#include "server/usage.h"

namespace allot::server {
namespace json = boost::json;

namespace {

// Once the turn is committed: the usage rows of `f` (the closed stretches
// in the store, plus `open`, what is still held, from the state) given to
// `reply`, which builds the answer; a store error is answered instead.
void DeliverUsage(
    Turn& t, std::shared_ptr<net::Exchange> ex, store::UsageFilter f,
    std::vector<store::UsageRow> open,
    std::function<net::Response(std::vector<store::UsageRow>&)> reply) {
  t.Deliver([ex = std::move(ex), f, open = std::move(open),
             reply = std::move(reply)](store::Store& store) mutable {
    Result<std::vector<store::UsageRow>> rows = store.ListUsage(f);
    if (!rows.ok()) {
      ex->Reply(ErrorResponse(rows.status()));
      return;
    }
    rows->insert(rows->end(), std::make_move_iterator(open.begin()),
                 std::make_move_iterator(open.end()));
    ex->Reply(reply(*rows));
  });
}

}  // namespace

void HandleMetrics(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (method != "GET") {
    ex->Reply(
        ErrorResponse(Status::NotFound("no route " + method + " " + path)));
    return;
  }
  authed(Gate{Route::kMetrics, "read /metrics", "", ""}, [ex](Turn& t, const Principal&) {
    metrics::Gauges g;
    t.state.CollectMetrics(&g);
    net::Response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = t.state.metrics()->Render(g.Take());
    t.Reply(ex, std::move(r));
  });
  return;
}

void HandleTelemetry(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (seg.size() != 1) {
    ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
    return;
  }
  if (method != "GET") {
    ex->Reply(MethodNotAllowed(method, path, "GET"));
    return;
  }
  Status bad;
  store::RollupFilter f;
  auto num = [&](const char* k, int64_t dflt) {
    return QueryInt(req, k, dflt, &bad);
  };
  const int64_t since = num("sinceUnixMs", -1);
  const int64_t until = num("untilUnixMs", -1);
  if (auto it = req.query.find("node"); it != req.query.end())
    f.node = it->second;
  if (auto it = req.query.find("uuid"); it != req.query.end())
    f.uuid = it->second;
  Gate gate{Route::kReports, "read telemetry", "", ""};
  authed(std::move(gate), [ex, f, bad, since, until](Turn& t, const Principal&) mutable {
    const int64_t now = t.txn.now_unix_ms;
    f.until_unix_ms = until >= 0 ? until : now;
    f.since_unix_ms =
        since >= 0 ? since
                   : f.until_unix_ms - 3600000;  // Default: the last hour.
    if (bad.ok() && f.until_unix_ms <= f.since_unix_ms) {
      bad = Status::InvalidArgument("untilUnixMs must be after sinceUnixMs",
                                    "untilUnixMs");
    }
    if (bad.ok() && f.until_unix_ms - f.since_unix_ms > 31LL * 86400000) {
      bad = Status::InvalidArgument("the window is at most 31 days",
                                    "sinceUnixMs");
    }
    if (!bad.ok()) {
      t.Reply(ex, ErrorResponse(bad));
      return;
    }
    // The newest sample of each GPU (not yet in a closed minute), so a
    // page shows current values at once.
    json::object latest;
    for (const auto& [uuid, st] : t.state.LatestTelemetry(f.node)) {
      if (!f.uuid.empty() && uuid != f.uuid) continue;
      const GpuTelemetry& g = st.second;
      latest[uuid] =
          json::array{st.first, g.utilization_pct, g.temperature_c,
                      int64_t(g.power_watts + 0.5), g.memory_used_bytes >> 20};
    }
    t.Deliver([ex, f, latest = std::move(latest)](store::Store& store) mutable {
      Result<std::vector<store::RollupRow>> rows = store.ListRollups(f);
      if (!rows.ok()) {
        ex->Reply(ErrorResponse(rows.status()));
        return;
      }
      json::array items;
      for (size_t i = 0; i < rows->size();) {
        const std::string& uuid = (*rows)[i].uuid;
        json::array points;
        std::string node;
        for (; i < rows->size() && (*rows)[i].uuid == uuid; ++i) {
          node = (*rows)[i].node;
          for (const MinutePoint& m :
               DecodeHour((*rows)[i], f.since_unix_ms, f.until_unix_ms)) {
            points.push_back(json::array{m.t_ms, m.util_pct, m.temp_c,
                                         m.power_w, m.fb_used_mib});
          }
        }
        items.push_back(json::object{
            {"uuid", uuid}, {"node", node}, {"points", std::move(points)}});
      }
      ex->Reply(JsonResponse(
          200, json::object{{"stepMs", 60000},
                            {"sinceUnixMs", f.since_unix_ms},
                            {"untilUnixMs", f.until_unix_ms},
                            {"columns", json::array{"t", "util", "temp",
                                                    "power", "fbUsedMiB"}},
                            {"items", std::move(items)},
                            {"latest", std::move(latest)}}));
    });
  });
  return;
}

void HandleOverview(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (method != "GET") {
    ex->Reply(MethodNotAllowed(method, path, "GET"));
    return;
  }
  Status bad;
  const int64_t minutes = QueryInt(req, "idleMinutes", 30, &bad);
  Gate gate{Route::kReports, "read the overview", "", ""};
  authed(std::move(gate), [ex, bad, minutes](Turn& t, const Principal& p) {
    if (!bad.ok()) {
      t.Reply(ex, ErrorResponse(bad));
      return;
    }
    // As GET /api/v1/usage: at the end of the turn, then the cost of this
    // calendar month (UTC) from the store plus what is still held.
    t.After([ex, minutes, p, &t]() {
      const int64_t now = t.txn.now_unix_ms;
      json::object o = t.state.Overview(p, now, minutes * 60000);
      store::UsageFilter f;
      if (p.role != Role::kClusterAdmin) f.tenant = p.tenant;
      const std::time_t secs = std::time_t(now / 1000);
      std::tm tm{};
      gmtime_r(&secs, &tm);
      tm.tm_mday = 1;
      tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
      f.since_unix_ms = int64_t(timegm(&tm)) * 1000;
      f.until_unix_ms = now;
      DeliverUsage(
          t, ex, f, t.state.OpenUsage(f.tenant, now),
          [f, o = std::move(o)](std::vector<store::UsageRow>& rows) mutable {
            json::object month = UsageReport(rows, UsageBy::kTenant,
                                             f.since_unix_ms, f.until_unix_ms);
            o["thisMonth"] = json::object{{"sinceUnixMs", f.since_unix_ms},
                                          {"total", std::move(month["total"])}};
            return JsonResponse(200, o);
          });
    });
  });
  return;
}

void HandleUsage(const ApiCall& c) {
  const auto& [ex, req, path, seg, method, authed] = c;
  if (seg.size() > 2 || (seg.size() == 2 && seg[1] != "idle")) {
    ex->Reply(ErrorResponse(Status::NotFound("no route " + path)));
    return;
  }
  if (method != "GET") {
    ex->Reply(MethodNotAllowed(method, path, "GET"));
    return;
  }
  const bool idle = seg.size() == 2;
  Status bad;
  auto num = [&](const char* k, int64_t dflt) {
    return QueryInt(req, k, dflt, &bad);
  };
  store::UsageFilter f;
  f.since_unix_ms = num("sinceUnixMs", 0);
  const bool has_until = req.query.count("untilUnixMs") > 0;
  f.until_unix_ms = num("untilUnixMs", f.until_unix_ms);
  const int64_t minutes = num("minutes", 30);
  UsageBy by = UsageBy::kTenant;
  if (auto it = req.query.find("by"); it != req.query.end() && bad.ok()) {
    Result<UsageBy> b = ParseUsageBy(it->second);
    if (b.ok())
      by = *b;
    else
      bad = b.status();
  }
  if (bad.ok() && has_until && f.until_unix_ms <= f.since_unix_ms) {
    bad = Status::InvalidArgument("untilUnixMs must be after sinceUnixMs",
                                  "untilUnixMs");
  }
  std::string tenant;
  if (auto it = req.query.find("tenant"); it != req.query.end())
    tenant = it->second;
  Gate gate{Route::kReports, "read usage", "", ""};
  authed(std::move(gate), [ex, f, by, bad, tenant, idle, has_until, minutes](
                              Turn& t, const Principal& p) mutable {
    if (!bad.ok()) {
      t.Reply(ex, ErrorResponse(bad));
      return;
    }
    // A tenant's users see their tenant only; another tenant is empty.
    if (p.role != Role::kClusterAdmin) {
      if (!tenant.empty() && tenant != p.tenant) {
        t.Reply(ex, ErrorResponse(Status::NotFound("Tenant " + tenant +
                                                   " does not exist")));
        return;
      }
      tenant = p.tenant;
    }
    f.tenant = tenant;
    // At the end of the turn, so that what this turn closed is in the
    // store (read after the commit) and not also among the open rows.
    t.After([ex, f, by, idle, has_until, minutes, &t]() mutable {
      const int64_t now = t.txn.now_unix_ms;
      if (!has_until) f.until_unix_ms = now;
      if (idle) {
        json::array items;
        for (const State::IdleHolder& h :
             t.state.IdleHolders(f.tenant, now, minutes * 60000)) {
          UsageAmounts wasted;
          int64_t gpus_milli = 0;
          for (const store::UsageRow& u : h.rows) {
            UsageAmounts a = Clip(u, h.idle_since_ms, now);
            wasted.gpu_ms += a.gpu_ms;
            wasted.cost_micros += a.cost_micros;
            gpus_milli += u.quantity_milli;
          }
          items.push_back(json::object{
              {"workload", h.key},
              {"idleSinceUnixMs", h.idle_since_ms},
              {"idleMinutes", double(now - h.idle_since_ms) / 60000.0},
              {"gpus", double(gpus_milli) / 1000.0},
              {"wastedGpuHours", double(wasted.gpu_ms) / 3600000.0},
              {"wastedCostMicros", wasted.cost_micros},
              {"wastedCost", double(wasted.cost_micros) / 1e6}});
        }
        t.Reply(ex,
                JsonResponse(200, json::object{{"minutes", minutes},
                                               {"items", std::move(items)}}));
        return;
      }
      DeliverUsage(
          t, ex, f, t.state.OpenUsage(f.tenant, now),
          [f, by](std::vector<store::UsageRow>& rows) {
            return JsonResponse(
                200, UsageReport(rows, by, f.since_unix_ms, f.until_unix_ms));
          });
    });
  });
  return;
}

}  // namespace allot::server
