// Manifest reading, the workload kinds: allot.dev/v1 Workload, Kueue's
// Workload and batch/v1 Job, with their timestamps, pod sets, pod templates
// and admissions.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/manifest_internal.h"
#include "core/parking_annotations.h"

namespace allot::core::internal {
namespace {

// ---- Pod templates ---------------------------------------------------------

// The annotations of Kueue's topology-aware scheduling on a pod template
// (apis/kueue/v1beta2/topology_types.go). Those Allot cannot honour (pod
// set slices and groups) are errors naming them.
constexpr char kRequiredTopology[] = "kueue.x-k8s.io/podset-required-topology";
constexpr char kPreferredTopology[] = "kueue.x-k8s.io/podset-preferred-topology";
constexpr char kUnconstrainedTopology[] =
    "kueue.x-k8s.io/podset-unconstrained-topology";

// At most one of required, preferred and unconstrained (Kueue's webhooks
// refuse more).
Status CheckOneTopology(const Val& v, const TopologyRequest& t,
                        const std::string& what) {
  const int set = int(!t.required.empty()) + int(!t.preferred.empty()) +
                  int(t.unconstrained);
  if (set > 1) {
    return v.Error("sets more than one of " + what +
                   "; a pod set asks for one topology");
  }
  return Status::Ok();
}

Status ParseTopologyAnnotations(const Val& annotations, TopologyRequest* t) {
  std::vector<std::pair<std::string, Val>> entries;
  ALLOT_RETURN_IF_ERROR(annotations.Entries(&entries));
  for (const auto& [key, v] : entries) {
    if (key == kRequiredTopology) {
      ALLOT_RETURN_IF_ERROR(v.GetName(&t->required));
    } else if (key == kPreferredTopology) {
      ALLOT_RETURN_IF_ERROR(v.GetName(&t->preferred));
    } else if (key == kUnconstrainedTopology) {
      ALLOT_RETURN_IF_ERROR(v.Get(&t->unconstrained));
    } else if (key.rfind("kueue.x-k8s.io/podset-slice-", 0) == 0 ||
               key == "kueue.x-k8s.io/podset-group-name") {
      return v.Error("Allot places each pod set in one topology request and "
                     "does not honour pod set slices or groups; remove " +
                     key);
    }
  }
  return CheckOneTopology(annotations, *t,
                          std::string(kRequiredTopology) + ", " +
                              kPreferredTopology + " and " +
                              kUnconstrainedTopology);
}

// A pod set's topologyRequest (Kueue's PodSetTopologyRequest, the same in
// v1beta1 and v1beta2, and in allot.dev/v1 Workloads).
Status ParseTopologyRequest(const Val& v, TopologyRequest* t) {
  if (v.unset()) return Status::Ok();
  ALLOT_RETURN_IF_ERROR(v.CheckFields(
      {"required", "preferred", "unconstrained", "podIndexLabel",
       "subGroupIndexLabel", "subGroupCount", "podSetGroupName",
       "podSetSliceRequiredTopology", "podSetSliceSize"}));
  for (const char* f : {"subGroupIndexLabel", "subGroupCount",
                        "podSetGroupName", "podSetSliceRequiredTopology",
                        "podSetSliceSize"}) {
    if (!v[f].unset()) {
      return v[f].Error(std::string("Allot does not honour ") + f +
                        " (sub-groups, pod set groups and slices); remove it");
    }
  }
  // Pods are placed in index order anyway: the label is read and checked.
  std::string index_label;
  ALLOT_RETURN_IF_ERROR(v["podIndexLabel"].Get(&index_label));
  if (!v["required"].unset()) ALLOT_RETURN_IF_ERROR(v["required"].GetName(&t->required));
  if (!v["preferred"].unset()) ALLOT_RETURN_IF_ERROR(v["preferred"].GetName(&t->preferred));
  ALLOT_RETURN_IF_ERROR(v["unconstrained"].Get(&t->unconstrained));
  return CheckOneTopology(v, *t, "required, preferred and unconstrained");
}

// A Kubernetes PodTemplateSpec: the topology annotations of its metadata
// (its labels and other annotations have no effect) and its spec
// (manifest_pod.cc).
Status ParsePodTemplate(const Val& tmpl, PodSet* ps) {
  ALLOT_RETURN_IF_ERROR(tmpl.CheckFields({"metadata", "spec"}));
  ALLOT_RETURN_IF_ERROR(
      ParseTopologyAnnotations(tmpl["metadata"]["annotations"], &ps->topology));
  return ParsePodSpec(tmpl["spec"], ps);
}

// allot.dev/v1's compact template: requests, placement and what runs, in
// the Kubernetes shapes of a PodSpec and its first container together.
Status ParseCompactTemplate(const Val& t, PodSet* ps) {
  ALLOT_RETURN_IF_ERROR(t.CheckFields(
      {"resources", "nodeSelector", "tolerations", "image", "imagePullPolicy",
       "command", "args", "env", "envFrom", "workingDir", "imagePullSecrets",
       "volumes", "volumeMounts", "securityContext", "hostNetwork", "port"}));
  ALLOT_RETURN_IF_ERROR(t["resources"].CheckFields({"requests"}));
  ResourceList requests;
  ALLOT_RETURN_IF_ERROR(ParseRequests(t["resources"]["requests"], &requests));
  for (const auto& [r, q] : requests) {
    if (!q.IsZero()) ps->requests[r] = q;
  }
  ALLOT_RETURN_IF_ERROR(t["nodeSelector"].Get(&ps->node_selector));
  ALLOT_RETURN_IF_ERROR(ParseTolerations(t["tolerations"], &ps->tolerations));
  ALLOT_RETURN_IF_ERROR(ParsePodStorage(t, ps));
  ALLOT_RETURN_IF_ERROR(t["hostNetwork"].Get(&ps->host_network));
  ALLOT_RETURN_IF_ERROR(ParseRunFields(t, ps));
  ALLOT_RETURN_IF_ERROR(ParseVolumeMounts(t["volumeMounts"], ps));
  return ParseSecurityContexts(Val(nullptr, t.path() + ".securityContext"),
                               t["securityContext"], ps);
}

// ---- Workload pieces -------------------------------------------------------

int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// RFC 3339 ("2026-01-01T00:00:00Z", "...:00.250+02:00") to Unix millis.
bool ParseRfc3339(const std::string& s, int64_t* unix_ms) {
  auto num = [&](size_t pos, size_t len, int* v) {
    if (pos + len > s.size()) return false;
    *v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      *v = *v * 10 + (s[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, sec;
  if (!num(0, 4, &y) || s.size() < 20 || s[4] != '-' || !num(5, 2, &mo) ||
      s[7] != '-' || !num(8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !num(11, 2, &h) || s[13] != ':' || !num(14, 2, &mi) || s[16] != ':' ||
      !num(17, 2, &sec)) {
    return false;
  }
  size_t i = 19;
  int ms = 0;
  if (s[i] == '.') {
    size_t start = ++i;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
         ++i) {
      if (i - start < 3) ms = ms * 10 + (s[i] - '0');
    }
    if (i == start) return false;
    for (size_t k = i - start; k < 3; ++k) ms *= 10;
  }
  int offset_min = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i + 6 == s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (!num(i + 1, 2, &oh) || s[i + 3] != ':' || !num(i + 4, 2, &om)) {
      return false;
    }
    offset_min = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
    i += 6;
  }
  static constexpr int kMonthDays[] = {31, 29, 31, 30, 31, 30,
                                       31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > kMonthDays[mo - 1] ||
      (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 60) {
    return false;
  }
  int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
                 offset_min * 60;
  *unix_ms = secs * 1000 + ms;
  return true;
}

// name (default "main"), count (default 1) and minCount of a pod set.
Status ParsePodSetHeader(const Val& v, PodSet* ps) {
  ps->name = "main";
  if (!v["name"].unset()) ALLOT_RETURN_IF_ERROR(v["name"].GetName(&ps->name));
  ALLOT_RETURN_IF_ERROR(v["count"].Get(&ps->count));
  if (ps->count < 1) return v["count"].Error("must be at least 1");
  ALLOT_RETURN_IF_ERROR(v["minCount"].Get(&ps->min_count));
  if (ps->min_count && (*ps->min_count < 1 || *ps->min_count > ps->count)) {
    return v["minCount"].Error("minCount " + std::to_string(*ps->min_count) +
                               " must be between 1 and count " +
                               std::to_string(ps->count));
  }
  return Status::Ok();
}

// backoffLimit (0-1000) and a maximum execution time in seconds (1 to 10
// years), either may be unset.
Status ParseRunLimits(const Val& backoff, const Val& max_seconds, Workload* w) {
  ALLOT_RETURN_IF_ERROR(backoff.Get(&w->backoff_limit));
  if (w->backoff_limit < 0 || w->backoff_limit > 1000) {
    return backoff.Error("must be between 0 and 1000");
  }
  int32_t seconds = 0;
  ALLOT_RETURN_IF_ERROR(max_seconds.Get(&seconds));
  if (!max_seconds.unset() && (seconds < 1 || seconds > 10 * 366 * 86400)) {
    return max_seconds.Error("must be between 1 and 316224000 (10 years)");
  }
  w->max_execution_seconds = seconds;
  return Status::Ok();
}

// spec.podSets of a Workload; `kueue` selects Kueue's PodTemplateSpec over
// Allot's compact template.
Status ParsePodSets(const Val& v, bool kueue, Workload* w) {
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v.Require());
  ALLOT_RETURN_IF_ERROR(v.Items(&items));
  if (items.empty()) return v.Error("must list at least one pod set");
  std::set<std::string> names;
  for (const Val& sv : items) {
    ALLOT_RETURN_IF_ERROR(sv.CheckFields(
        {"name", "count", "minCount", "template", "topologyRequest"}));
    PodSet& ps = w->pod_sets.emplace_back();
    ALLOT_RETURN_IF_ERROR(ParsePodSetHeader(sv, &ps));
    if (!names.insert(ps.name).second) {
      return sv["name"].Error("duplicate pod set name " + ps.name);
    }
    Val t = sv["template"];
    ALLOT_RETURN_IF_ERROR(t.Require());
    if (kueue) {
      ALLOT_RETURN_IF_ERROR(ParsePodTemplate(t, &ps));
    }
    if (!sv["topologyRequest"].unset()) {
      // The field wins over the template's annotations, as Kueue's job
      // integrations write the field from them.
      ps.topology = {};
      ALLOT_RETURN_IF_ERROR(ParseTopologyRequest(sv["topologyRequest"], &ps.topology));
    }
    if (!kueue) ALLOT_RETURN_IF_ERROR(ParseCompactTemplate(t, &ps));
  }
  return Status::Ok();
}

// status.admission; an assignment without count admits its whole pod set.
Status ParseAdmission(const Val& v, bool kueue, Workload* w) {
  if (v.unset()) return Status::Ok();
  ALLOT_RETURN_IF_ERROR(v.CheckFields({"clusterQueue", "podSetAssignments"}));
  Admission& a = w->admission.emplace();
  ALLOT_RETURN_IF_ERROR(v["clusterQueue"].GetName(&a.cluster_queue));
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v["podSetAssignments"].Require());
  ALLOT_RETURN_IF_ERROR(v["podSetAssignments"].Items(&items));
  for (const Val& pv : items) {
    ALLOT_RETURN_IF_ERROR(
        pv.CheckFields({"name", "count", "flavors", "placements"},
                       kueue ? Names{"resourceUsage", "topologyAssignment",
                                     "delayedTopologyRequest"}
                             : Names{}));
    PodSetAssignment& psa = a.pod_set_assignments.emplace_back();
    ALLOT_RETURN_IF_ERROR(pv["name"].GetName(&psa.name));
    for (const PodSet& ps : w->pod_sets) {
      if (ps.name == psa.name) psa.count = ps.count;
    }
    ALLOT_RETURN_IF_ERROR(pv["count"].Get(&psa.count));
    if (psa.count < 0) return pv["count"].Error("must not be negative");
    ALLOT_RETURN_IF_ERROR(pv["flavors"].Get(&psa.flavors));
    std::vector<Val> placements;
    ALLOT_RETURN_IF_ERROR(pv["placements"].Items(&placements));
    for (const Val& place : placements) {
      ALLOT_RETURN_IF_ERROR(place.CheckFields({"node", "gpus"}));
      PodPlacement& p = psa.placements.emplace_back();
      ALLOT_RETURN_IF_ERROR(place["node"].GetName(&p.node));
      std::vector<Val> gpus;
      ALLOT_RETURN_IF_ERROR(place["gpus"].Items(&gpus));
      for (const Val& g : gpus) {
        ALLOT_RETURN_IF_ERROR(g.GetName(&p.gpus.emplace_back()));
      }
    }
  }
  return Status::Ok();
}

// A workload type (Workload::type); unset leaves *out as is.
Status ParseType(const Val& v, std::string* out) {
  std::string type;
  ALLOT_RETURN_IF_ERROR(v.Get(&type));
  if (v.unset()) return Status::Ok();
  if (!IsWorkloadType(type)) {
    return v.Error("unknown value " + Quote(type) +
                   " (expected one of: batch, training, inference, notebook)");
  }
  *out = type;
  return Status::Ok();
}

// Identity, labels, annotations, creation time and source, shared by every
// workload kind. With `type_label` (Kueue's kinds) the type comes from the
// label allot.dev/workload-type; an allot.dev/v1 Workload has spec.type.
Status WorkloadBase(const Doc& d, bool type_label, Workload* w) {
  w->ns = d.ns;
  w->name = d.name;
  w->generate_name = d.generate_name;
  w->labels = d.labels;
  w->annotations = d.annotations;
  w->source = d.source;
  ALLOT_RETURN_IF_ERROR(
      DurationAnnotation(d.annotations, kIdleAfterKey, /*allow_zero=*/true, &w->idle_after_seconds));
  ALLOT_RETURN_IF_ERROR(ParsePreemptible(d.annotations, &w->preemptible));
  if (type_label) {
    ALLOT_RETURN_IF_ERROR(
        ParseType(d.metadata["labels"].Entry(kWorkloadTypeLabel), &w->type));
  }
  Val ts = d.metadata["creationTimestamp"];
  std::string text;
  ALLOT_RETURN_IF_ERROR(ts.Get(&text));
  if (!ts.unset() && !ParseRfc3339(text, &w->creation_unix_ms)) {
    return ts.Error("malformed timestamp " + Quote(text) +
                    ": expected RFC 3339 such as 2026-01-01T00:00:00Z");
  }
  return Status::Ok();
}

}  // namespace

Status ParseAllotWorkload(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(
      d.root.CheckFields({"apiVersion", "kind", "metadata", "spec", "status"}));
  Workload w;
  ALLOT_RETURN_IF_ERROR(WorkloadBase(d, /*type_label=*/false, &w));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.CheckFields(
      {"queueName", "type", "priorityClassName", "priority", "podSets",
       "backoffLimit", "maximumExecutionTimeSeconds", "active"}));
  ALLOT_RETURN_IF_ERROR(spec["active"].Get(&w.active));
  ALLOT_RETURN_IF_ERROR(ParseRunLimits(spec["backoffLimit"],
                                       spec["maximumExecutionTimeSeconds"], &w));
  ALLOT_RETURN_IF_ERROR(spec["queueName"].GetName(&w.queue_name));
  ALLOT_RETURN_IF_ERROR(ParseType(spec["type"], &w.type));
  ALLOT_RETURN_IF_ERROR(spec["priorityClassName"].Get(&w.priority_class_name));
  if (!w.priority_class_name.empty() && !spec["priority"].unset()) {
    return spec["priority"].Error(
        "give priorityClassName or priority, not both");
  }
  ALLOT_RETURN_IF_ERROR(spec["priority"].Get(&w.priority));
  ALLOT_RETURN_IF_ERROR(ParsePodSets(spec["podSets"], /*kueue=*/false, &w));
  ALLOT_RETURN_IF_ERROR(d.root["status"].CheckFields({"admission"}));
  ALLOT_RETURN_IF_ERROR(
      ParseAdmission(d.root["status"]["admission"], /*kueue=*/false, &w));
  out->workloads.push_back(std::move(w));
  return Status::Ok();
}

// The command a notebook's pod runs by default: Debian's jupyter-notebook
// (6.4) on the port and base URL the agent and the server give it
// ($PORT, $ALLOT_BASE_URL), with the token the server derives for this
// start ($JUPYTER_TOKEN), its files in $ALLOT_NOTEBOOK_DIR (by default
// notebooks/NAME in the home the agent gives the tenant: kept across
// stops and parks). --allow-root: a node that runs pods as root
// (no --run-as) would otherwise refuse it.
constexpr char kNotebookScript[] =
    "dir=\"${ALLOT_NOTEBOOK_DIR:-$HOME/notebooks/$ALLOT_NOTEBOOK}\"; "
    "mkdir -p \"$dir\" && exec jupyter-notebook --no-browser --allow-root "
    "--ip=\"${ALLOT_POD_IP:-127.0.0.1}\" --port=\"$PORT\" --port-retries=0 "
    "--notebook-dir=\"$dir\" --NotebookApp.base_url=\"$ALLOT_BASE_URL\" "
    "--NotebookApp.allow_remote_access=True --NotebookApp.password=";

Status ParseNotebook(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields({"apiVersion", "kind", "metadata", "spec"}));
  if (d.name.empty()) {
    return d.metadata["name"].Error("a Notebook needs a name (its address: /notebooks/TENANT/NAME/)");
  }
  Workload w;
  ALLOT_RETURN_IF_ERROR(WorkloadBase(d, /*type_label=*/false, &w));
  w.type = "notebook";
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.CheckFields(
      {"queueName", "priorityClassName", "gpus", "mig", "resources", "image",
       "imagePullPolicy", "command", "args", "env", "workingDir", "idleAfter", "maxAge",
       "active"}));
  ALLOT_RETURN_IF_ERROR(spec["queueName"].GetName(&w.queue_name));
  ALLOT_RETURN_IF_ERROR(spec["priorityClassName"].Get(&w.priority_class_name));
  ALLOT_RETURN_IF_ERROR(spec["active"].Get(&w.active));
  PodSet ps;
  ps.name = "notebook";
  ps.count = 1;
  ps.port = 8888;  // A container's; a process gets a free one ($PORT).
  ALLOT_RETURN_IF_ERROR(spec["resources"].CheckFields({"requests"}));
  ResourceList requests;
  ALLOT_RETURN_IF_ERROR(ParseRequests(spec["resources"]["requests"], &requests));
  for (const auto& [r, q] : requests) {
    if (!q.IsZero()) ps.requests[r] = q;
  }
  int32_t gpus = 0;
  ALLOT_RETURN_IF_ERROR(spec["gpus"].Get(&gpus));
  if (gpus < 0 || gpus > 64) return spec["gpus"].Error("must be 0 to 64, got " + std::to_string(gpus));
  std::string mig;
  ALLOT_RETURN_IF_ERROR(spec["mig"].Get(&mig));
  if (gpus > 0 && !mig.empty()) return spec["mig"].Error("give gpus or mig, not both");
  if (gpus > 0) ps.requests["nvidia.com/gpu"] = Quantity::FromUnits(gpus);
  if (!mig.empty()) {
    // NgMEM.gb, as NVIDIA names profiles: 1g.10gb, 3g.40gb, 7g.141gb.
    const size_t g = mig.find("g.");
    auto digits = [](const std::string& x) {
      return !x.empty() && std::all_of(x.begin(), x.end(), [](char c) { return std::isdigit(c); });
    };
    if (g == std::string::npos || !mig.ends_with("gb") || !digits(mig.substr(0, g)) ||
        mig.size() < g + 5 || !digits(mig.substr(g + 2, mig.size() - g - 4))) {
      return spec["mig"].Error("not a MIG profile such as 1g.10gb: " + Quote(mig));
    }
    ps.requests["nvidia.com/mig-" + mig] = Quantity::FromUnits(1);
  }
  ALLOT_RETURN_IF_ERROR(ParseRunFields(spec, &ps));
  if (ps.command.empty() && ps.args.empty()) ps.command = {"sh", "-c", kNotebookScript};
  std::string dir;
  ALLOT_RETURN_IF_ERROR(spec["workingDir"].Get(&dir));
  ps.working_dir.clear();  // Made by the script, which starts elsewhere.
  ps.env.emplace(ps.env.begin(), "ALLOT_NOTEBOOK", d.name);
  if (!dir.empty()) ps.env.emplace(ps.env.begin() + 1, "ALLOT_NOTEBOOK_DIR", dir);
  // Idle culling: the activity Allot sees (its proxy, the kernels and
  // terminals) besides its GPUs. Without idleAfter its ClusterQueue's
  // allot.dev/idle-after applies, else an hour (the server's default for
  // notebooks); its own annotation wins over both.
  Val idle = spec["idleAfter"];
  std::string idle_text;
  ALLOT_RETURN_IF_ERROR(idle.Get(&idle_text));
  if (!idle_text.empty() && !w.annotations.count(kIdleAfterKey)) {
    Result<int64_t> secs = ParseDurationSeconds(idle_text);
    if (!secs.ok()) return idle.Error(secs.status().message());
    w.annotations[kIdleAfterKey] = idle_text;
    w.idle_after_seconds = *secs;
  }
  w.annotations.emplace(kIdleSignalKey, "activity");
  std::string max_age;
  ALLOT_RETURN_IF_ERROR(spec["maxAge"].Get(&max_age));
  if (!max_age.empty()) {
    Result<int64_t> secs = ParseDurationSeconds(max_age);
    if (!secs.ok() || *secs <= 0) {
      return spec["maxAge"].Error(secs.ok() ? "must be longer than 0s" : secs.status().message());
    }
    w.max_execution_seconds = *secs;
  }
  w.pod_sets.push_back(std::move(ps));
  out->workloads.push_back(std::move(w));
  return Status::Ok();
}

