// Manifest reading, Kueue's configuration kinds: ResourceFlavor,
// ClusterQueue, Cohort, LocalQueue and WorkloadPriorityClass, in each API
// version Allot reads (kueue.x-k8s.io/v1beta1 and v1beta2; v1alpha1 for
// Cohort), with the shapes they share (selectors, resource groups, quotas).
//
// Versions: the fields are the same but for the spellings that Kueue's
// v1beta2 changed (apis/kueue/v1beta1/*_conversion.go): ClusterQueue
// cohort -> cohortName, flavorFungibility's Borrow and Preempt ->
// MayStopSearch, and Cohort parent (v1alpha1) -> parentName. A spelling of
// another version is an error that gives this version's (VersionedField);
// the defaults are the same in both.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/manifest_internal.h"
#include "core/parking_annotations.h"
#include "core/pool_order.h"
#include "core/priority_policy.h"

namespace allot::core::internal {

std::string_view KueueApiVersion(KueueApi api) {
  switch (api) {
    case KueueApi::kV1alpha1:
      return "kueue.x-k8s.io/v1alpha1";
    case KueueApi::kV1beta1:
      return "kueue.x-k8s.io/v1beta1";
    case KueueApi::kV1beta2:
      return "kueue.x-k8s.io/v1beta2";
    case KueueApi::kNone:
      break;
  }
  return "";
}

Status CheckVersionedFields(const Val& v, KueueApi api,
                            std::initializer_list<VersionedField> fields) {
  for (const VersionedField& f : fields) {
    const std::string field(f.field);
    if ((f.versions & ApiBit(api)) != 0 || v[field].unset()) continue;
    std::string where;
    for (KueueApi a : {KueueApi::kV1alpha1, KueueApi::kV1beta1,
                       KueueApi::kV1beta2}) {
      if ((f.versions & ApiBit(a)) == 0) continue;
      where += where.empty() ? std::string(KueueApiVersion(a))
                             : " and " + std::string(KueueApiVersion(a))
                                             .substr(sizeof("kueue.x-k8s.io/") - 1);
    }
    return v[field].Error("field " + Quote(field) + " is " + where +
                          "'s spelling; " + std::string(KueueApiVersion(api)) +
                          " spells it " + std::string(f.elsewhere));
  }
  return Status::Ok();
}

// A non-negative decimal with up to 6 fraction digits, in millionths.
Status ParseMicros(const Val& v, int64_t* out) {
  std::string s;
  ALLOT_RETURN_IF_ERROR(v.Require());
  ALLOT_RETURN_IF_ERROR(v.Get(&s));
  if (!s.empty() && s[0] == '-') {
    return v.Error("price must not be negative, got " + s);
  }
  size_t dot = s.find('.');
  std::string whole = s.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  auto digits = [](const std::string& x) {
    return x.find_first_not_of("0123456789") == std::string::npos;
  };
  if (whole.empty() || !digits(whole) || !digits(frac) ||
      (dot != std::string::npos && frac.empty()) || frac.size() > 6) {
    return v.Error("malformed price " + Quote(s) +
                   ": expected a decimal such as 2.5, at most 6 digits "
                   "after the point");
  }
  if (whole.size() > 12) return v.Error("price " + s + " is too large");
  frac.resize(6, '0');
  *out = std::stoll(whole) * 1000000 + std::stoll(frac);
  return Status::Ok();
}

namespace {

Status ParseSelector(const Val& v, LabelSelector* out) {
  ALLOT_RETURN_IF_ERROR(v.CheckFields({"matchLabels", "matchExpressions"}));
  ALLOT_RETURN_IF_ERROR(v["matchLabels"].Get(&out->match_labels));
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v["matchExpressions"].Items(&items));
  for (const Val& item : items) {
    using Op = LabelSelectorRequirement::Op;
    ALLOT_RETURN_IF_ERROR(item.CheckFields({"key", "operator", "values"}));
    LabelSelectorRequirement& r = out->match_expressions.emplace_back();
    ALLOT_RETURN_IF_ERROR(item["key"].GetName(&r.key));
    ALLOT_RETURN_IF_ERROR(item["operator"].Require());
    ALLOT_RETURN_IF_ERROR(
        item["operator"].GetEnum<Op>({{"In", Op::kIn},
                                      {"NotIn", Op::kNotIn},
                                      {"Exists", Op::kExists},
                                      {"DoesNotExist", Op::kDoesNotExist}},
                                     &r.op));
    ALLOT_RETURN_IF_ERROR(item["values"].Get(&r.values));
    bool set_op = r.op == Op::kIn || r.op == Op::kNotIn;
    if (set_op && r.values.empty()) {
      return item["values"].Error("must not be empty for operator In/NotIn");
    }
    if (!set_op && !r.values.empty()) {
      return item["values"].Error(
          "must be empty for operator Exists/DoesNotExist");
    }
  }
  return Status::Ok();
}

Status ParseResourceQuota(const Val& v, ResourceQuota* q) {
  ALLOT_RETURN_IF_ERROR(v.CheckFields(
      {"name", "nominalQuota", "borrowingLimit", "lendingLimit"}));
  ALLOT_RETURN_IF_ERROR(v["name"].GetName(&q->name));
  ALLOT_RETURN_IF_ERROR(v["nominalQuota"].Require());
  ALLOT_RETURN_IF_ERROR(v["nominalQuota"].GetNonNegative(&q->nominal_quota));
  for (auto [field, limit] : {std::pair{"borrowingLimit", &q->borrowing_limit},
                              std::pair{"lendingLimit", &q->lending_limit}}) {
    if (v[field].unset()) continue;
    ALLOT_RETURN_IF_ERROR(v[field].GetNonNegative(&limit->emplace()));
  }
  if (q->lending_limit && *q->lending_limit > q->nominal_quota) {
    return v["lendingLimit"].Error(
        "lendingLimit " + q->lending_limit->ToString() +
        " exceeds nominalQuota " + q->nominal_quota.ToString());
  }
  return Status::Ok();
}

// spec.resourceGroups of a ClusterQueue or Cohort: each flavor lists exactly
// the group's coveredResources; a resource and a flavor each belong to one
// group only.
Status ParseResourceGroups(const Val& v, std::vector<ResourceGroup>* out) {
  std::vector<Val> groups;
  ALLOT_RETURN_IF_ERROR(v.Items(&groups));
  std::map<std::string, size_t> group_of_resource, group_of_flavor;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Val& gv = groups[gi];
    const std::string group_ref = "resourceGroups[" + std::to_string(gi) + "]";
    ALLOT_RETURN_IF_ERROR(gv.CheckFields({"coveredResources", "flavors"}));
    ResourceGroup& g = out->emplace_back();
    std::vector<Val> covered;
    ALLOT_RETURN_IF_ERROR(gv["coveredResources"].Require());
    ALLOT_RETURN_IF_ERROR(gv["coveredResources"].Items(&covered));
    for (const Val& cv : covered) {
      std::string r;
      ALLOT_RETURN_IF_ERROR(cv.GetName(&r));
      auto [it, inserted] = group_of_resource.emplace(r, gi);
      if (!inserted) {
        return cv.Error(
            "resource " + r + " is already covered by " +
            (it->second == gi
                 ? std::string("this group")
                 : "resourceGroups[" + std::to_string(it->second) + "]"));
      }
      g.covered_resources.push_back(r);
    }
    std::vector<Val> flavors;
    ALLOT_RETURN_IF_ERROR(gv["flavors"].Items(&flavors));
    for (const Val& fv : flavors) {
      ALLOT_RETURN_IF_ERROR(fv.CheckFields({"name", "resources"}));
      FlavorQuotas& f = g.flavors.emplace_back();
      ALLOT_RETURN_IF_ERROR(fv["name"].GetName(&f.name));
      auto [it, inserted] = group_of_flavor.emplace(f.name, gi);
      if (!inserted) {
        return fv["name"].Error("flavor " + f.name +
                                " already appears in resourceGroups[" +
                                std::to_string(it->second) + "]");
      }
      std::vector<Val> resources;
      ALLOT_RETURN_IF_ERROR(fv["resources"].Items(&resources));
      std::set<std::string> listed;
      for (const Val& rv : resources) {
        ResourceQuota& q = f.resources.emplace_back();
        ALLOT_RETURN_IF_ERROR(ParseResourceQuota(rv, &q));
        if (group_of_resource.count(q.name) == 0 ||
            group_of_resource[q.name] != gi) {
          return rv["name"].Error("resource " + q.name +
                                  " is not in coveredResources of " +
                                  group_ref);
        }
        if (!listed.insert(q.name).second) {
          return rv["name"].Error("resource " + q.name + " is listed twice");
        }
      }
      for (const std::string& r : g.covered_resources) {
        if (listed.count(r) == 0) {
          return fv["resources"].Error("missing resource " + r +
                                       " (every flavor lists exactly the "
                                       "group's coveredResources)");
        }
      }
    }
  }
  return Status::Ok();
}

