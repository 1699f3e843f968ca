#include "cli/kueue_version.h"

#include <boost/json.hpp>

#include <string>

#include "core/manifest.h"

namespace allot::cli {
namespace {

namespace json = boost::json;

Result<json::object> Convert(const json::object& o, core::KueueVersion v) {
  const json::value* api = o.if_contains("apiVersion");
  if (!api || !api->is_string() ||
      std::string(api->as_string()).rfind("kueue.x-k8s.io/", 0) != 0) {
    return o;
  }
  core::Config c;
  Status s = core::ParseManifests(json::serialize(o), "the server's answer",
                                  &c, core::ParseLimits::Trusted());
  if (!s.ok()) return s;
  json::object out;
  if (c.flavors.size() == 1) out = core::EncodeFlavor(c.flavors[0], v);
  if (c.topologies.size() == 1) out = core::EncodeTopology(c.topologies[0], v);
  if (c.cohorts.size() == 1) out = core::EncodeCohort(c.cohorts[0], v);
  if (c.cluster_queues.size() == 1) {
    out = core::EncodeClusterQueue(c.cluster_queues[0], v);
  }
  if (c.local_queues.size() == 1) {
    out = core::EncodeLocalQueue(c.local_queues[0], v);
  }
  if (c.priority_classes.size() == 1) {
    out = core::EncodePriorityClass(c.priority_classes[0], v);
  }
  if (out.empty()) return o;  // A Kueue Workload: as it came.
  if (const json::value* m = o.if_contains("metadata"); m && m->is_object()) {
    if (const json::value* rv = m->as_object().if_contains("resourceVersion")) {
      out["metadata"].as_object()["resourceVersion"] = *rv;
    }
  }
  if (const json::value* st = o.if_contains("status")) out["status"] = *st;
  return out;
}

}  // namespace

Result<json::value> InKueueVersion(const json::value& v,
                                   core::KueueVersion version) {
  if (!v.is_object()) return v;
  json::object o = v.as_object();
  if (json::value* items = o.if_contains("items"); items && items->is_array()) {
    for (json::value& item : items->as_array()) {
      if (!item.is_object()) continue;
      Result<json::object> r = Convert(item.as_object(), version);
      if (!r.ok()) return r.status();
      item = std::move(*r);
    }
    return json::value(std::move(o));
  }
  if (json::value* obj = o.if_contains("object"); obj && obj->is_object()) {
    Result<json::object> r = Convert(obj->as_object(), version);
    if (!r.ok()) return r.status();
    *obj = std::move(*r);
    return json::value(std::move(o));
  }
  Result<json::object> r = Convert(o, version);
  if (!r.ok()) return r.status();
  return json::value(std::move(*r));
}

}  // namespace allot::cli
