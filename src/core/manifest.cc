// Manifest reading: YAML documents -> core::Config.
//
// Layout: (1) shared shapes (taints, selectors, resource groups, requests);
// (2) one Parse function per non-workload kind and the kind table; (3)
// ParseManifests. Val and Doc live in manifest_internal.h, the workload
// kinds in manifest_workload.cc, ValidateConfig in manifest_validate.cc.
// yaml-cpp is read in manifest_yaml.cc, whose exceptions never leave it.
#include "core/manifest.h"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/serialize.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/manifest_encode.h"
#include "core/manifest_internal.h"
#include "core/names.h"
#include "core/priority_policy.h"

namespace allot::core {
namespace internal {
namespace {

// "FILE: document N (Kind name)", tolerating a still unknown kind or name.
std::string Where(const SourceRef& src, const std::string& name) {
  if (name.empty()) {
    std::string s = src.file + ": document " + std::to_string(src.doc_index);
    return src.kind.empty() ? s : s + " (" + src.kind + ")";
  }
  return src.Describe(name);
}

}  // namespace

// Turns an error with a relative field into the user-facing message.
Status At(const SourceRef& src, const std::string& name, const Status& s) {
  return Status::InvalidArgument(Where(src, name) + ": " + s.ToString(),
                                 s.field());
}

// ---- Shared shapes ---------------------------------------------------------

namespace {

const EnumTable<TaintEffect> kEffects = {
    {"NoSchedule", TaintEffect::kNoSchedule},
    {"PreferNoSchedule", TaintEffect::kPreferNoSchedule},
    {"NoExecute", TaintEffect::kNoExecute}};

}  // namespace

Status ParseTaints(const Val& v, std::vector<Taint>* out) {
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v.Items(&items));
  for (const Val& item : items) {
    ALLOT_RETURN_IF_ERROR(
        item.CheckFields({"key", "value", "effect"}, {"timeAdded"}));
    Taint& t = out->emplace_back();
    ALLOT_RETURN_IF_ERROR(item["key"].GetName(&t.key));
    ALLOT_RETURN_IF_ERROR(item["value"].Get(&t.value));
    ALLOT_RETURN_IF_ERROR(item["effect"].Require());
    ALLOT_RETURN_IF_ERROR(item["effect"].GetEnum(kEffects, &t.effect));
  }
  return Status::Ok();
}

Status ParseTolerations(const Val& v, std::vector<Toleration>* out) {
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v.Items(&items));
  for (const Val& item : items) {
    ALLOT_RETURN_IF_ERROR(item.CheckFields(
        {"key", "operator", "value", "effect"}, {"tolerationSeconds"}));
    Toleration& t = out->emplace_back();
    ALLOT_RETURN_IF_ERROR(item["key"].Get(&t.key));
    ALLOT_RETURN_IF_ERROR(item["operator"].GetEnum<TolerationOperator>(
        {{"Equal", TolerationOperator::kEqual},
         {"Exists", TolerationOperator::kExists}},
        &t.op));
    ALLOT_RETURN_IF_ERROR(item["value"].Get(&t.value));
    if (!item["effect"].unset()) {
      TaintEffect e{};
      ALLOT_RETURN_IF_ERROR(item["effect"].GetEnum(kEffects, &e));
      t.effect = e;
    }
    if (t.op == TolerationOperator::kExists && !t.value.empty()) {
      return item["value"].Error("must be empty when operator is Exists");
    }
    if (t.key.empty() && t.op != TolerationOperator::kExists) {
      return item["operator"].Error("must be Exists when key is empty");
    }
  }
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

// Per-pod requests: non-negative; GPUs and MIG slices in whole units.
Status ParseRequests(const Val& v, ResourceList* out) {
  std::vector<std::pair<std::string, Val>> entries;
  ALLOT_RETURN_IF_ERROR(v.Entries(&entries));
  for (const auto& [resource, qv] : entries) {
    Quantity q;
    ALLOT_RETURN_IF_ERROR(qv.Require());
    ALLOT_RETURN_IF_ERROR(qv.GetNonNegative(&q));
    if (IsGpuResource(resource) && q.milli() % 1000 != 0) {
      return qv.Error(resource + " must be a whole number, got " +
                      q.ToString());
    }
    if (IsGpuResource(resource) && q.milli() > kMaxGpusPerPod * 1000) {
      return qv.Error(resource + " per pod must be at most " +
                      std::to_string(kMaxGpusPerPod) + ", got " + q.ToString());
    }
    (*out)[resource] = q;
  }
  return Status::Ok();
}

// ---- Kinds -----------------------------------------------------------------

const Names kTopFields = {"apiVersion", "kind", "metadata", "spec"};

namespace {

// Cluster-scoped kinds ignore metadata.namespace, as kubectl does.
Status ParseMetadata(bool namespaced, bool name_required, Doc* d) {
  const Val& m = d->metadata;
  // The name first, so that later errors can show it.
  ALLOT_RETURN_IF_ERROR(m.CheckMap());
  if (name_required) ALLOT_RETURN_IF_ERROR(m["name"].Require());
  ALLOT_RETURN_IF_ERROR(m["name"].Get(&d->name));
  if (name_required && d->name.empty()) {
    return m["name"].Error("must not be empty");
  }
  ALLOT_RETURN_IF_ERROR(m.CheckFields(
      {"name", "namespace", "labels", "annotations", "creationTimestamp"},
      {"uid", "resourceVersion", "generation", "managedFields", "finalizers",
       "ownerReferences", "selfLink", "generateName", "deletionTimestamp",
       "deletionGracePeriodSeconds"}));
  if (namespaced) {
    ALLOT_RETURN_IF_ERROR(m["namespace"].Get(&d->ns));
    if (d->ns.empty()) d->ns = "default";
  }
  ALLOT_RETURN_IF_ERROR(m["labels"].Get(&d->labels));
  return m["annotations"].Get(&d->annotations);
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

Status ParseResourceFlavor(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(
      spec.CheckFields({"nodeLabels", "nodeTaints", "tolerations", "price"}));
  ResourceFlavor f;
  f.name = d.name;
  f.source = d.source;
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

// A name that two API versions spell differently (cohort / cohortName).
Status ParseAliased(const Val& spec, const char* a, const char* b,
                    std::string* out) {
  std::string va, vb;
  ALLOT_RETURN_IF_ERROR(spec[a].Get(&va));
  ALLOT_RETURN_IF_ERROR(spec[b].Get(&vb));
  if (!va.empty() && !vb.empty() && va != vb) {
    return spec[b].Error("conflicts with " + spec[a].path() + " " + Quote(va));
  }
  *out = va.empty() ? vb : va;
  return Status::Ok();
}

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

Status ParseFungibility(const Val& v, FlavorFungibility* f) {
  using P = FungibilityPolicy;
  ALLOT_RETURN_IF_ERROR(v.CheckFields({"whenCanBorrow", "whenCanPreempt"}));
  // Borrow and Preempt are the values of Kueue before v0.9.
  ALLOT_RETURN_IF_ERROR(
      v["whenCanBorrow"].GetEnum<P>({{"MayStopSearch", P::kMayStopSearch},
                                     {"TryNextFlavor", P::kTryNextFlavor},
                                     {"Borrow", P::kMayStopSearch}},
                                    &f->when_can_borrow));
  return v["whenCanPreempt"].GetEnum<P>({{"MayStopSearch", P::kMayStopSearch},
                                         {"TryNextFlavor", P::kTryNextFlavor},
                                         {"Preempt", P::kMayStopSearch}},
                                        &f->when_can_preempt);
}

Status ParseClusterQueue(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(
      spec.CheckFields({"cohort", "cohortName", "namespaceSelector",
                        "resourceGroups", "queueingStrategy", "preemption",
                        "flavorFungibility", "fairSharing", "stopPolicy"}));
  ClusterQueue cq;
  cq.name = d.name;
  cq.source = d.source;
  ALLOT_RETURN_IF_ERROR(ParseAliased(spec, "cohort", "cohortName", &cq.cohort));
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
      ParseFungibility(spec["flavorFungibility"], &cq.flavor_fungibility));
  ALLOT_RETURN_IF_ERROR(
      ParseFairWeight(spec["fairSharing"], &cq.fair_weight_milli));
  ALLOT_RETURN_IF_ERROR(spec["stopPolicy"].GetEnum<StopPolicy>(
      {{"None", StopPolicy::kNone},
       {"Hold", StopPolicy::kHold},
       {"HoldAndDrain", StopPolicy::kHoldAndDrain}},
      &cq.stop_policy));
  cq.annotations = d.annotations;
  if (auto it = d.annotations.find(kMaxRunDurationKey); it != d.annotations.end()) {
    const std::string field = std::string("metadata.annotations.") + kMaxRunDurationKey;
    Result<int64_t> secs = ParseDurationSeconds(it->second);
    if (!secs.ok()) {
      return Status::InvalidArgument(
          std::string(kMaxRunDurationKey) + ": " + secs.status().message(), field);
    }
    if (*secs <= 0) {
      return Status::InvalidArgument(
          std::string(kMaxRunDurationKey) + ": must be longer than 0s", field);
    }
    cq.max_run_seconds = *secs;
  }
  out->cluster_queues.push_back(std::move(cq));
  return Status::Ok();
}

// v1alpha1 spells the parent parentName, v1beta1 parent; both are accepted.
Status ParseCohort(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.CheckFields(
      {"parent", "parentName", "resourceGroups", "fairSharing"}));
  Cohort c;
  c.name = d.name;
  c.source = d.source;
  ALLOT_RETURN_IF_ERROR(ParseAliased(spec, "parentName", "parent", &c.parent));
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
  LocalQueue q{d.ns, d.name, "", d.source, d.annotations};
  ALLOT_RETURN_IF_ERROR(spec["clusterQueue"].GetName(&q.cluster_queue));
  ALLOT_RETURN_IF_ERROR(
      ParsePriorityPolicy(q.annotations, "LocalQueue " + d.ns + "/" + d.name).status());
  out->local_queues.push_back(std::move(q));
  return Status::Ok();
}

Status ParsePriorityClass(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(
      {"apiVersion", "kind", "metadata", "value", "description"}));
  WorkloadPriorityClass pc{d.name, 0, d.source};
  ALLOT_RETURN_IF_ERROR(d.root["value"].Require());
  ALLOT_RETURN_IF_ERROR(d.root["value"].Get(&pc.value));
  out->priority_classes.push_back(std::move(pc));
  return Status::Ok();
}

Status ParseNamespace(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields({"apiVersion", "kind", "metadata"},
                                           {"spec", "status"}));
  ALLOT_RETURN_IF_ERROR(ParsePriorityPolicy(d.annotations, "Tenant " + d.name).status());
  out->namespaces.push_back(Namespace{d.name, d.labels, d.source, d.annotations});
  return Status::Ok();
}

