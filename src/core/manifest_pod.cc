// Manifest reading, Kubernetes pod templates: the PodSpec of a Kueue
// Workload's pod set or a Job's template. Each field is read into the
// PodSet, accepted as having no effect (documentation, or a Kubernetes
// default that is what Allot does anyway), or an error that names it and
// says why: nothing that would change what runs, or how safely, is dropped
// in silence. What the first container runs is read by
// manifest_container.cc, shared with allot.dev/v1's compact template.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/manifest_internal.h"

namespace allot::core::internal {
namespace {

// The values of an Unsupported::accepted list.
std::vector<std::string_view> Split(std::string_view accepted) {
  std::vector<std::string_view> out;
  for (size_t start = 0; start <= accepted.size();) {
    size_t end = std::min(accepted.find(", ", start), accepted.size());
    out.push_back(accepted.substr(start, end - start));
    start = end + 2;
  }
  return out;
}

// True when `v` is a scalar whose text, or whose boolean value, is one of
// `accepted`.
bool HasAcceptedValue(const Val& v, std::string_view accepted) {
  std::string text;
  if (!v.Get(&text).ok()) return false;
  bool b = false;
  const bool is_bool = v.Get(&b).ok();
  for (std::string_view one : Split(accepted)) {
    if (one == text || (is_bool && one == (b ? "true" : "false"))) return true;
  }
  return false;
}

}  // namespace

Status CheckPodFields(const Val& v, Names known, UnsupportedTable table) {
  ALLOT_RETURN_IF_ERROR(v.CheckFieldsIf(known, [table](std::string_view key) {
    for (const Unsupported& u : table) {
      if (u.field == key) return true;
    }
    return false;
  }));
  for (const Unsupported& u : table) {
    Val f = v[std::string(u.field)];
    if (f.unset() || (!u.accepted.empty() && HasAcceptedValue(f, u.accepted))) {
      continue;
    }
    std::string only;
    for (std::string_view one : Split(u.accepted)) {
      if (u.accepted.empty()) break;
      only += (only.empty() ? " (only " : ", ") +
              (one.empty() ? std::string("\"\"") : std::string(one));
    }
    if (!only.empty()) only += ")";
    return f.Error("not supported" + only + ": " + std::string(u.why));
  }
  return Status::Ok();
}

namespace {

Status AddInto(const ResourceList& add, const Val& where, ResourceList* sum) {
  for (const auto& [r, q] : add) {
    if (!Quantity::CheckedAdd((*sum)[r], q, &(*sum)[r])) {
      return where.Error("total request of " + r + " overflows");
    }
  }
  return Status::Ok();
}

void MaxInto(const ResourceList& x, ResourceList* max) {
  for (const auto& [r, q] : x) {
    if (q > (*max)[r]) (*max)[r] = q;
  }
}

// A container's resources: its requests, where a resource given only in
// limits is requested at its limit (Kubernetes defaulting). A request above
// its limit is refused, as Kubernetes (and so Kueue) refuses it.
Status ParseResources(const Val& resources, ResourceList* out) {
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      resources, {"requests", "limits"},
      {{"claims", "dynamic resource claims are not supported; request "
                  "nvidia.com/gpu or a MIG resource"}}));
  ALLOT_RETURN_IF_ERROR(ParseRequests(resources["requests"], out));
  ResourceList limits;
  ALLOT_RETURN_IF_ERROR(ParseRequests(resources["limits"], &limits));
  for (const auto& [r, q] : limits) {
    auto [it, inserted] = out->emplace(r, q);
    if (!inserted && it->second > q) {
      return resources["requests"].Entry(r).Error(
          "request " + it->second.ToString() + " is above the limit " +
          q.ToString() + " (resources.limits[" + r + "])");
    }
  }
  return Status::Ok();
}

