// Manifest reading: YAML documents -> core::Config.
//
// Layout: (1) shared shapes (taints, tolerations, requests); (2) the
// Namespace, SchedulerConfig and Node kinds and the kind table; (3)
// ParseDocument and ParseManifests. Val and Doc live in
// manifest_internal.h, Kueue's configuration kinds in manifest_kueue.cc,
// the workload kinds in manifest_workload.cc, ValidateConfig in
// manifest_validate.cc, the checks on each parsed object in
// manifest_limits.cc, the UTF-8 check and the JSON reader in
// manifest_text.cc. yaml-cpp is read in manifest_yaml.cc, whose exceptions
// never leave it.
#include "core/manifest.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/image_policy.h"
#include "core/manifest_internal.h"
#include "core/names.h"
#include "core/parking_annotations.h"
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

// Cluster-scoped kinds ignore metadata.namespace, as kubectl does. With
// `name_required`, metadata.name may be left out when generateName is given
// (the server then picks the name, core/generate_name.h).
Status ParseMetadata(bool namespaced, bool name_required, Doc* d) {
  const Val& m = d->metadata;
  // The name first, so that later errors can show it.
  ALLOT_RETURN_IF_ERROR(m.CheckMap());
  ALLOT_RETURN_IF_ERROR(m["name"].Get(&d->name));
  ALLOT_RETURN_IF_ERROR(m["generateName"].Get(&d->generate_name));
  if (name_required && m["name"].unset() && d->generate_name.empty()) {
    return m["name"].Error("required field is missing (or give "
                           "metadata.generateName for a generated name)");
  }
  if (name_required && !m["name"].unset() && d->name.empty()) {
    return m["name"].Error("must not be empty");
  }
  ALLOT_RETURN_IF_ERROR(m.CheckFields(
      {"name", "generateName", "namespace", "labels", "annotations",
       "creationTimestamp"},
      {"uid", "resourceVersion", "generation", "managedFields", "finalizers",
       "ownerReferences", "selfLink", "deletionTimestamp",
       "deletionGracePeriodSeconds"}));
  if (namespaced) {
    ALLOT_RETURN_IF_ERROR(m["namespace"].Get(&d->ns));
    if (d->ns.empty()) d->ns = "default";
  }
  ALLOT_RETURN_IF_ERROR(m["labels"].Get(&d->labels));
  return m["annotations"].Get(&d->annotations);
}

// Every namespace carries kNamespaceNameLabel with its name, as Kubernetes
// sets it (a generated name gets it when it is picked); another value for
// it is an error.
Status ParseNamespace(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields({"apiVersion", "kind", "metadata"},
                                           {"spec", "status"}));
  ALLOT_RETURN_IF_ERROR(ParsePriorityPolicy(d.annotations, "Tenant " + d.name).status());
  ALLOT_RETURN_IF_ERROR(ParseImagePolicy(d.annotations).status());
  Namespace ns{d.name, d.labels, d.source, d.annotations, d.generate_name};
  auto it = ns.labels.find(kNamespaceNameLabel);
  if (it != ns.labels.end() && it->second != d.name) {
    return d.metadata["labels"].Entry(kNamespaceNameLabel).Error(
        "must be the namespace's own name " + Quote(d.name) +
        " (Kubernetes sets it), not " + Quote(it->second));
  }
  // (A name that is no label value, which only the offline commands let
  // through, gets no label: no selector could name it anyway.)
  if (!d.name.empty() && LabelValueError(d.name).empty()) {
    ns.labels[kNamespaceNameLabel] = d.name;
  }
  out->namespaces.push_back(std::move(ns));
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
  n.generate_name = d.generate_name;
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