// fairSharing may sit at the top level or under spec.
Status ParseSchedulerConfig(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(
      {"apiVersion", "kind", "metadata", "spec", "fairSharing"}));
  ALLOT_RETURN_IF_ERROR(d.root["spec"].CheckFields({"fairSharing"}));
  Val fs = d.root["fairSharing"];
  if (!d.root["spec"]["fairSharing"].unset()) {
    if (!fs.unset()) return fs.Error("given both here and under spec");
    fs = d.root["spec"]["fairSharing"];
  }
  ALLOT_RETURN_IF_ERROR(fs.CheckFields({"enable", "preemptionStrategies"}));
  SchedulerConfig c;
  ALLOT_RETURN_IF_ERROR(fs["enable"].Get(&c.fair_sharing));
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(fs["preemptionStrategies"].Items(&items));
  if (!items.empty()) c.preemption_strategies.clear();
  for (const Val& item : items) {
    ALLOT_RETURN_IF_ERROR(item.GetEnum<FairSharingStrategy>(
        {{"LessThanOrEqualToFinalShare",
          FairSharingStrategy::kLessThanOrEqualToFinalShare},
         {"LessThanInitialShare", FairSharingStrategy::kLessThanInitialShare}},
        &c.preemption_strategies.emplace_back()));
  }
  out->scheduler = std::move(c);
  return Status::Ok();
}