// The first container: what runs (manifest_container.cc) and its ports:
// the first is where its pods serve (PodSet::port; Allot maps no host
// ports), the others only document what it listens on.
Status CheckFirstContainer(const Val& c) {
  constexpr char kProbes[] =
      "Allot does not probe containers: a pod runs until its process exits";
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      c,
      {"name", "image", "imagePullPolicy", "command", "args", "workingDir",
       "env", "envFrom", "resources", "volumeMounts", "securityContext",
       "ports", "terminationMessagePath", "terminationMessagePolicy"},
      {{"livenessProbe", kProbes},
       {"readinessProbe", kProbes},
       {"startupProbe", kProbes},
       {"lifecycle", "Allot runs no postStart or preStop hooks"},
       {"volumeDevices",
        "raw block devices are not supported; mount a volume with "
        "volumeMounts"},
       {"restartPolicy",
        "only an init container may set it (a sidecar); a failed pod "
        "restarts with its gang (the Job's backoffLimit)"},
       {"stdin", "pods have no stdin", "false"},
       {"stdinOnce", "pods have no stdin", "false"},
       {"tty", "pods have no terminal", "false"}}));
  std::vector<Val> ports;
  ALLOT_RETURN_IF_ERROR(c["ports"].Items(&ports));
  for (const Val& p : ports) {
    ALLOT_RETURN_IF_ERROR(CheckPodFields(
        p, {"containerPort", "name", "protocol"},
        {{"hostPort", "Allot maps no host ports (on the host's network the "
                      "container's port is the host's)"},
         {"hostIP", "Allot maps no host ports"}}));
  }
  return Status::Ok();
}

// A container other than the first, or an init container: Allot runs only
// the first container (one process per pod), so these count for their
// resources alone, as Kueue counts them (the requests of a pod). Anything
// that would run (an image, a command, ...) is refused rather than dropped.
Status CheckExtraContainer(const Val& c, bool init) {
  std::vector<std::pair<std::string, Val>> entries;
  ALLOT_RETURN_IF_ERROR(c.Entries(&entries));
  for (const auto& [key, v] : entries) {
    if (key == "name" || key == "resources") continue;
    if (init && key == "restartPolicy") {
      std::string policy;
      ALLOT_RETURN_IF_ERROR(v.Get(&policy));
      if (policy == "Always") continue;
      return c[key].Error("must be Always (a sidecar) or left out, got " +
                          Quote(policy));
    }
    return c[key].Error(
        "not supported: Allot runs only the first container "
        "(containers[0]); other containers and init containers count for "
        "their resources only and may carry only name and resources" +
        std::string(init ? " (and restartPolicy: Always)" : "") +
        "; run this one as a pod set of its own");
  }
  return c.CheckMap();
}

// spec.affinity of a pod template. Of the required node affinity, what a
// nodeSelector can say (one term whose expressions are all `In` with one
// value) joins *node_selector, and so picks flavors and nodes as it does;
// any other required node affinity is an error (Allot cannot honour it
// yet), as is required pod (anti-)affinity. Preferred terms are
// preferences Allot does not read.
Status ParseAffinity(const Val& v, Labels* node_selector) {
  constexpr char kPreferred[] = "preferredDuringSchedulingIgnoredDuringExecution";
  constexpr char kRequired[] = "requiredDuringSchedulingIgnoredDuringExecution";
  ALLOT_RETURN_IF_ERROR(
      v.CheckFields({"nodeAffinity", "podAffinity", "podAntiAffinity"}));
  for (const char* pod : {"podAffinity", "podAntiAffinity"}) {
    ALLOT_RETURN_IF_ERROR(CheckPodFields(
        v[pod], {kPreferred},
        {{kRequired, "Allot cannot place pods by other pods' labels; a "
                     "topology request keeps a pod set's pods together"}}));
  }
  ALLOT_RETURN_IF_ERROR(v["nodeAffinity"].CheckFields({kRequired, kPreferred}));
  Val required = v["nodeAffinity"][kRequired];
  if (required.unset()) return Status::Ok();
  ALLOT_RETURN_IF_ERROR(required.CheckFields({"nodeSelectorTerms"}));
  std::vector<Val> terms;
  ALLOT_RETURN_IF_ERROR(required["nodeSelectorTerms"].Items(&terms));
  if (terms.size() > 1) {
    return required["nodeSelectorTerms"].Error(
        "more than one node selector term (either may match) is not "
        "supported yet; give one term, or a nodeSelector");
  }
  for (const Val& term : terms) {
    ALLOT_RETURN_IF_ERROR(term.CheckFields({"matchExpressions"}, {}));
    std::vector<Val> exprs;
    ALLOT_RETURN_IF_ERROR(term["matchExpressions"].Items(&exprs));
    for (const Val& e : exprs) {
      ALLOT_RETURN_IF_ERROR(e.CheckFields({"key", "operator", "values"}));
      std::string key, op;
      std::vector<std::string> values;
      ALLOT_RETURN_IF_ERROR(e["key"].GetName(&key));
      ALLOT_RETURN_IF_ERROR(e["operator"].GetName(&op));
      ALLOT_RETURN_IF_ERROR(e["values"].Get(&values));
      if (op != "In" || values.size() != 1) {
        return e.Error("operator " + op + " with " +
                       std::to_string(values.size()) +
                       " value(s) is not supported yet: Allot reads node "
                       "affinity that a nodeSelector can say (In, one value)");
      }
      auto [it, inserted] = node_selector->emplace(key, values[0]);
      if (!inserted && it->second != values[0]) {
        return e.Error("conflicts with nodeSelector " + key + ": " +
                       it->second + " (no node can match both)");
      }
    }
  }
  return Status::Ok();
}