namespace {

// v1beta1's priorityClassSource: "" or Kueue's WorkloadPriorityClass keeps
// the class; a Kubernetes PriorityClass is not a WorkloadPriorityClass, so
// only the literal priority Kueue recorded is kept.
Status ParsePriorityClassSource(const Val& v, Workload* w) {
  std::string source;
  ALLOT_RETURN_IF_ERROR(v.Get(&source));
  if (source == "scheduling.k8s.io/priorityclass") {
    w->priority_class_name.clear();
  } else if (!source.empty() &&
             source != "kueue.x-k8s.io/workloadpriorityclass") {
    return v.Error("unknown value " + Quote(source) +
                   " (expected one of: kueue.x-k8s.io/workloadpriorityclass, "
                   "scheduling.k8s.io/priorityclass)");
  }
  return Status::Ok();
}

// v1beta2's priorityClassRef {group, kind, name}: the same choice as
// v1beta1's priorityClassName and priorityClassSource.
Status ParsePriorityClassRef(const Val& v, Workload* w) {
  if (v.unset()) return Status::Ok();
  ALLOT_RETURN_IF_ERROR(v.CheckFields({"group", "kind", "name"}));
  std::string group, kind;
  ALLOT_RETURN_IF_ERROR(v["group"].GetName(&group));
  ALLOT_RETURN_IF_ERROR(v["kind"].GetName(&kind));
  ALLOT_RETURN_IF_ERROR(v["name"].GetName(&w->priority_class_name));
  if (group == "kueue.x-k8s.io" && kind == "WorkloadPriorityClass") {
    return Status::Ok();
  }
  if (group == "scheduling.k8s.io" && kind == "PriorityClass") {
    w->priority_class_name.clear();
    return Status::Ok();
  }
  if (group != "kueue.x-k8s.io" && group != "scheduling.k8s.io") {
    return v["group"].Error("unknown value " + Quote(group) +
                            " (expected one of: kueue.x-k8s.io, "
                            "scheduling.k8s.io)");
  }
  return v["kind"].Error(
      "kind " + Quote(kind) + " does not go with group " + group +
      " (kueue.x-k8s.io: WorkloadPriorityClass; scheduling.k8s.io: "
      "PriorityClass)");
}

}  // namespace