Status ParseNode(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(
      d.root.CheckFields({"apiVersion", "kind", "metadata", "spec", "status"}));
  Node n;
  n.name = d.name;
  n.labels = d.labels;
  n.source = d.source;
  Val spec = d.root["spec"], status = d.root["status"];
  ALLOT_RETURN_IF_ERROR(spec.CheckFields({"unschedulable", "taints"}));
  ALLOT_RETURN_IF_ERROR(spec["unschedulable"].Get(&n.unschedulable));
  ALLOT_RETURN_IF_ERROR(ParseTaints(spec["taints"], &n.taints));
  // allocatedGpus and conditions are what the server computes on read (GET
  // /api/v1/nodes): accepted so that what it lists can be applied again,
  // and ignored.
  ALLOT_RETURN_IF_ERROR(
      status.CheckFields({"capacity", "gpus", "allocatedGpus", "conditions"}));
  int32_t allocated = 0;
  ALLOT_RETURN_IF_ERROR(status["allocatedGpus"].Get(&allocated));
  Val capacity = status["capacity"];
  ALLOT_RETURN_IF_ERROR(capacity.CheckFields({"cpu", "memory"}));
  ALLOT_RETURN_IF_ERROR(capacity["cpu"].GetNonNegative(&n.cpu));
  ALLOT_RETURN_IF_ERROR(capacity["memory"].GetNonNegative(&n.memory));
  std::vector<Val> gpus;
  ALLOT_RETURN_IF_ERROR(status["gpus"].Items(&gpus));
  for (const Val& gv : gpus) {
    ALLOT_RETURN_IF_ERROR(
        gv.CheckFields({"uuid", "product", "memory", "health", "mig"}));
    Gpu& g = n.gpus.emplace_back();
    ALLOT_RETURN_IF_ERROR(gv["uuid"].GetName(&g.uuid));
    ALLOT_RETURN_IF_ERROR(gv["product"].Get(&g.product));
    ALLOT_RETURN_IF_ERROR(gv["memory"].GetNonNegative(&g.memory));
    ALLOT_RETURN_IF_ERROR(gv["health"].GetEnum<bool>(
        {{"Healthy", true}, {"Unhealthy", false}}, &g.healthy));
    std::vector<Val> slices;
    ALLOT_RETURN_IF_ERROR(gv["mig"].Items(&slices));
    for (const Val& sv : slices) {
      ALLOT_RETURN_IF_ERROR(sv.CheckFields({"uuid", "profile"}));
      MigSlice& m = g.mig.emplace_back();
      ALLOT_RETURN_IF_ERROR(sv["uuid"].GetName(&m.uuid));
      ALLOT_RETURN_IF_ERROR(sv["profile"].GetName(&m.profile));
    }
  }
  out->nodes.push_back(std::move(n));
  return Status::Ok();
}

