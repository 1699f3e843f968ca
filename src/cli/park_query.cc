// `allot park|resume --prometheus URL --query PROMQL [--every D]`: an
// autoscaler's loop for those who drive parking from their own metrics, as
// KEDA drives replicas (docs/parking.md, "Driven by Prometheus"). Each
// round asks Prometheus for the query's series and parks (or resumes) the
// workload each names by its `namespace` and `workload` labels, the labels
// of Allot's per-workload metrics (allot_workload_idle_since_seconds,
// allot_workload_parked). A workload the server refuses (parked already,
// not admitted, not allowed) is reported and the round goes on.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "cli/client.h"
#include "cli/commands.h"
#include "core/duration.h"
#include "net/http.h"

namespace allot::cli {
namespace json = boost::json;

namespace {

// The (namespace, workload) pairs the query's instant vector names.
Result<std::set<std::pair<std::string, std::string>>> QueryWorkloads(net::HttpClient* prom,
                                                                     const std::string& query) {
  auto r = prom->Do("GET", "/api/v1/query?query=" + net::UrlEncode(query), {}, "");
  if (!r.ok()) return r.status();
  boost::system::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (ec || !v.is_object()) {
    return Status::FailedPrecondition("Prometheus answered " + std::to_string(r->status) +
                               " with no JSON");
  }
  if (JsonStr(v, {"status"}) != "success") {
    return Status::InvalidArgument("Prometheus refused the query: " + JsonStr(v, {"error"}));
  }
  if (JsonStr(v, {"data", "resultType"}) != "vector") {
    return Status::InvalidArgument("the query must give an instant vector, not a " +
                                   JsonStr(v, {"data", "resultType"}));
  }
  std::set<std::pair<std::string, std::string>> out;
  for (const json::value& s : v.at("data").at("result").as_array()) {
    const std::string ns = JsonStr(s, {"metric", "namespace"});
    const std::string name = JsonStr(s, {"metric", "workload"});
    if (ns.empty() || name.empty()) {
      return Status::InvalidArgument(
          "a series of the query has no namespace and workload labels (keep them, as "
          "allot_workload_idle_since_seconds has them): " +
          json::serialize(s.at("metric")));
    }
    out.emplace(ns, name);
  }
  return out;
}

}  // namespace

int CmdParkByQuery(const ClientFlags& c, const std::string& action, const std::string& prometheus,
                   const std::string& query, const std::string& every) {
  int64_t every_s = 0;
  if (!every.empty()) {
    Result<int64_t> secs = core::ParseDurationSeconds(every);
    if (!secs.ok() || *secs <= 0) {
      return Fail(Status::InvalidArgument(
          "--every " + every + ": " +
          (secs.ok() ? std::string("must be longer than 0s") : secs.status().message())));
    }
    every_s = *secs;
  }
  auto cl = Client::Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  net::ClientOptions o;
  o.base_url = prometheus;
  auto prom = net::HttpClient::Create(o);
  if (!prom.ok()) return Fail(prom.status());
  for (;;) {
    auto found = QueryWorkloads(prom->get(), query);
    if (!found.ok()) {
      if (every_s <= 0) return Fail(found.status());
      std::cerr << "allot: " << found.status().message() << "\n";  // The next round may do.
    } else {
      for (const auto& [ns, name] : *found) {
        auto r = (*cl)->Call("POST", "/api/v1/workloads/" + net::UrlEncode(ns) + "/" +
                                         net::UrlEncode(name) + "/" + action);
        if (!r.ok()) {
          std::cerr << "allot: workload " << ns << "/" << name << ": " << r.status().message()
                    << "\n";
          continue;
        }
        std::cout << "workload " << ns << "/" << name << " " << JsonStr(*r, {"result"}) << "\n"
                  << std::flush;
      }
    }
    if (every_s <= 0) return kExitOk;
    std::this_thread::sleep_for(std::chrono::seconds(every_s));
  }
}

}  // namespace allot::cli