Status ParseFairWeight(const Val& v, int64_t* milli) {
  ALLOT_RETURN_IF_ERROR(v.CheckFields({"weight"}));
  Quantity w = Quantity::FromMilli(*milli);
  ALLOT_RETURN_IF_ERROR(v["weight"].GetNonNegative(&w));
  *milli = w.milli();
  return Status::Ok();
}

}  // namespace

Status ParseResourceFlavor(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.CheckFields(
      {"nodeLabels", "nodeTaints", "tolerations", "topologyName", "price"}));
  ResourceFlavor f;
  f.name = d.name;
  f.generate_name = d.generate_name;
  f.source = d.source;
  if (!spec["topologyName"].unset()) {
    ALLOT_RETURN_IF_ERROR(spec["topologyName"].GetName(&f.topology_name));
  }
  ALLOT_RETURN_IF_ERROR(spec["nodeLabels"].Get(&f.node_labels));
  ALLOT_RETURN_IF_ERROR(ParseTaints(spec["nodeTaints"], &f.node_taints));
  ALLOT_RETURN_IF_ERROR(ParseTolerations(spec["tolerations"], &f.tolerations));
  std::vector<std::pair<std::string, Val>> prices;
  ALLOT_RETURN_IF_ERROR(spec["price"].Entries(&prices));
  for (const auto& [resource, pv] : prices) {
    ALLOT_RETURN_IF_ERROR(ParseMicros(pv, &f.price_micros_per_hour[resource]));
  }
  out->flavors.push_back(std::move(f));
  return Status::Ok();
}