struct KindParser {
  std::string_view api_version;
  std::string_view kind;
  bool namespaced;
  Status (*parse)(const Doc&, Config*);
};

constexpr char kKueue[] = "kueue.x-k8s.io/v1beta1";
constexpr char kAllot[] = "allot.dev/v1";
constexpr KindParser kKinds[] = {
    {kKueue, "ResourceFlavor", false, ParseResourceFlavor},
    {kKueue, "ClusterQueue", false, ParseClusterQueue},
    {kKueue, "Cohort", false, ParseCohort},
    {"kueue.x-k8s.io/v1alpha1", "Cohort", false, ParseCohort},
    {kKueue, "LocalQueue", true, ParseLocalQueue},
    {kKueue, "WorkloadPriorityClass", false, ParsePriorityClass},
    {kKueue, "Workload", true, ParseKueueWorkload},
    {"v1", "Namespace", false, ParseNamespace},
    {"batch/v1", "Job", true, ParseJob},
    {kAllot, "SchedulerConfig", false, ParseSchedulerConfig},
    {kAllot, "Node", false, ParseNode},
    {kAllot, "NodePool", false, ParseNodePool},
    {kAllot, "Workload", true, ParseAllotWorkload},
};

// A pod set's total request (count x per pod) must stay far from int64's
// limit, so that quota sums over many workloads cannot overflow.
Status CheckTotals(const Workload& w) {
  constexpr int64_t kMaxTotalMilli = int64_t(1) << 60;
  for (size_t i = 0; i < w.pod_sets.size(); ++i) {
    const PodSet& ps = w.pod_sets[i];
    for (const auto& [r, q] : ps.requests) {
      int64_t total = 0;
      if (__builtin_mul_overflow(q.milli(), int64_t(ps.count), &total) ||
          total > kMaxTotalMilli) {
        return Status::InvalidArgument(
            "the pod set's total request of " + r + " (" +
                std::to_string(ps.count) + " x " + q.ToString() +
                ") is absurdly large",
            "spec.podSets[" + std::to_string(i) + "]");
      }
    }
  }
  return Status::Ok();
}

// Bounds on a decoded object, so that a request cannot make the server
// store (and schedule, place and encode) an absurd one. Kueue allows 8 pod
// sets; the rest are far past any real workload.
constexpr size_t kMaxPodSets = 8;
constexpr int64_t kMaxPodsPerWorkload = 10000;
constexpr size_t kMaxCommandEntries = 1024;  // command and args, each.
constexpr size_t kMaxEnvEntries = 1024;
constexpr size_t kMaxLabels = 256;  // Labels, and annotations.
constexpr size_t kMaxAnnotationBytes = 256 * 1024;  // As Kubernetes.

std::string Limit(size_t n, const char* what) {
  return "at most " + std::to_string(n) + " " + what + " (the limit)";
}

struct Counts {
  size_t workloads, nodes, cluster_queues, flavors, cohorts, local_queues,
      priority_classes, namespaces;
};
Counts CountsOf(const Config& c) {
  return {c.workloads.size(),      c.nodes.size(),        c.cluster_queues.size(),
          c.flavors.size(),        c.cohorts.size(),      c.local_queues.size(),
          c.priority_classes.size(), c.namespaces.size()};
}