constexpr char kDnsNames[] =
    "Allot gives pods no DNS names or host entries of their own";
constexpr char kPriority[] =
    "a workload's priority is its WorkloadPriorityClass (a Job's label "
    "kueue.x-k8s.io/priority-class, a Workload's spec)";

// The PodSpec fields that are neither read nor ignorable: each refused,
// unless it holds the value that is what Allot does anyway.
Status CheckPodSpecFields(const Val& spec) {
  return CheckPodFields(
      spec,
      {"containers", "initContainers", "overhead", "nodeSelector", "affinity",
       "tolerations", "volumes", "imagePullSecrets", "securityContext", "hostNetwork"},
      {{"restartPolicy",
        "a failed pod fails its gang, which restarts whole as the Job's "
        "backoffLimit says",
        "Never, OnFailure"},
       {"dnsPolicy", "pods use the node's resolver (Allot runs no cluster DNS)",
        "ClusterFirst, Default"},
       {"schedulerName", "Allot is the scheduler", "default-scheduler"},
       {"terminationGracePeriodSeconds",
        "Allot gives a pod 30 s between SIGTERM and SIGKILL; set the "
        "workload annotation allot.dev/termination-grace-period instead",
        "30"},
       {"automountServiceAccountToken",
        "Allot mounts no Kubernetes API token into pods", "false"},
       {"hostPID", "a pod never shares the host's process IDs", "false"},
       {"hostIPC", "a pod never shares the host's IPC namespace", "false"},
       {"shareProcessNamespace", "a pod runs one container", "false"},
       {"hostUsers",
        "the agent decides the user namespace (allot agent --userns-base), "
        "not the pod"},
       {"serviceAccountName",
        "pods get no Kubernetes service account or API token"},
       {"serviceAccount", "pods get no Kubernetes service account or API token"},
       {"nodeName",
        "Allot places pods; pin a node with nodeSelector "
        "kubernetes.io/hostname"},
       {"priorityClassName", kPriority},
       {"priority", kPriority},
       {"preemptionPolicy", kPriority},
       {"runtimeClassName",
        "the agent's runtime runs every pod (runc, or a host process); GPUs "
        "come from resources"},
       {"activeDeadlineSeconds",
        "bound the run with the Job's spec.activeDeadlineSeconds or the "
        "Workload's spec.maximumExecutionTimeSeconds"},
       {"hostname", kDnsNames},
       {"subdomain", kDnsNames},
       {"setHostnameAsFQDN", kDnsNames},
       {"hostAliases", kDnsNames},
       {"dnsConfig", kDnsNames},
       {"topologySpreadConstraints",
        "use a topology request (the kueue.x-k8s.io/podset-*-topology "
        "annotations or topologyRequest)"},
       {"ephemeralContainers", "a pod runs one container"},
       {"readinessGates", "Allot has no readiness"},
       {"resourceClaims",
        "dynamic resource allocation is not supported; request "
        "nvidia.com/gpu or a MIG resource"},
       {"schedulingGates",
        "Allot does not gate pods; hold a Workload with spec.active: false"},
       {"resources", "give resources per container"}});
}

}  // namespace