// Kueue's own Workload. Its status carries Kueue's bookkeeping (conditions,
// requeueState, ...), of which only the admission is read. v1beta2 replaced
// priorityClassName and priorityClassSource with priorityClassRef.
Status ParseKueueWorkload(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(
      d.root.CheckFields({"apiVersion", "kind", "metadata", "spec", "status"}));
  Workload w;
  ALLOT_RETURN_IF_ERROR(WorkloadBase(d, /*type_label=*/true, &w));
  Val spec = d.root["spec"];
  const bool v2 = d.api == KueueApi::kV1beta2;
  const unsigned v1 = ApiBit(KueueApi::kV1beta1);
  ALLOT_RETURN_IF_ERROR(CheckVersionedFields(
      spec, d.api,
      {{"priorityClassName", v1, "priorityClassRef.name"},
       {"priorityClassSource", v1,
        "priorityClassRef.group and priorityClassRef.kind"},
       {"priorityClassRef", ApiBit(KueueApi::kV1beta2),
        "priorityClassName and priorityClassSource"}}));
  ALLOT_RETURN_IF_ERROR(spec.CheckFields(
      v2 ? Names{"queueName", "priorityClassRef", "priority", "podSets",
                 "maximumExecutionTimeSeconds", "active"}
         : Names{"queueName", "priorityClassName", "priority",
                 "priorityClassSource", "podSets",
                 "maximumExecutionTimeSeconds", "active"}));
  ALLOT_RETURN_IF_ERROR(spec["active"].Get(&w.active));
  ALLOT_RETURN_IF_ERROR(ParseRunLimits(
      Val(nullptr, ""), spec["maximumExecutionTimeSeconds"], &w));
  ALLOT_RETURN_IF_ERROR(spec["queueName"].GetName(&w.queue_name));
  ALLOT_RETURN_IF_ERROR(spec["priority"].Get(&w.priority));
  if (v2) {
    ALLOT_RETURN_IF_ERROR(ParsePriorityClassRef(spec["priorityClassRef"], &w));
  } else {
    ALLOT_RETURN_IF_ERROR(
        spec["priorityClassName"].Get(&w.priority_class_name));
    ALLOT_RETURN_IF_ERROR(
        ParsePriorityClassSource(spec["priorityClassSource"], &w));
  }
  ALLOT_RETURN_IF_ERROR(ParsePodSets(spec["podSets"], /*kueue=*/true, &w));
  ALLOT_RETURN_IF_ERROR(d.root["status"].CheckMap());
  ALLOT_RETURN_IF_ERROR(
      ParseAdmission(d.root["status"]["admission"], /*kueue=*/true, &w));
  out->workloads.push_back(std::move(w));
  return Status::Ok();
}