// Label and annotation keys, resource names: Kubernetes qualified names;
// label values as Kubernetes' (core/names.h).
Status CheckKey(const std::string& key, const std::string& field, const char* what) {
  std::string why = QualifiedNameError(key);
  if (why.empty()) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " '" + key + "' is not valid: " + why,
                                 field);
}
Status CheckLabels(const Labels& labels, const std::string& field) {
  for (const auto& [k, v] : labels) {
    ALLOT_RETURN_IF_ERROR(CheckKey(k, field, "label key"));
    if (std::string why = LabelValueError(v); !why.empty()) {
      return Status::InvalidArgument(
          "the value '" + v + "' of label " + k + " is not valid: " + why, field + "[" + k + "]");
    }
  }
  return Status::Ok();
}
template <typename Map>
Status CheckResourceNames(const Map& m, const std::string& field) {
  for (const auto& kv : m) ALLOT_RETURN_IF_ERROR(CheckKey(kv.first, field, "resource name"));
  return Status::Ok();
}

// The syntax of the names inside the objects a document added (after
// `before`): resource names, selectors' and flavors' labels.
Status CheckObjectNames(const Counts& before, const Config& out) {
  for (size_t i = before.workloads; i < out.workloads.size(); ++i) {
    const Workload& w = out.workloads[i];
    for (size_t j = 0; j < w.pod_sets.size(); ++j) {
      std::string at = "spec.podSets[" + std::to_string(j) + "]";
      ALLOT_RETURN_IF_ERROR(CheckResourceNames(w.pod_sets[j].requests, at + ".template.resources.requests"));
      ALLOT_RETURN_IF_ERROR(CheckLabels(w.pod_sets[j].node_selector, at + ".template.nodeSelector"));
    }
  }
  for (size_t i = before.cluster_queues; i < out.cluster_queues.size(); ++i) {
    const ClusterQueue& cq = out.cluster_queues[i];
    for (size_t g = 0; g < cq.resource_groups.size(); ++g) {
      const ResourceGroup& rg = cq.resource_groups[g];
      std::string at = "spec.resourceGroups[" + std::to_string(g) + "]";
      for (const std::string& r : rg.covered_resources) {
        ALLOT_RETURN_IF_ERROR(CheckKey(r, at + ".coveredResources", "resource name"));
      }
      for (size_t f = 0; f < rg.flavors.size(); ++f) {
        for (const ResourceQuota& q : rg.flavors[f].resources) {
          ALLOT_RETURN_IF_ERROR(CheckKey(
              q.name, at + ".flavors[" + std::to_string(f) + "].resources", "resource name"));
        }
      }
    }
    if (cq.namespace_selector) {
      ALLOT_RETURN_IF_ERROR(
          CheckLabels(cq.namespace_selector->match_labels, "spec.namespaceSelector.matchLabels"));
      for (const LabelSelectorRequirement& r : cq.namespace_selector->match_expressions) {
        ALLOT_RETURN_IF_ERROR(
            CheckKey(r.key, "spec.namespaceSelector.matchExpressions", "label key"));
      }
    }
  }
  for (size_t i = before.flavors; i < out.flavors.size(); ++i) {
    ALLOT_RETURN_IF_ERROR(CheckLabels(out.flavors[i].node_labels, "spec.nodeLabels"));
    ALLOT_RETURN_IF_ERROR(CheckResourceNames(out.flavors[i].price_micros_per_hour, "spec.price"));
  }
  return Status::Ok();
}

Status CheckMetadataLimits(const Doc& d) {
  ALLOT_RETURN_IF_ERROR(CheckLabels(d.labels, "metadata.labels"));
  for (const auto& kv : d.annotations) {
    ALLOT_RETURN_IF_ERROR(CheckKey(kv.first, "metadata.annotations", "annotation key"));
  }
  if (d.labels.size() > kMaxLabels) {
    return Status::InvalidArgument(
        std::to_string(d.labels.size()) + " labels; " + Limit(kMaxLabels, "are allowed"),
        "metadata.labels");
  }
  if (d.annotations.size() > kMaxLabels) {
    return Status::InvalidArgument(std::to_string(d.annotations.size()) +
                                       " annotations; " + Limit(kMaxLabels, "are allowed"),
                                   "metadata.annotations");
  }
  size_t bytes = 0;
  for (const auto& [k, v] : d.annotations) bytes += k.size() + v.size();
  if (bytes > kMaxAnnotationBytes) {
    return Status::InvalidArgument(
        "annotations of " + std::to_string(bytes) + " bytes; " +
            Limit(kMaxAnnotationBytes, "bytes are allowed, as in Kubernetes"),
        "metadata.annotations");
  }
  return Status::Ok();
}