constexpr char kKueueV1beta1[] = "kueue.x-k8s.io/v1beta1";
constexpr char kKueueV1beta2[] = "kueue.x-k8s.io/v1beta2";
constexpr char kAllot[] = "allot.dev/v1";
constexpr KindParser kKinds[] = {
    {kKueueV1beta2, "ResourceFlavor", false, ParseResourceFlavor},
    {kKueueV1beta1, "ResourceFlavor", false, ParseResourceFlavor},
    {kKueueV1beta2, "Topology", false, ParseTopology},
    {kKueueV1beta1, "Topology", false, ParseTopology},
    {"kueue.x-k8s.io/v1alpha1", "Topology", false, ParseTopology},
    {kKueueV1beta2, "ClusterQueue", false, ParseClusterQueue},
    {kKueueV1beta1, "ClusterQueue", false, ParseClusterQueue},
    {kKueueV1beta2, "Cohort", false, ParseCohort},
    {kKueueV1beta1, "Cohort", false, ParseCohort},
    {"kueue.x-k8s.io/v1alpha1", "Cohort", false, ParseCohort},
    {kKueueV1beta2, "LocalQueue", true, ParseLocalQueue},
    {kKueueV1beta1, "LocalQueue", true, ParseLocalQueue},
    {kKueueV1beta2, "WorkloadPriorityClass", false, ParsePriorityClass},
    {kKueueV1beta1, "WorkloadPriorityClass", false, ParsePriorityClass},
    {kKueueV1beta2, "Workload", true, ParseKueueWorkload},
    {kKueueV1beta1, "Workload", true, ParseKueueWorkload},
    {"v1", "Namespace", false, ParseNamespace},
    {"batch/v1", "Job", true, ParseJob},
    {kAllot, "SchedulerConfig", false, ParseSchedulerConfig},
    {kAllot, "Node", false, ParseNode},
    {kAllot, "NodePool", false, ParseNodePool},
    {kAllot, "Image", false, ParseImage},
    {kAllot, "Workload", true, ParseAllotWorkload},
    {kAllot, "Notebook", true, ParseNotebook},
};

KueueApi KueueApiOf(std::string_view api_version) {
  for (KueueApi a :
       {KueueApi::kV1alpha1, KueueApi::kV1beta1, KueueApi::kV1beta2}) {
    if (KueueApiVersion(a) == api_version) return a;
  }
  return KueueApi::kNone;
}

// "kueue.x-k8s.io/v1beta2 and v1beta1: ResourceFlavor, ...; v1: Namespace;
// ...": the kinds of kKinds by apiVersion, for the messages.
std::string SupportedKinds() {
  // api -> kinds, apis in the order the table first names them.
  std::vector<std::pair<std::string, std::string>> by_api;
  for (const KindParser& k : kKinds) {
    auto it = std::find_if(by_api.begin(), by_api.end(), [&](const auto& e) {
      return e.first == k.api_version;
    });
    if (it == by_api.end()) {
      it = by_api.emplace(by_api.end(), std::string(k.api_version), "");
    }
    it->second += (it->second.empty() ? "" : ", ") + std::string(k.kind);
  }
  std::string out;
  for (size_t i = 0; i < by_api.size(); ++i) {
    std::string api = by_api[i].first;
    // Kueue's versions with the same kinds share one entry.
    while (i + 1 < by_api.size() && by_api[i + 1].second == by_api[i].second) {
      const std::string& next = by_api[++i].first;
      api += " and " + next.substr(next.find('/') + 1);
    }
    out += (out.empty() ? "" : "; ") + api + ": " + by_api[i].second;
  }
  return out;
}

bool KnownKind(const std::string& kind) {
  for (const KindParser& k : kKinds) {
    if (k.kind == kind) return true;
  }
  return false;
}

// A document of a kind that no apiVersion of kKinds has: Allot does not run
// it (a Deployment, a JobSet, Kueue's AdmissionCheck or Topology, ...).
// Empty when the document is anything else (for ParseDocument to judge).
std::optional<SkippedDocument> UnsupportedKind(const Tree& node,
                                               const std::string& file,
                                               int index) {
  Val root(&node, "");
  std::string api_version, kind;
  if (!root.IsMap() || !root["apiVersion"].GetName(&api_version).ok() ||
      !root["kind"].GetName(&kind).ok() || KnownKind(kind)) {
    return std::nullopt;
  }
  SkippedDocument d{file, index, api_version, kind, ""};
  Val meta = root["metadata"];
  std::string name, ns;
  if (meta.IsMap() && meta["name"].Get(&name).ok() &&
      meta["namespace"].Get(&ns).ok()) {
    if (name.empty()) (void)meta["generateName"].Get(&name);
    d.name = ns.empty() || name.empty() ? name : ns + "/" + name;
  }
  return d;
}