// Per-pod requests as the kubelet computes them: the sum over containers,
// at least the largest init container (init containers run one at a time
// next to the sidecars started before them, restartPolicy: Always, which
// then keep running with the pod), plus the overhead.
Status ParsePodSpec(const Val& spec, PodSet* ps) {
  ALLOT_RETURN_IF_ERROR(spec.Require());
  ALLOT_RETURN_IF_ERROR(CheckPodSpecFields(spec));
  std::vector<Val> containers, inits;
  ALLOT_RETURN_IF_ERROR(spec["containers"].Items(&containers));
  ALLOT_RETURN_IF_ERROR(spec["initContainers"].Items(&inits));
  // Far past any real pod; the node budget bounds the rest of the template.
  constexpr size_t kMaxContainers = 64;
  if (containers.size() + inits.size() > kMaxContainers) {
    return spec["containers"].Error(
        std::to_string(containers.size() + inits.size()) +
        " containers and init containers; at most " +
        std::to_string(kMaxContainers) + " are allowed (the limit)");
  }
  ResourceList main, sidecars, init_peak, overhead;
  for (size_t i = 0; i < containers.size(); ++i) {
    const Val& c = containers[i];
    ALLOT_RETURN_IF_ERROR(i == 0 ? CheckFirstContainer(c)
                                 : CheckExtraContainer(c, /*init=*/false));
    ResourceList r;
    ALLOT_RETURN_IF_ERROR(ParseResources(c["resources"], &r));
    ALLOT_RETURN_IF_ERROR(AddInto(r, c, &main));
  }
  for (const Val& c : inits) {
    ALLOT_RETURN_IF_ERROR(CheckExtraContainer(c, /*init=*/true));
    ResourceList r;
    ALLOT_RETURN_IF_ERROR(ParseResources(c["resources"], &r));
    if (!c["restartPolicy"].unset()) {
      ALLOT_RETURN_IF_ERROR(AddInto(r, c, &sidecars));
      MaxInto(sidecars, &init_peak);
    } else {
      ALLOT_RETURN_IF_ERROR(AddInto(sidecars, c, &r));
      MaxInto(r, &init_peak);
    }
  }
  ALLOT_RETURN_IF_ERROR(ParseRequests(spec["overhead"], &overhead));
  ALLOT_RETURN_IF_ERROR(AddInto(sidecars, spec, &main));
  MaxInto(init_peak, &main);
  ALLOT_RETURN_IF_ERROR(AddInto(overhead, spec, &main));
  for (const auto& [r, q] : main) {
    if (!q.IsZero()) ps->requests[r] = q;
  }
  ALLOT_RETURN_IF_ERROR(spec["nodeSelector"].Get(&ps->node_selector));
  ALLOT_RETURN_IF_ERROR(ParseAffinity(spec["affinity"], &ps->node_selector));
  ALLOT_RETURN_IF_ERROR(ParseTolerations(spec["tolerations"], &ps->tolerations));
  // What runs: the pod's storage first, as the mounts name its volumes.
  const Val first = containers.empty() ? Val(nullptr, spec.path() + ".containers[0]")
                                       : containers[0];
  ALLOT_RETURN_IF_ERROR(ParsePodStorage(spec, ps));
  ALLOT_RETURN_IF_ERROR(spec["hostNetwork"].Get(&ps->host_network));
  ALLOT_RETURN_IF_ERROR(ParseRunFields(first, ps));
  ALLOT_RETURN_IF_ERROR(ParseVolumeMounts(first["volumeMounts"], ps));
  return ParseSecurityContexts(spec["securityContext"], first["securityContext"], ps);
}

}  // namespace allot::core::internal