Status CheckWorkloadLimits(const Workload& w) {
  if (w.pod_sets.size() > kMaxPodSets) {
    return Status::InvalidArgument(
        std::to_string(w.pod_sets.size()) + " pod sets; " +
            Limit(kMaxPodSets, "are allowed, as in Kueue"),
        "spec.podSets");
  }
  int64_t pods = 0;
  for (size_t i = 0; i < w.pod_sets.size(); ++i) {
    const PodSet& ps = w.pod_sets[i];
    std::string at = "spec.podSets[" + std::to_string(i) + "]";
    pods += ps.count;
    if (pods > kMaxPodsPerWorkload) {
      return Status::InvalidArgument(
          "the workload has " + std::to_string(pods) + "+ pods; " +
              Limit(kMaxPodsPerWorkload, "pods per workload are allowed"),
          at + ".count");
    }
    if (ps.command.size() > kMaxCommandEntries) {
      return Status::InvalidArgument(
          "command of " + std::to_string(ps.command.size()) + " entries; " +
              Limit(kMaxCommandEntries, "are allowed"),
          at + ".command");
    }
    if (ps.args.size() > kMaxCommandEntries) {
      return Status::InvalidArgument(
          "args of " + std::to_string(ps.args.size()) + " entries; " +
              Limit(kMaxCommandEntries, "are allowed"),
          at + ".args");
    }
    if (ps.env.size() > kMaxEnvEntries) {
      return Status::InvalidArgument(
          "env of " + std::to_string(ps.env.size()) + " entries; " +
              Limit(kMaxEnvEntries, "are allowed"),
          at + ".env");
    }
  }
  return Status::Ok();
}

// How many objects of each kind a Config holds.

// The stored size of each object the document added (after `before`): its
// JSON encoding, as the server keeps it, must stay within max_bytes.
Status CheckEncodedSize(const Counts& before, const Config& out,
                        int64_t max_bytes) {
  if (max_bytes <= 0) return Status::Ok();
  auto check = [&](const auto& objs, size_t n, auto encode) -> Status {
    for (size_t i = n; i < objs.size(); ++i) {
      size_t size = boost::json::serialize(encode(objs[i])).size();
      if (static_cast<int64_t>(size) > max_bytes) {
        return Status::InvalidArgument(
            "the object encodes to " + std::to_string(size) + " bytes; " +
            "at most " + std::to_string(max_bytes) +
            " bytes are allowed for one stored object (the limit)");
      }
    }
    return Status::Ok();
  };
  ALLOT_RETURN_IF_ERROR(check(out.workloads, before.workloads, EncodeWorkload));
  ALLOT_RETURN_IF_ERROR(check(out.nodes, before.nodes, EncodeNode));
  ALLOT_RETURN_IF_ERROR(check(out.cluster_queues, before.cluster_queues, EncodeClusterQueue));
  ALLOT_RETURN_IF_ERROR(check(out.flavors, before.flavors, EncodeFlavor));
  ALLOT_RETURN_IF_ERROR(check(out.cohorts, before.cohorts, EncodeCohort));
  ALLOT_RETURN_IF_ERROR(check(out.local_queues, before.local_queues, EncodeLocalQueue));
  ALLOT_RETURN_IF_ERROR(check(out.priority_classes, before.priority_classes, EncodePriorityClass));
  return check(out.namespaces, before.namespaces, EncodeNamespace);
}

// Parses one document into *out. `scheduler_doc` remembers the document of
// this file's SchedulerConfig, of which there may be one.
Status ParseDocument(const Tree& node, const std::string& file, int index,
                     const ParseLimits& limits, int* scheduler_doc, Config* out) {
  Doc d(&node, SourceRef{file, index, ""});
  if (d.root.unset()) return Status::Ok();  // An empty document.
  if (!d.root.IsMap()) {
    return At(
        d.source, "",
        Status::InvalidArgument("expected a mapping with apiVersion and kind"));
  }
  std::string api_version, kind;
  Status s = d.root["apiVersion"].GetName(&api_version);
  if (s.ok()) s = d.root["kind"].GetName(&kind);
  if (!s.ok()) return At(d.source, "", s);
  const KindParser* parser = nullptr;
  for (const KindParser& k : kKinds) {
    if (k.api_version == api_version && k.kind == kind) parser = &k;
  }
  if (parser == nullptr) {
    return At(
        d.source, "",
        Status::InvalidArgument(
            "unknown kind " + kind + " in apiVersion " + api_version, "kind"));
  }
  d.source.kind = kind;
  d.metadata = d.root["metadata"];
  bool is_config = kind == "SchedulerConfig";
  s = ParseMetadata(parser->namespaced, /*name_required=*/!is_config, &d);
  if (s.ok() && limits.object_limits) s = CheckMetadataLimits(d);
  if (!s.ok()) return At(d.source, d.name, s);
  if (is_config && *scheduler_doc >= 0) {
    return At(d.source, d.name,
              Status::InvalidArgument(
                  "a second SchedulerConfig (the first is document " +
                  std::to_string(*scheduler_doc) + ")"));
  }
  if (is_config) *scheduler_doc = index;
  size_t workloads_before = out->workloads.size();
  Counts before = CountsOf(*out);
  s = parser->parse(d, out);
  if (s.ok() && out->workloads.size() > workloads_before) {
    s = CheckTotals(out->workloads.back());
    if (s.ok() && limits.object_limits) s = CheckWorkloadLimits(out->workloads.back());
  }
  if (s.ok() && limits.object_limits) s = CheckObjectNames(before, *out);
  if (s.ok()) s = CheckEncodedSize(before, *out, limits.max_object_bytes);
  return s.ok() ? s : At(d.source, d.DisplayName(), s);
}