namespace {

constexpr char kQueueLabel[] = "kueue.x-k8s.io/queue-name";
constexpr char kMinParallelism[] = "kueue.x-k8s.io/job-min-parallelism";

}  // namespace

// A Job as Kueue sees it: one pod set "main" of min(parallelism,
// completions) pods; backoffLimit restarts the gang, activeDeadlineSeconds
// bounds its run. Other Job fields (suspend, ...) are ignored; its pod
// template is read strictly (manifest_pod.cc).
Status ParseJob(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields, {"status"}));
  Workload w;
  ALLOT_RETURN_IF_ERROR(WorkloadBase(d, /*type_label=*/true, &w));
  Val labels = d.metadata["labels"];
  auto queue = d.labels.find(kQueueLabel);
  if (queue == d.labels.end()) {
    return labels.Error("batch/v1 Job " + d.name + " has no " + kQueueLabel +
                        " label");
  }
  ALLOT_RETURN_IF_ERROR(labels.Entry(kQueueLabel).GetName(&w.queue_name));
  ALLOT_RETURN_IF_ERROR(
      labels.Entry(kPriorityLabel).Get(&w.priority_class_name));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.CheckMap());
  // Every JobSpec field is read, accepted as having no effect, or refused
  // naming it: none that changes how the Job runs or ends is dropped.
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      spec,
      {"parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "template",
       "ttlSecondsAfterFinished", "selector", "manualSelector"},
      {{"suspend", "Allot queues every Job (Kueue's suspend idiom is welcome)", "true, false"},
       {"completionMode",
        "each pod gets its index (ALLOT_POD_INDEX and JOB_COMPLETION_INDEX)",
        "NonIndexed, Indexed"},
       {"podReplacementPolicy", "a failed pod's gang is replaced whole",
        "TerminatingOrFailed, Failed"},
       {"podFailurePolicy",
        "a failed pod fails its gang, which restarts whole as backoffLimit says"},
       {"backoffLimitPerIndex", "a failed pod's gang restarts whole as backoffLimit says"},
       {"maxFailedIndexes", "a failed pod's gang restarts whole as backoffLimit says"},
       {"successPolicy", "a Job succeeds when every pod exits 0"},
       {"managedBy", "Allot runs the Job itself (no MultiKueue)",
        "kubernetes.io/job-controller"}}));
  PodSet ps;
  ps.name = "main";
  std::optional<int32_t> completions;
  ALLOT_RETURN_IF_ERROR(spec["parallelism"].Get(&ps.count));
  ALLOT_RETURN_IF_ERROR(spec["completions"].Get(&completions));
  if (ps.count < 1) return spec["parallelism"].Error("must be at least 1");
  if (completions && *completions < 0) {
    return spec["completions"].Error("must not be negative");
  }
  if (completions && *completions < ps.count) ps.count = *completions;
  ALLOT_RETURN_IF_ERROR(
      ParseRunLimits(spec["backoffLimit"], spec["activeDeadlineSeconds"], &w));
  Val min = d.metadata["annotations"].Entry(kMinParallelism);
  ALLOT_RETURN_IF_ERROR(min.Get(&ps.min_count));
  if (ps.min_count && (*ps.min_count < 1 || *ps.min_count > ps.count)) {
    return min.Error("must be between 1 and the pod count " +
                     std::to_string(ps.count));
  }
  ALLOT_RETURN_IF_ERROR(spec["template"].Require());
  ALLOT_RETURN_IF_ERROR(ParsePodTemplate(spec["template"], &ps));
  w.pod_sets.push_back(std::move(ps));
  out->workloads.push_back(std::move(w));
  return Status::Ok();
}

Status DurationAnnotation(const Labels& annotations, const char* key, bool allow_zero,
                          int64_t* out) {
  auto it = annotations.find(key);
  if (it == annotations.end()) return Status::Ok();
  const std::string field = std::string("metadata.annotations.") + key;
  Result<int64_t> secs = ParseDurationSeconds(it->second);
  if (!secs.ok()) return Status::InvalidArgument(std::string(key) + ": " + secs.status().message(), field);
  if (*secs < 0 || (*secs == 0 && !allow_zero)) {
    return Status::InvalidArgument(
        std::string(key) + (allow_zero ? ": must not be negative" : ": must be longer than 0s"),
        field);
  }
  *out = *secs;
  return Status::Ok();
}

Status ParsePreemptible(const Labels& annotations, bool* out) {
  auto it = annotations.find(kPreemptibleKey);
  if (it == annotations.end()) return Status::Ok();
  if (it->second != "true" && it->second != "false") {
    return Status::InvalidArgument(std::string(kPreemptibleKey) + ": " + Quote(it->second) +
                                       " is neither \"true\" nor \"false\"",
                                   std::string("metadata.annotations.") + kPreemptibleKey);
  }
  *out = it->second == "true";
  return Status::Ok();
}

}  // namespace allot::core::internal
