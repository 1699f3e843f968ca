// Manifest reading: YAML documents -> core::Config.
//
// Layout: (1) shared shapes (taints, selectors, resource groups, requests);
// (2) one Parse function per non-workload kind and the kind table; (3)
// ParseDocument and ParseManifests. Val and Doc live in
// manifest_internal.h, the workload kinds in manifest_workload.cc,
// ValidateConfig in manifest_validate.cc, the checks on each parsed object
// in manifest_limits.cc, the UTF-8 check and the JSON reader in
// manifest_text.cc. yaml-cpp is read in manifest_yaml.cc, whose exceptions
// never leave it.
#include "core/manifest.h"

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
#include "core/manifest_internal.h"
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