// Kueue's Topology (v1alpha1, v1beta1, v1beta2 alike): 1 to 16 distinct
// node labels, widest first; kubernetes.io/hostname only as the last
// (Kueue's CEL rules on TopologySpec.levels).
Status ParseTopology(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.Require());
  ALLOT_RETURN_IF_ERROR(spec.CheckFields({"levels"}));
  std::vector<Val> levels;
  ALLOT_RETURN_IF_ERROR(spec["levels"].Require());
  ALLOT_RETURN_IF_ERROR(spec["levels"].Items(&levels));
  if (levels.empty() || levels.size() > 16) {
    return spec["levels"].Error("must list 1 to 16 levels, got " +
                                std::to_string(levels.size()));
  }
  Topology t;
  t.name = d.name;
  t.generate_name = d.generate_name;
  t.source = d.source;
  for (size_t i = 0; i < levels.size(); ++i) {
    ALLOT_RETURN_IF_ERROR(levels[i].CheckFields({"nodeLabel"}));
    std::string label;
    ALLOT_RETURN_IF_ERROR(levels[i]["nodeLabel"].GetName(&label));
    if (std::find(t.levels.begin(), t.levels.end(), label) != t.levels.end()) {
      return levels[i]["nodeLabel"].Error("level " + Quote(label) +
                                          " is listed twice; levels must be unique");
    }
    if (label == kHostnameLabel && i + 1 != levels.size()) {
      return levels[i]["nodeLabel"].Error(
          std::string(kHostnameLabel) +
          " can only be the lowest (last) level of a topology");
    }
    t.levels.push_back(std::move(label));
  }
  out->topologies.push_back(std::move(t));
  return Status::Ok();
}

