// Manifest writing: core objects -> Boost.JSON documents. The field
// spellings and defaults mirror manifest.cc and manifest_workload.cc; a
// change to either side needs the other (manifest_encode_test.cc checks the
// round trip).
#include "core/manifest_encode.h"

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/duration.h"

namespace allot::core {
namespace {

namespace json = boost::json;

constexpr std::string_view kAllot = "allot.dev/v1";

// ---- Scalars and small shapes ----------------------------------------------

json::string Q(Quantity q) { return json::string(q.ToString()); }

// Millionths as a decimal without trailing zeros: 2500000 -> "2.5".
std::string Micros(int64_t micros) {
  std::string s = micros < 0 ? "-" : "";
  uint64_t m = micros < 0 ? 0 - static_cast<uint64_t>(micros)
                          : static_cast<uint64_t>(micros);
  s += std::to_string(m / 1000000);
  uint64_t frac = m % 1000000;
  if (frac == 0) return s;
  std::string digits = std::to_string(frac);
  digits.insert(0, 6 - digits.size(), '0');
  digits.erase(digits.find_last_not_of('0') + 1);
  return s + "." + digits;
}

json::object Map(const std::map<std::string, std::string>& m) {
  json::object o;
  o.reserve(m.size());
  for (const auto& [k, v] : m) o.emplace(k, v);
  return o;
}

json::array Strings(const std::vector<std::string>& v) {
  json::array a;
  a.reserve(v.size());
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

void PutMap(json::object* o, std::string_view key,
            const std::map<std::string, std::string>& m) {
  if (!m.empty()) o->emplace(key, Map(m));
}
void PutString(json::object* o, std::string_view key, const std::string& s) {
  if (!s.empty()) o->emplace(key, s);
}
void PutStrings(json::object* o, std::string_view key,
                const std::vector<std::string>& v) {
  if (!v.empty()) o->emplace(key, Strings(v));
}

json::object Header(std::string_view api_version, std::string_view kind) {
  json::object o;
  o.reserve(5);
  o.emplace("apiVersion", api_version);
  o.emplace("kind", kind);
  return o;
}

// metadata {name, generateName, namespace, labels} of object `x`; `ns`
// empty for cluster-scoped kinds. A name still to be generated (empty) is
// left out.
template <typename T>
json::object Metadata(const T& x, const std::string& ns, const Labels& labels) {
  json::object m;
  PutString(&m, "name", x.name);
  PutString(&m, "generateName", x.generate_name);
  PutString(&m, "namespace", ns);
  PutMap(&m, "labels", labels);
  return m;
}

const char* EffectName(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "";
}

json::array Taints(const std::vector<Taint>& taints) {
  json::array a;
  a.reserve(taints.size());
  for (const Taint& t : taints) {
    json::object o;
    o.emplace("key", t.key);
    PutString(&o, "value", t.value);
    o.emplace("effect", EffectName(t.effect));
    a.emplace_back(std::move(o));
  }
  return a;
}

json::array Tolerations(const std::vector<Toleration>& tolerations) {
  json::array a;
  a.reserve(tolerations.size());
  for (const Toleration& t : tolerations) {
    json::object o;
    PutString(&o, "key", t.key);
    if (t.op == TolerationOperator::kExists) o.emplace("operator", "Exists");
    PutString(&o, "value", t.value);
    if (t.effect) o.emplace("effect", EffectName(*t.effect));
    a.emplace_back(std::move(o));
  }
  return a;
}

void PutTaints(json::object* o, std::string_view key,
               const std::vector<Taint>& taints) {
  if (!taints.empty()) o->emplace(key, Taints(taints));
}
void PutTolerations(json::object* o, const std::vector<Toleration>& t) {
  if (!t.empty()) o->emplace("tolerations", Tolerations(t));
}

json::object Selector(const LabelSelector& s) {
  using Op = LabelSelectorRequirement::Op;
  json::object o;
  PutMap(&o, "matchLabels", s.match_labels);
  if (s.match_expressions.empty()) return o;
  json::array exprs;
  for (const LabelSelectorRequirement& r : s.match_expressions) {
    json::object e;
    e.emplace("key", r.key);
    switch (r.op) {
      case Op::kIn:
        e.emplace("operator", "In");
        break;
      case Op::kNotIn:
        e.emplace("operator", "NotIn");
        break;
      case Op::kExists:
        e.emplace("operator", "Exists");
        break;
      case Op::kDoesNotExist:
        e.emplace("operator", "DoesNotExist");
        break;
    }
    PutStrings(&e, "values", r.values);
    exprs.emplace_back(std::move(e));
  }
  o.emplace("matchExpressions", std::move(exprs));
  return o;
}

json::array ResourceGroups(const std::vector<ResourceGroup>& groups) {
  json::array a;
  a.reserve(groups.size());
  for (const ResourceGroup& g : groups) {
    json::array flavors;
    flavors.reserve(g.flavors.size());
    for (const FlavorQuotas& f : g.flavors) {
      json::array resources;
      resources.reserve(f.resources.size());
      for (const ResourceQuota& q : f.resources) {
        json::object r;
        r.emplace("name", q.name);
        r.emplace("nominalQuota", Q(q.nominal_quota));
        if (q.borrowing_limit)
          r.emplace("borrowingLimit", Q(*q.borrowing_limit));
        if (q.lending_limit) r.emplace("lendingLimit", Q(*q.lending_limit));
        resources.emplace_back(std::move(r));
      }
      flavors.emplace_back(
          json::object{{"name", f.name}, {"resources", std::move(resources)}});
    }
    a.emplace_back(
        json::object{{"coveredResources", Strings(g.covered_resources)},
                     {"flavors", std::move(flavors)}});
  }
  return a;
}

void PutResourceGroups(json::object* spec,
                       const std::vector<ResourceGroup>& groups) {
  if (!groups.empty()) spec->emplace("resourceGroups", ResourceGroups(groups));
}

void PutFairWeight(json::object* spec, int64_t milli) {
  if (milli == 1000) return;
  spec->emplace("fairSharing",
                json::object{{"weight", Q(Quantity::FromMilli(milli))}});
}

json::object Resources(const ResourceList& list) {
  json::object o;
  o.reserve(list.size());
  for (const auto& [r, q] : list) o.emplace(r, Q(q));
  return o;
}

// ---- Workload pieces -------------------------------------------------------

// env: the literal values, then the secrets' keys (a PodSet keeps them
// apart, and reads them back into the same two lists).
json::array Env(const PodSet& ps) {
  json::array env;
  env.reserve(ps.env.size() + ps.env_secrets.size());
  for (const auto& [name, value] : ps.env) {
    json::object e;
    e.emplace("name", name);
    PutString(&e, "value", value);
    env.emplace_back(std::move(e));
  }
  for (const SecretEnvVar& s : ps.env_secrets) {
    json::object ref{{"name", s.ref.secret}, {"key", s.ref.key}};
    if (s.ref.optional) ref.emplace("optional", true);
    env.emplace_back(json::object{
        {"name", s.name},
        {"valueFrom", json::object{{"secretKeyRef", std::move(ref)}}}});
  }
  return env;
}

json::array EnvFrom(const std::vector<SecretEnvFrom>& env_from) {
  json::array a;
  for (const SecretEnvFrom& e : env_from) {
    json::object ref{{"name", e.secret}};
    if (e.optional) ref.emplace("optional", true);
    json::object o{{"secretRef", std::move(ref)}};
    PutString(&o, "prefix", e.prefix);
    a.emplace_back(std::move(o));
  }
  return a;
}

json::object VolumeSource(const Volume& v) {
  switch (v.type) {
    case Volume::Type::kEmptyDir: {
      json::object o;
      PutString(&o, "medium", v.medium);
      if (v.size_limit_bytes > 0) {
        o.emplace("sizeLimit", Q(Quantity::FromUnits(v.size_limit_bytes)));
      }
      return json::object{{"emptyDir", std::move(o)}};
    }
    case Volume::Type::kHostPath:
      return json::object{{"hostPath", json::object{{"path", v.path}}}};
    case Volume::Type::kSecret:
      return json::object{{"secret", json::object{{"secretName", v.secret}}}};
    case Volume::Type::kClaim: {
      json::object o{{"claimName", v.claim}};
      if (v.read_only) o.emplace("readOnly", true);
      return json::object{{"persistentVolumeClaim", std::move(o)}};
    }
  }
  return {};
}

json::array Volumes(const std::vector<Volume>& volumes) {
  json::array a;
  for (const Volume& v : volumes) {
    json::object o{{"name", v.name}};
    for (auto& [k, src] : VolumeSource(v)) o.emplace(k, std::move(src));
    a.emplace_back(std::move(o));
  }
  return a;
}

json::array VolumeMounts(const std::vector<VolumeMount>& mounts) {
  json::array a;
  for (const VolumeMount& m : mounts) {
    json::object o{{"name", m.name}, {"mountPath", m.mount_path}};
    PutString(&o, "subPath", m.sub_path);
    if (m.read_only) o.emplace("readOnly", true);
    a.emplace_back(std::move(o));
  }
  return a;
}

// Pull secrets, volumes, mounts and the security context, each left out
// when it says nothing (readOnlyRootFilesystem only when false).
void PutPodRun(json::object* t, const PodSet& ps) {
  if (!ps.env_from.empty()) t->emplace("envFrom", EnvFrom(ps.env_from));
  if (!ps.image_pull_secrets.empty()) {
    json::array a;
    for (const std::string& s : ps.image_pull_secrets) {
      a.emplace_back(json::object{{"name", s}});
    }
    t->emplace("imagePullSecrets", std::move(a));
  }
  if (!ps.volumes.empty()) t->emplace("volumes", Volumes(ps.volumes));
  if (ps.host_network) t->emplace("hostNetwork", true);
  if (!ps.volume_mounts.empty()) {
    t->emplace("volumeMounts", VolumeMounts(ps.volume_mounts));
  }
  json::object sc;
  if (ps.run_as_user) sc.emplace("runAsUser", *ps.run_as_user);
  if (ps.run_as_group) sc.emplace("runAsGroup", *ps.run_as_group);
  if (ps.run_as_non_root) sc.emplace("runAsNonRoot", true);
  if (!ps.read_only_root) sc.emplace("readOnlyRootFilesystem", false);
  if (!sc.empty()) t->emplace("securityContext", std::move(sc));
}

// The compact template of an allot.dev/v1 pod set.
json::object Template(const PodSet& ps) {
  json::object t;
  if (!ps.requests.empty()) {
    t.emplace("resources", json::object{{"requests", Resources(ps.requests)}});
  }
  PutMap(&t, "nodeSelector", ps.node_selector);
  PutTolerations(&t, ps.tolerations);
  PutString(&t, "image", ps.image);
  PutString(&t, "imagePullPolicy", ps.image_pull_policy);
  PutStrings(&t, "command", ps.command);
  PutStrings(&t, "args", ps.args);
  if (!ps.env.empty() || !ps.env_secrets.empty()) t.emplace("env", Env(ps));
  PutString(&t, "workingDir", ps.working_dir);
  if (ps.port > 0) t.emplace("port", ps.port);
  PutPodRun(&t, ps);
  return t;
}

json::array PodSets(const std::vector<PodSet>& pod_sets) {
  json::array a;
  a.reserve(pod_sets.size());
  for (const PodSet& ps : pod_sets) {
    json::object o;
    o.emplace("name", ps.name);
    o.emplace("count", ps.count);
    if (ps.min_count) o.emplace("minCount", *ps.min_count);
    o.emplace("template", Template(ps));
    if (!ps.topology.empty()) {
      json::object t;
      PutString(&t, "required", ps.topology.required);
      PutString(&t, "preferred", ps.topology.preferred);
      if (ps.topology.unconstrained) t.emplace("unconstrained", true);
      o.emplace("topologyRequest", std::move(t));
    }
    a.emplace_back(std::move(o));
  }
  return a;
}

json::object EncodeAdmission(const Admission& adm) {
  json::array assignments;
  assignments.reserve(adm.pod_set_assignments.size());
  for (const PodSetAssignment& psa : adm.pod_set_assignments) {
    json::object o;
    o.emplace("name", psa.name);
    o.emplace("count", psa.count);
    PutMap(&o, "flavors", psa.flavors);
    if (!psa.placements.empty()) {
      json::array placements;
      placements.reserve(psa.placements.size());
      for (const PodPlacement& p : psa.placements) {
        json::object po;
        po.emplace("node", p.node);
        PutStrings(&po, "gpus", p.gpus);
        placements.emplace_back(std::move(po));
      }
      o.emplace("placements", std::move(placements));
    }
    assignments.emplace_back(std::move(o));
  }
  return json::object{{"clusterQueue", adm.cluster_queue},
                      {"podSetAssignments", std::move(assignments)}};
}

// Howard Hinnant's civil_from_days: days since 1970-01-01 -> y, m, d.
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

// Appends v as exactly `width` digits (v >= 0).
void AppendDigits(std::string* s, int64_t v, int width) {
  char buf[24];
  for (int i = width - 1; i >= 0; --i) {
    buf[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  s->append(buf, static_cast<size_t>(width));
}

}  // namespace

const char* KueueApiVersionOf(KueueVersion v) {
  return v == KueueVersion::kV1beta1 ? "kueue.x-k8s.io/v1beta1"
                                     : "kueue.x-k8s.io/v1beta2";
}

Result<KueueVersion> ParseKueueVersion(const std::string& text) {
  for (KueueVersion v : {KueueVersion::kV1beta1, KueueVersion::kV1beta2}) {
    const std::string full = KueueApiVersionOf(v);
    if (text == full || text == full.substr(full.find('/') + 1)) return v;
  }
  return Status::InvalidArgument(
      "unknown API version \"" + text +
          "\" (expected kueue.x-k8s.io/v1beta2 or kueue.x-k8s.io/v1beta1)",
      "apiVersion");
}

std::string FormatRfc3339Ms(int64_t unix_ms) {
  constexpr int64_t kDayMs = 86400000;
  int64_t days = unix_ms / kDayMs;
  int64_t rem = unix_ms % kDayMs;
  if (rem < 0) {
    rem += kDayMs;
    --days;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  std::string s;
  s.reserve(24);
  if (y < 0 || y > 9999) {
    s = std::to_string(y);  // Out of RFC 3339's range; the parser rejects it.
  } else {
    AppendDigits(&s, y, 4);
  }
  s += '-';
  AppendDigits(&s, m, 2);
  s += '-';
  AppendDigits(&s, d, 2);
  s += 'T';
  AppendDigits(&s, rem / 3600000, 2);
  s += ':';
  AppendDigits(&s, rem / 60000 % 60, 2);
  s += ':';
  AppendDigits(&s, rem / 1000 % 60, 2);
  if (rem % 1000 != 0) {
    s += '.';
    AppendDigits(&s, rem % 1000, 3);
  }
  s += 'Z';
  return s;
}

json::object EncodeFlavor(const ResourceFlavor& f, KueueVersion v) {
  json::object o = Header(KueueApiVersionOf(v), "ResourceFlavor");
  o.emplace("metadata", Metadata(f, "", {}));
  json::object spec;
  PutMap(&spec, "nodeLabels", f.node_labels);
  PutTaints(&spec, "nodeTaints", f.node_taints);
  PutTolerations(&spec, f.tolerations);
  PutString(&spec, "topologyName", f.topology_name);
  if (!f.price_micros_per_hour.empty()) {
    json::object price;
    for (const auto& [r, micros] : f.price_micros_per_hour) {
      price.emplace(r, Micros(micros));
    }
    spec.emplace("price", std::move(price));
  }
  o.emplace("spec", std::move(spec));
  return o;
}

json::object EncodeTopology(const Topology& t, KueueVersion v) {
  json::object o = Header(KueueApiVersionOf(v), "Topology");
  o.emplace("metadata", Metadata(t, "", {}));
  json::array levels;
  for (const std::string& l : t.levels) levels.push_back(json::object{{"nodeLabel", l}});
  o.emplace("spec", json::object{{"levels", std::move(levels)}});
  return o;
}

json::object EncodeImage(const Image& img) {
  json::object o = Header(kAllot, "Image");
  o.emplace("metadata", Metadata(img, "", {}));
  json::object spec{{"image", img.image}};
  PutString(&spec, "description", img.description);
  o.emplace("spec", std::move(spec));
  return o;
}

json::object EncodeCohort(const Cohort& c, KueueVersion v) {
  json::object o = Header(KueueApiVersionOf(v), "Cohort");
  o.emplace("metadata", Metadata(c, "", {}));
  json::object spec;
  PutString(&spec, "parentName", c.parent);
  PutResourceGroups(&spec, c.resource_groups);
  PutFairWeight(&spec, c.fair_weight_milli);
  o.emplace("spec", std::move(spec));
  return o;
}

json::object EncodeClusterQueue(const ClusterQueue& cq, KueueVersion v) {
  json::object o = Header(KueueApiVersionOf(v), "ClusterQueue");
  json::object meta = Metadata(cq, "", {});
  PutMap(&meta, "annotations", cq.annotations);
  o.emplace("metadata", std::move(meta));
  json::object spec;
  PutString(&spec, v == KueueVersion::kV1beta1 ? "cohort" : "cohortName",
            cq.cohort);
  if (cq.namespace_selector) {
    spec.emplace("namespaceSelector", Selector(*cq.namespace_selector));
  }
  PutResourceGroups(&spec, cq.resource_groups);
  if (cq.queueing_strategy == QueueingStrategy::kStrictFIFO) {
    spec.emplace("queueingStrategy", "StrictFIFO");
  }
  const PreemptionPolicy& p = cq.preemption;
  json::object preemption;
  switch (p.within_cluster_queue) {
    case WithinClusterQueue::kNever:
      break;
    case WithinClusterQueue::kLowerPriority:
      preemption.emplace("withinClusterQueue", "LowerPriority");
      break;
    case WithinClusterQueue::kLowerOrNewerEqualPriority:
      preemption.emplace("withinClusterQueue", "LowerOrNewerEqualPriority");
      break;
  }
  switch (p.reclaim_within_cohort) {
    case ReclaimWithinCohort::kNever:
      break;
    case ReclaimWithinCohort::kLowerPriority:
      preemption.emplace("reclaimWithinCohort", "LowerPriority");
      break;
    case ReclaimWithinCohort::kAny:
      preemption.emplace("reclaimWithinCohort", "Any");
      break;
  }
  json::object borrow;
  if (p.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority) {
    borrow.emplace("policy", "LowerPriority");
  }
  if (p.max_priority_threshold) {
    borrow.emplace("maxPriorityThreshold", *p.max_priority_threshold);
  }
  if (!borrow.empty())
    preemption.emplace("borrowWithinCohort", std::move(borrow));
  if (!preemption.empty()) spec.emplace("preemption", std::move(preemption));
  using P = FungibilityPolicy;
  json::object fungibility;
  if (cq.flavor_fungibility.when_can_borrow != P::kMayStopSearch) {
    fungibility.emplace("whenCanBorrow", "TryNextFlavor");
  }
  if (cq.flavor_fungibility.when_can_preempt != P::kTryNextFlavor) {
    fungibility.emplace("whenCanPreempt", "MayStopSearch");
  }
  if (cq.flavor_fungibility.preference) {
    fungibility.emplace(
        "preference", *cq.flavor_fungibility.preference ==
                              FungibilityPreference::kBorrowingOverPreemption
                          ? "BorrowingOverPreemption"
                          : "PreemptionOverBorrowing");
  }
  if (!fungibility.empty()) {
    spec.emplace("flavorFungibility", std::move(fungibility));
  }
  PutFairWeight(&spec, cq.fair_weight_milli);
  switch (cq.stop_policy) {
    case StopPolicy::kNone:
      break;
    case StopPolicy::kHold:
      spec.emplace("stopPolicy", "Hold");
      break;
    case StopPolicy::kHoldAndDrain:
      spec.emplace("stopPolicy", "HoldAndDrain");
      break;
  }
  o.emplace("spec", std::move(spec));
  return o;
}

json::object EncodeLocalQueue(const LocalQueue& q, KueueVersion v) {
  json::object o = Header(KueueApiVersionOf(v), "LocalQueue");
  json::object meta = Metadata(q, q.ns, {});
  PutMap(&meta, "annotations", q.annotations);
  o.emplace("metadata", std::move(meta));
  o.emplace("spec", json::object{{"clusterQueue", q.cluster_queue}});
  return o;
}

json::object EncodePriorityClass(const WorkloadPriorityClass& pc,
                                 KueueVersion v) {
  json::object o = Header(KueueApiVersionOf(v), "WorkloadPriorityClass");
  json::object meta = Metadata(pc, "", {});
  if (pc.preemptible) meta["annotations"] = json::object{{kPreemptibleKey, "true"}};
  o.emplace("metadata", std::move(meta));
  o.emplace("value", pc.value);
  return o;
}

json::object EncodeNamespace(const Namespace& ns) {
  json::object o = Header("v1", "Namespace");
  json::object meta = Metadata(ns, "", ns.labels);
  PutMap(&meta, "annotations", ns.annotations);
  o.emplace("metadata", std::move(meta));
  return o;
}

json::object EncodeNode(const Node& n) {
  json::object o = Header(kAllot, "Node");
  o.emplace("metadata", Metadata(n, "", n.labels));
  json::object spec;
  if (n.unschedulable) spec.emplace("unschedulable", true);
  PutTaints(&spec, "taints", n.taints);
  o.emplace("spec", std::move(spec));
  json::array gpus;
  gpus.reserve(n.gpus.size());
  for (const Gpu& g : n.gpus) {
    json::object go;
    go.emplace("uuid", g.uuid);
    PutString(&go, "product", g.product);
    if (!g.memory.IsZero()) go.emplace("memory", Q(g.memory));
    go.emplace("health", g.healthy ? "Healthy" : "Unhealthy");
    if (!g.mig.empty()) {
      json::array mig;
      mig.reserve(g.mig.size());
      for (const MigSlice& s : g.mig) {
        mig.emplace_back(
            json::object{{"uuid", s.uuid}, {"profile", s.profile}});
      }
      go.emplace("mig", std::move(mig));
    }
    gpus.emplace_back(std::move(go));
  }
  json::object status;
  status.emplace("capacity",
                 json::object{{"cpu", Q(n.cpu)}, {"memory", Q(n.memory)}});
  if (!gpus.empty()) status.emplace("gpus", std::move(gpus));
  o.emplace("status", std::move(status));
  return o;
}

json::object EncodeNodePool(const NodePool& p) {
  json::object o = Header(kAllot, "NodePool");
  json::object meta;
  meta.emplace("name", p.name);
  o.emplace("metadata", std::move(meta));
  json::object spec;
  spec.emplace("minNodes", p.min_nodes);
  spec.emplace("maxNodes", p.max_nodes);
  spec.emplace("gpus", int64_t(p.node.gpus.size()));
  if (!p.node.gpus.empty()) {
    PutString(&spec, "product", p.node.gpus[0].product);
    if (!p.node.gpus[0].memory.IsZero()) spec.emplace("gpuMemory", Q(p.node.gpus[0].memory));
  }
  if (!p.node.cpu.IsZero()) spec.emplace("cpu", Q(p.node.cpu));
  if (!p.node.memory.IsZero()) spec.emplace("memory", Q(p.node.memory));
  PutMap(&spec, "labels", p.node.labels);
  PutTaints(&spec, "taints", p.node.taints);
  json::object provider;
  switch (p.provider.type) {
    case PoolProvider::Type::kExec:
      provider.emplace("type", "exec");
      PutStrings(&provider, "command", p.provider.command);
      break;
    case PoolProvider::Type::kLocal:
      provider.emplace("type", "local");
      if (p.provider.boot_delay_ms > 0) {
        provider.emplace("bootDelay", FormatDurationSeconds(p.provider.boot_delay_ms / 1000));
      }
      break;
    case PoolProvider::Type::kSimulated:
      provider.emplace("type", "simulated");
      provider.emplace("bootDelay", FormatDurationSeconds(p.provider.boot_delay_ms / 1000));
      provider.emplace("failureRate",
                       Quantity::FromMilli(int64_t(std::lround(p.provider.failure_rate * 1000)))
                           .ToString());
      break;
  }
  spec.emplace("provider", std::move(provider));
  spec.emplace("location", p.location);
  PutString(&spec, "zone", p.zone);
  spec.emplace("pricePerNodeHour", Micros(p.price_micros_per_node_hour));
  spec.emplace("bootTimeout", FormatDurationSeconds(p.boot_timeout_ms / 1000));
  spec.emplace("scaleDownDelay", FormatDurationSeconds(p.scale_down_delay_ms / 1000));
  json::object budget{{"maxNodes", p.max_disrupted}};
  if (!p.windows.empty()) {
    json::array windows;
    for (const auto& [from, to] : p.windows) {
      char buf[48];  // Room for any int, to keep -Wformat-truncation quiet.
      std::snprintf(buf, sizeof buf, "%02d:%02d-%02d:%02d", from / 60, from % 60, to / 60,
                    to % 60);
      windows.emplace_back(buf);
    }
    budget.emplace("windows", std::move(windows));
  }
  spec.emplace("disruptionBudget", std::move(budget));
  json::object headroom{{"gpus", p.headroom_gpus}};
  if (p.headroom_window_ms > 0) {
    headroom.emplace("arrivals", FormatDurationSeconds(p.headroom_window_ms / 1000));
  } else {
    headroom.emplace("arrivals", p.headroom_arrivals);
  }
  spec.emplace("headroom", std::move(headroom));
  spec.emplace("failureThreshold", p.failure_threshold);
  o.emplace("spec", std::move(spec));
  return o;
}

json::object EncodeWorkload(const Workload& w) {
  json::object o = Header(kAllot, "Workload");
  json::object meta = Metadata(w, w.ns, w.labels);
  PutMap(&meta, "annotations", w.annotations);
  if (w.creation_unix_ms != 0) {
    meta.emplace("creationTimestamp", FormatRfc3339Ms(w.creation_unix_ms));
  }
  o.emplace("metadata", std::move(meta));
  json::object spec;
  spec.emplace("queueName", w.queue_name);
  if (w.type != "batch") spec.emplace("type", w.type);
  if (!w.priority_class_name.empty()) {
    spec.emplace("priorityClassName", w.priority_class_name);
  } else if (w.priority != 0) {
    spec.emplace("priority", w.priority);
  }
  spec.emplace("podSets", PodSets(w.pod_sets));
  if (w.backoff_limit != 0) spec.emplace("backoffLimit", w.backoff_limit);
  if (w.max_execution_seconds != 0) {
    spec.emplace("maximumExecutionTimeSeconds", w.max_execution_seconds);
  }
  if (!w.active) spec.emplace("active", false);
  o.emplace("spec", std::move(spec));
  if (w.admission) {
    o.emplace("status",
              json::object{{"admission", EncodeAdmission(*w.admission)}});
  }
  return o;
}

json::object EncodeSchedulerConfig(const SchedulerConfig& c) {
  json::object o = Header(kAllot, "SchedulerConfig");
  json::array strategies;
  for (FairSharingStrategy s : c.preemption_strategies) {
    strategies.emplace_back(s == FairSharingStrategy::kLessThanInitialShare
                                ? "LessThanInitialShare"
                                : "LessThanOrEqualToFinalShare");
  }
  json::object fs{{"enable", c.fair_sharing},
                  {"preemptionStrategies", std::move(strategies)}};
  o.emplace("spec", json::object{{"fairSharing", std::move(fs)}});
  return o;
}

}  // namespace allot::core