// The one error for every document of `unsupported` (all of one text).
Status UnsupportedError(const std::vector<SkippedDocument>& unsupported) {
  std::string docs;
  for (const SkippedDocument& d : unsupported) {
    docs += (docs.empty() ? "" : ", ") + std::to_string(d.doc_index) + " (" +
            d.kind + (d.name.empty() ? "" : " " + d.name) + ", " +
            d.api_version + ")";
  }
  const bool one = unsupported.size() == 1;
  bool secret = false;
  for (const SkippedDocument& d : unsupported) secret |= d.kind == "Secret";
  return Status::InvalidArgument(
      unsupported[0].file + ": document" + (one ? " " : "s ") + docs +
          ": Allot does not run " + (one ? "this kind" : "these kinds") +
          "; it runs " + SupportedKinds() +
          " (allot apply --skip-unsupported applies the other documents" +
          (secret ? "; v1 Secrets go to PUT /api/v1/secrets/TENANT/NAME, which the allot "
                    "apply command does for you"
                  : "") +
          ")",
      "kind");
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
  if (parser == nullptr) {  // A kind Allot reads, in another apiVersion.
    std::string versions;
    for (const KindParser& k : kKinds) {
      if (k.kind != kind) continue;
      versions += (versions.empty() ? "" : ", ") + std::string(k.api_version);
    }
    return At(d.source, "",
              Status::InvalidArgument(
                  "unknown apiVersion " + api_version + " for kind " + kind +
                      " (Allot reads it in " + versions + ")",
                  "apiVersion"));
  }
  d.source.kind = kind;
  d.api = KueueApiOf(api_version);
  d.metadata = d.root["metadata"];
  bool is_config = kind == "SchedulerConfig";
  s = ParseMetadata(parser->namespaced, /*name_required=*/!is_config, &d);
  if (s.ok() && limits.object_limits) s = CheckMetadataLimits(d);
  if (!s.ok()) {
    return At(d.source, d.name.empty() ? d.generate_name : d.name, s);
  }
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
    if (s.ok()) s = CheckParkingAnnotations(out->workloads.back());
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
                      Config* config, const ParseLimits& limits,
                      std::vector<SkippedDocument>* skipped) {
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
    // Kinds Allot does not run: one error for all of them, before anything
    // else is read (or, when the caller asks, skipped and listed).
    std::vector<bool> skip(docs.size(), false);
    std::vector<SkippedDocument> unsupported;
    for (size_t i = 0; i < docs.size(); ++i) {
      auto u = internal::UnsupportedKind(docs[i], file, static_cast<int>(i));
      if (!u) continue;
      skip[i] = true;
      unsupported.push_back(std::move(*u));
    }
    if (!unsupported.empty() && skipped == nullptr) {
      return internal::UnsupportedError(unsupported);
    }
    Config parsed;
    int scheduler_doc = -1;
    for (size_t i = 0; i < docs.size(); ++i) {
      if (skip[i]) continue;
      ALLOT_RETURN_IF_ERROR(ParseDocument(docs[i], file, static_cast<int>(i),
                                          limits, &scheduler_doc, &parsed));
    }
    if (skipped != nullptr) {
      for (SkippedDocument& u : unsupported) skipped->push_back(std::move(u));
    }
    AppendAll(&parsed.flavors, &config->flavors);
    AppendAll(&parsed.cohorts, &config->cohorts);
    AppendAll(&parsed.cluster_queues, &config->cluster_queues);
    AppendAll(&parsed.local_queues, &config->local_queues);
    AppendAll(&parsed.priority_classes, &config->priority_classes);
    AppendAll(&parsed.topologies, &config->topologies);
    AppendAll(&parsed.images, &config->images);
    AppendAll(&parsed.namespaces, &config->namespaces);
    AppendAll(&parsed.nodes, &config->nodes);
    AppendAll(&parsed.node_pools, &config->node_pools);
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