// Builds a Tree from JSON text with Boost.JSON's SAX parser. Unlike
// boost::json::parse it keeps repeated keys (CheckFields then reports
// "field given twice", as for YAML) and the exact text of numbers.
class TreeBuilder {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  using ec_t = boost::system::error_code;
  using sv = boost::json::string_view;

  Tree root;
  // Set before parsing: JSON has no aliases, so only the node count can
  // outgrow the text; depth is the parser's own max_depth.
  int64_t max_nodes = 0;
  bool over_limit = false;  // Parsing stopped at max_nodes.

  bool on_document_begin(ec_t&) { return true; }
  bool on_document_end(ec_t&) { return true; }
  bool on_object_begin(ec_t&) { return Open(Tree::Type::kMap); }
  bool on_object_end(std::size_t, ec_t&) { return Close(); }
  bool on_array_begin(ec_t&) { return Open(Tree::Type::kSeq); }
  bool on_array_end(std::size_t, ec_t&) { return Close(); }
  bool on_key_part(sv s, std::size_t, ec_t&) { return Append(&key_, s); }
  bool on_key(sv s, std::size_t, ec_t&) {
    Append(&key_, s);
    have_key_ = true;
    return true;
  }
  bool on_string_part(sv s, std::size_t, ec_t&) { return Append(&text_, s); }
  bool on_string(sv s, std::size_t, ec_t&) {
    Append(&text_, s);
    return Scalar();
  }
  bool on_number_part(sv s, ec_t&) { return Append(&text_, s); }
  bool on_int64(int64_t, sv s, ec_t&) { return Number(s); }
  bool on_uint64(uint64_t, sv s, ec_t&) { return Number(s); }
  bool on_double(double, sv s, ec_t&) { return Number(s); }
  bool on_bool(bool b, ec_t&) {
    text_ = b ? "true" : "false";
    return Scalar();
  }
  bool on_null(ec_t&) {
    NewValue();
    return true;
  }
  bool on_comment_part(sv, ec_t&) { return true; }
  bool on_comment(sv, ec_t&) { return true; }

 private:
  static bool Append(std::string* to, sv s) {
    to->append(s.data(), s.size());
    return true;
  }
  // The slot of the next value: the root, the next item of a list, or the
  // value of the key just read.
  Tree* NewValue() {
    ++nodes_;
    if (stack_.empty()) return &root;
    Tree* top = stack_.back();
    if (top->type == Tree::Type::kMap) {
      top->keys.push_back(std::move(key_));
      key_.clear();
      have_key_ = false;
    }
    top->items.emplace_back();
    return &top->items.back();
  }
  bool Open(Tree::Type type) {
    if (nodes_ >= max_nodes) return Over();
    Tree* t = NewValue();
    t->type = type;
    stack_.push_back(t);
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }
  bool Over() {
    over_limit = true;
    return false;
  }
  bool Scalar() {
    if (nodes_ >= max_nodes) return Over();
    Tree* t = NewValue();
    t->type = Tree::Type::kScalar;
    t->scalar = std::move(text_);
    text_.clear();
    return true;
  }
  bool Number(sv last) {
    Append(&text_, last);
    return Scalar();
  }

  // Open containers; a pointer stays valid because only the innermost
  // container's item list grows.
  std::vector<Tree*> stack_;
  int64_t nodes_ = 0;
  std::string key_;
  bool have_key_ = false;
  std::string text_;
};