namespace {

Status ParsePreemption(const Val& v, PreemptionPolicy* p) {
  ALLOT_RETURN_IF_ERROR(v.CheckFields(
      {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"}));
  ALLOT_RETURN_IF_ERROR(v["withinClusterQueue"].GetEnum<WithinClusterQueue>(
      {{"Never", WithinClusterQueue::kNever},
       {"LowerPriority", WithinClusterQueue::kLowerPriority},
       {"LowerOrNewerEqualPriority",
        WithinClusterQueue::kLowerOrNewerEqualPriority}},
      &p->within_cluster_queue));
  ALLOT_RETURN_IF_ERROR(v["reclaimWithinCohort"].GetEnum<ReclaimWithinCohort>(
      {{"Never", ReclaimWithinCohort::kNever},
       {"LowerPriority", ReclaimWithinCohort::kLowerPriority},
       {"Any", ReclaimWithinCohort::kAny}},
      &p->reclaim_within_cohort));
  Val borrow = v["borrowWithinCohort"];
  ALLOT_RETURN_IF_ERROR(borrow.CheckFields({"policy", "maxPriorityThreshold"}));
  ALLOT_RETURN_IF_ERROR(borrow["policy"].GetEnum<BorrowWithinCohortPolicy>(
      {{"Never", BorrowWithinCohortPolicy::kNever},
       {"LowerPriority", BorrowWithinCohortPolicy::kLowerPriority}},
      &p->borrow_within_cohort));
  return borrow["maxPriorityThreshold"].Get(&p->max_priority_threshold);
}

// Borrow and Preempt are v1beta1's older spellings of MayStopSearch;
// v1beta2 dropped them.
Status ParseFungibilityPolicy(const Val& v, KueueApi api, const char* old,
                              FungibilityPolicy* out) {
  using P = FungibilityPolicy;
  std::string s;
  ALLOT_RETURN_IF_ERROR(v.Get(&s));
  if (s == old && api == KueueApi::kV1beta2) {
    return v.Error("value " + Quote(s) +
                   " is kueue.x-k8s.io/v1beta1's; kueue.x-k8s.io/v1beta2 "
                   "spells it MayStopSearch");
  }
  if (s == old) s = "MayStopSearch";
  if (s == "MayStopSearch") {
    *out = P::kMayStopSearch;
  } else if (s == "TryNextFlavor") {
    *out = P::kTryNextFlavor;
  } else if (!v.unset()) {
    return v.Error("unknown value " + Quote(s) +
                   " (expected one of: MayStopSearch, TryNextFlavor" +
                   (api == KueueApi::kV1beta2 ? std::string()
                                              : std::string(", ") + old) +
                   ")");
  }
  return Status::Ok();
}

Status ParseFungibility(const Val& v, KueueApi api, FlavorFungibility* f) {
  using P = FungibilityPolicy;
  ALLOT_RETURN_IF_ERROR(
      v.CheckFields({"whenCanBorrow", "whenCanPreempt", "preference"}));
  ALLOT_RETURN_IF_ERROR(ParseFungibilityPolicy(v["whenCanBorrow"], api,
                                               "Borrow", &f->when_can_borrow));
  ALLOT_RETURN_IF_ERROR(ParseFungibilityPolicy(
      v["whenCanPreempt"], api, "Preempt", &f->when_can_preempt));
  if (v["preference"].unset()) return Status::Ok();
  ALLOT_RETURN_IF_ERROR(v["preference"].GetEnum<FungibilityPreference>(
      {{"BorrowingOverPreemption",
        FungibilityPreference::kBorrowingOverPreemption},
       {"PreemptionOverBorrowing",
        FungibilityPreference::kPreemptionOverBorrowing}},
      &f->preference.emplace()));
  // Kueue's validation rule on FlavorFungibility.
  if (f->when_can_borrow != P::kTryNextFlavor ||
      f->when_can_preempt != P::kTryNextFlavor) {
    return v["preference"].Error(
        "preference can only be set when both whenCanBorrow and "
        "whenCanPreempt are TryNextFlavor");
  }
  return Status::Ok();
}

// ClusterQueue's fields by version: v1beta1 names the cohort `cohort`,
// v1beta2 `cohortName`.
const Names kClusterQueueV1beta1 = {
    "cohort",     "namespaceSelector", "resourceGroups", "queueingStrategy",
    "preemption", "flavorFungibility", "fairSharing",    "stopPolicy"};
const Names kClusterQueueV1beta2 = {
    "cohortName", "namespaceSelector", "resourceGroups", "queueingStrategy",
    "preemption", "flavorFungibility", "fairSharing",    "stopPolicy"};

}  // namespace

Status ParseClusterQueue(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  const bool v2 = d.api == KueueApi::kV1beta2;
  ALLOT_RETURN_IF_ERROR(CheckVersionedFields(
      spec, d.api,
      {{"cohort", ApiBit(KueueApi::kV1beta1), "cohortName"},
       {"cohortName", ApiBit(KueueApi::kV1beta2), "cohort"}}));
  ALLOT_RETURN_IF_ERROR(
      spec.CheckFields(v2 ? kClusterQueueV1beta2 : kClusterQueueV1beta1));
  ClusterQueue cq;
  cq.name = d.name;
  cq.generate_name = d.generate_name;
  cq.source = d.source;
  ALLOT_RETURN_IF_ERROR(spec[v2 ? "cohortName" : "cohort"].Get(&cq.cohort));
  if (!spec["namespaceSelector"].unset()) {
    ALLOT_RETURN_IF_ERROR(ParseSelector(spec["namespaceSelector"],
                                        &cq.namespace_selector.emplace()));
  }
  ALLOT_RETURN_IF_ERROR(
      ParseResourceGroups(spec["resourceGroups"], &cq.resource_groups));
  ALLOT_RETURN_IF_ERROR(spec["queueingStrategy"].GetEnum<QueueingStrategy>(
      {{"BestEffortFIFO", QueueingStrategy::kBestEffortFIFO},
       {"StrictFIFO", QueueingStrategy::kStrictFIFO}},
      &cq.queueing_strategy));
  ALLOT_RETURN_IF_ERROR(ParsePreemption(spec["preemption"], &cq.preemption));
  ALLOT_RETURN_IF_ERROR(
      ParseFungibility(spec["flavorFungibility"], d.api, &cq.flavor_fungibility));
  ALLOT_RETURN_IF_ERROR(
      ParseFairWeight(spec["fairSharing"], &cq.fair_weight_milli));
  ALLOT_RETURN_IF_ERROR(spec["stopPolicy"].GetEnum<StopPolicy>(
      {{"None", StopPolicy::kNone},
       {"Hold", StopPolicy::kHold},
       {"HoldAndDrain", StopPolicy::kHoldAndDrain}},
      &cq.stop_policy));
  cq.annotations = d.annotations;
  ALLOT_RETURN_IF_ERROR(
      DurationAnnotation(d.annotations, kMaxRunDurationKey, /*allow_zero=*/false, &cq.max_run_seconds));
  ALLOT_RETURN_IF_ERROR(
      DurationAnnotation(d.annotations, kIdleAfterKey, /*allow_zero=*/false, &cq.idle_after_seconds));
  ALLOT_RETURN_IF_ERROR(DurationAnnotation(d.annotations, kReclaimGraceKey, /*allow_zero=*/true,
                                           &cq.reclaim_grace_seconds));
  ALLOT_RETURN_IF_ERROR(DurationAnnotation(d.annotations, kMaxParkedKey, /*allow_zero=*/false,
                                           &cq.max_parked_seconds));
  ALLOT_RETURN_IF_ERROR(IdleActionStops(d.annotations).status());
  if (auto it = d.annotations.find(kPoolOrderKey); it != d.annotations.end()) {
    Result<PoolOrder> order = ParsePoolOrder(it->second);
    if (!order.ok()) {
      return Status::InvalidArgument(order.status().message(),
                                     std::string("metadata.annotations.") + kPoolOrderKey);
    }
  }
  out->cluster_queues.push_back(std::move(cq));
  return Status::Ok();
}

// Kueue's Cohort names its parent `parent` in v1alpha1 and `parentName` in
// v1beta1 and v1beta2. Allot reads both in v1alpha1 and v1beta1 (its own
// encoder wrote v1beta1 Cohorts with `parent` before v1beta2 came), and only
// parentName in v1beta2.
Status ParseCohort(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(CheckVersionedFields(
      spec, d.api,
      {{"parent", ApiBit(KueueApi::kV1alpha1) | ApiBit(KueueApi::kV1beta1),
        "parentName"}}));
  ALLOT_RETURN_IF_ERROR(spec.CheckFields(
      d.api == KueueApi::kV1beta2
          ? Names{"parentName", "resourceGroups", "fairSharing"}
          : Names{"parent", "parentName", "resourceGroups", "fairSharing"}));
  Cohort c;
  c.name = d.name;
  c.generate_name = d.generate_name;
  c.source = d.source;
  std::string parent;
  ALLOT_RETURN_IF_ERROR(spec["parentName"].Get(&c.parent));
  ALLOT_RETURN_IF_ERROR(spec["parent"].Get(&parent));
  if (!parent.empty() && !c.parent.empty() && parent != c.parent) {
    return spec["parent"].Error("conflicts with spec.parentName " +
                                Quote(c.parent));
  }
  if (c.parent.empty()) c.parent = parent;
  ALLOT_RETURN_IF_ERROR(
      ParseResourceGroups(spec["resourceGroups"], &c.resource_groups));
  ALLOT_RETURN_IF_ERROR(
      ParseFairWeight(spec["fairSharing"], &c.fair_weight_milli));
  out->cohorts.push_back(std::move(c));
  return Status::Ok();
}

Status ParseLocalQueue(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.CheckFields({"clusterQueue"}));
  LocalQueue q{d.ns, d.name, "", d.source, d.annotations, d.generate_name};
  ALLOT_RETURN_IF_ERROR(spec["clusterQueue"].GetName(&q.cluster_queue));
  ALLOT_RETURN_IF_ERROR(
      ParsePriorityPolicy(q.annotations, "LocalQueue " + d.ns + "/" + d.name).status());
  out->local_queues.push_back(std::move(q));
  return Status::Ok();
}

Status ParsePriorityClass(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(
      {"apiVersion", "kind", "metadata", "value", "description"}));
  WorkloadPriorityClass pc{d.name, 0, d.source, d.generate_name, false};
  ALLOT_RETURN_IF_ERROR(ParsePreemptible(d.annotations, &pc.preemptible));
  ALLOT_RETURN_IF_ERROR(d.root["value"].Require());
  ALLOT_RETURN_IF_ERROR(d.root["value"].Get(&pc.value));
  out->priority_classes.push_back(std::move(pc));
  return Status::Ok();
}

}  // namespace allot::core::internal