// A body that is one JSON object is read with Boost.JSON (an API client's
// usual body; about 10x faster than yaml-cpp). Anything else, including
// JSON that Boost.JSON rejects, goes to yaml-cpp, which also reports
// syntax errors with line and column. A body over a limit is refused here,
// not read a second time.
Status TryJson(const std::string& text, const std::string& file,
               const ParseLimits& limits, std::vector<Tree>* docs, bool* done) {
  *done = false;
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string::npos || text[i] != '{') return Status::Ok();
  boost::json::parse_options opts;
  opts.max_depth = static_cast<std::size_t>(limits.max_depth);
  boost::json::basic_parser<TreeBuilder> p(opts);
  p.handler().max_nodes = limits.max_nodes;
  boost::system::error_code ec;
  size_t n = p.write_some(false, text.data(), text.size(), ec);
  if (ec == boost::json::error::too_deep) {
    return Status::InvalidArgument(
        file + ": nested deeper than " + std::to_string(limits.max_depth) +
        " levels (the limit on nesting)");
  }
  if (p.handler().over_limit) {
    return Status::InvalidArgument(
        file + ": more than " + std::to_string(limits.max_nodes) +
        " nodes (the limit on values in one input, aliases expanded)");
  }
  if (ec || n != text.size() || !p.done()) return Status::Ok();
  docs->push_back(std::move(p.handler().root));
  *done = true;
  return Status::Ok();
}

// Checked before any parsing: the text is UTF-8 (the store keeps JSON,
// which must be UTF-8; invalid bytes once stored would stop the server from
// loading it). (The stray ',' that Debian's yaml-cpp 0.7 loops on needs no
// check: ParseYamlText's document loop cannot spin.)
Status CheckText(const std::string& text, const std::string& file) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), line = 1;
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c == '\n') ++line;
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                                                 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;  // No overlong forms.
    if (ok && len == 3) {
      unsigned cp = ((c & 15u) << 12) | ((p[i + 1] & 63u) << 6) | (p[i + 2] & 63u);
      ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok && len == 4) {
      unsigned cp = ((c & 7u) << 18) | ((p[i + 1] & 63u) << 12) |
                    ((p[i + 2] & 63u) << 6) | (p[i + 3] & 63u);
      ok = cp >= 0x10000 && cp <= 0x10FFFF;
    }
    if (!ok) {
      return Status::InvalidArgument(file + ": line " + std::to_string(line) +
                                     ": the text is not valid UTF-8");
    }
    i += len;
  }
  return Status::Ok();
}

template <typename T>
void AppendAll(std::vector<T>* from, std::vector<T>* to) {
  for (T& x : *from) to->push_back(std::move(x));
}

}  // namespace
}  // namespace internal

Status ParseManifests(const std::string& text, const std::string& file,
                      Config* config, const ParseLimits& limits) {
  using internal::AppendAll;
  using internal::ParseDocument;
  using internal::Tree;
  using internal::TryJson;
  using internal::CheckText;
  using internal::ParseYamlText;
  {
    ALLOT_RETURN_IF_ERROR(CheckText(text, file));
    std::vector<Tree> docs;
    bool json = false;
    ALLOT_RETURN_IF_ERROR(TryJson(text, file, limits, &docs, &json));
    if (!json) ALLOT_RETURN_IF_ERROR(ParseYamlText(text, file, limits, &docs));
    Config parsed;
    int scheduler_doc = -1;
    for (size_t i = 0; i < docs.size(); ++i) {
      ALLOT_RETURN_IF_ERROR(ParseDocument(docs[i], file, static_cast<int>(i),
                                          limits, &scheduler_doc, &parsed));
    }
    AppendAll(&parsed.flavors, &config->flavors);
    AppendAll(&parsed.cohorts, &config->cohorts);
    AppendAll(&parsed.cluster_queues, &config->cluster_queues);
    AppendAll(&parsed.local_queues, &config->local_queues);
    AppendAll(&parsed.priority_classes, &config->priority_classes);
    AppendAll(&parsed.namespaces, &config->namespaces);
    AppendAll(&parsed.nodes, &config->nodes);
    AppendAll(&parsed.workloads, &config->workloads);
    if (scheduler_doc >= 0) {
      config->scheduler = std::move(parsed.scheduler);
      config->scheduler_declared = true;
    }
    return Status::Ok();
  }
}

Status LoadManifestFile(const std::string& path, Config* config,
                        const ParseLimits& limits) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::NotFound("cannot open manifest file " + path);
    text << in.rdbuf();
    if (in.bad()) return Status::NotFound("cannot read manifest file " + path);
  }
  return ParseManifests(text.str(), path, config, limits);
}

}  // namespace allot::core
