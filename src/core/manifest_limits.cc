// Manifest reading, the checks on each object that a document added:
// request totals far from int64's limit, bounds on counts and sizes
// (ParseLimits::object_limits), the syntax of label keys and values and of
// resource names, and the size of the object's stored JSON encoding.
// ParseDocument (manifest.cc) runs them after a kind's Parse function.
#include <boost/json/serialize.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/manifest_encode.h"
#include "core/manifest_internal.h"
#include "core/names.h"

namespace allot::core::internal {

namespace {

// Bounds on a decoded object, so that a request cannot make the server
// store (and schedule, place and encode) an absurd one. Kueue allows 8 pod
// sets; the rest are far past any real workload.
constexpr size_t kMaxPodSets = 8;
constexpr int64_t kMaxPodsPerWorkload = 10000;
constexpr size_t kMaxCommandEntries = 1024;  // command and args, each.
constexpr size_t kMaxEnvEntries = 1024;  // Values and secret keys together.
// envFrom, imagePullSecrets, volumes and volumeMounts, each.
constexpr size_t kMaxPodRefs = 256;
constexpr size_t kMaxLabels = 256;                  // Labels, and annotations.
constexpr size_t kMaxAnnotationBytes = 256 * 1024;  // As Kubernetes.

std::string Limit(size_t n, const char* what) {
  return "at most " + std::to_string(n) + " " + what + " (the limit)";
}

// Label and annotation keys, resource names: Kubernetes qualified names;
// label values as Kubernetes' (core/names.h).
Status CheckKey(const std::string& key, const std::string& field,
                const char* what) {
  std::string why = QualifiedNameError(key);
  if (why.empty()) return Status::Ok();
  return Status::InvalidArgument(
      std::string(what) + " '" + key + "' is not valid: " + why, field);
}
Status CheckLabels(const Labels& labels, const std::string& field) {
  for (const auto& [k, v] : labels) {
    ALLOT_RETURN_IF_ERROR(CheckKey(k, field, "label key"));
    if (std::string why = LabelValueError(v); !why.empty()) {
      return Status::InvalidArgument(
          "the value '" + v + "' of label " + k + " is not valid: " + why,
          field + "[" + k + "]");
    }
  }
  return Status::Ok();
}
template <typename Map>
Status CheckResourceNames(const Map& m, const std::string& field) {
  for (const auto& kv : m)
    ALLOT_RETURN_IF_ERROR(CheckKey(kv.first, field, "resource name"));
  return Status::Ok();
}

}  // namespace

Counts CountsOf(const Config& c) {
  return {c.workloads.size(),        c.nodes.size(),
          c.cluster_queues.size(),   c.flavors.size(),
          c.cohorts.size(),          c.local_queues.size(),
          c.priority_classes.size(), c.namespaces.size(),
          c.topologies.size(),       c.images.size()};
}

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

// The syntax of the names inside the objects a document added (after
// `before`): resource names, selectors' and flavors' labels.
Status CheckObjectNames(const Counts& before, const Config& out) {
  for (size_t i = before.workloads; i < out.workloads.size(); ++i) {
    const Workload& w = out.workloads[i];
    for (size_t j = 0; j < w.pod_sets.size(); ++j) {
      std::string at = "spec.podSets[" + std::to_string(j) + "]";
      ALLOT_RETURN_IF_ERROR(CheckResourceNames(
          w.pod_sets[j].requests, at + ".template.resources.requests"));
      ALLOT_RETURN_IF_ERROR(CheckLabels(w.pod_sets[j].node_selector,
                                        at + ".template.nodeSelector"));
    }
  }
  for (size_t i = before.cluster_queues; i < out.cluster_queues.size(); ++i) {
    const ClusterQueue& cq = out.cluster_queues[i];
    for (size_t g = 0; g < cq.resource_groups.size(); ++g) {
      const ResourceGroup& rg = cq.resource_groups[g];
      std::string at = "spec.resourceGroups[" + std::to_string(g) + "]";
      for (const std::string& r : rg.covered_resources) {
        ALLOT_RETURN_IF_ERROR(
            CheckKey(r, at + ".coveredResources", "resource name"));
      }
      for (size_t f = 0; f < rg.flavors.size(); ++f) {
        for (const ResourceQuota& q : rg.flavors[f].resources) {
          ALLOT_RETURN_IF_ERROR(CheckKey(
              q.name, at + ".flavors[" + std::to_string(f) + "].resources",
              "resource name"));
        }
      }
    }
    if (cq.namespace_selector) {
      ALLOT_RETURN_IF_ERROR(CheckLabels(cq.namespace_selector->match_labels,
                                        "spec.namespaceSelector.matchLabels"));
      for (const LabelSelectorRequirement& r :
           cq.namespace_selector->match_expressions) {
        ALLOT_RETURN_IF_ERROR(CheckKey(
            r.key, "spec.namespaceSelector.matchExpressions", "label key"));
      }
    }
  }
  for (size_t i = before.flavors; i < out.flavors.size(); ++i) {
    ALLOT_RETURN_IF_ERROR(
        CheckLabels(out.flavors[i].node_labels, "spec.nodeLabels"));
    ALLOT_RETURN_IF_ERROR(
        CheckResourceNames(out.flavors[i].price_micros_per_hour, "spec.price"));
  }
  return Status::Ok();
}

Status CheckMetadataLimits(const Doc& d) {
  ALLOT_RETURN_IF_ERROR(CheckLabels(d.labels, "metadata.labels"));
  for (const auto& kv : d.annotations) {
    ALLOT_RETURN_IF_ERROR(
        CheckKey(kv.first, "metadata.annotations", "annotation key"));
  }
  if (d.labels.size() > kMaxLabels) {
    return Status::InvalidArgument(std::to_string(d.labels.size()) +
                                       " labels; " +
                                       Limit(kMaxLabels, "are allowed"),
                                   "metadata.labels");
  }
  if (d.annotations.size() > kMaxLabels) {
    return Status::InvalidArgument(std::to_string(d.annotations.size()) +
                                       " annotations; " +
                                       Limit(kMaxLabels, "are allowed"),
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
    const size_t env = ps.env.size() + ps.env_secrets.size();
    if (env > kMaxEnvEntries) {
      return Status::InvalidArgument("env of " + std::to_string(env) +
                                         " entries; " +
                                         Limit(kMaxEnvEntries, "are allowed"),
                                     at + ".env");
    }
    const std::pair<const char*, size_t> refs[] = {
        {"envFrom", ps.env_from.size()},
        {"imagePullSecrets", ps.image_pull_secrets.size()},
        {"volumes", ps.volumes.size()},
        {"volumeMounts", ps.volume_mounts.size()}};
    for (const auto& [field, n] : refs) {
      if (n > kMaxPodRefs) {
        return Status::InvalidArgument(
            std::string(field) + " of " + std::to_string(n) + " entries; " +
                Limit(kMaxPodRefs, "are allowed"),
            at + "." + field);
      }
    }
  }
  return Status::Ok();
}

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
  // Encoded as stored (the default Kueue version; default arguments do not
  // pass through a function pointer, hence the lambdas).
  auto enc = [](const auto& x) {
    if constexpr (requires { EncodeFlavor(x); }) return EncodeFlavor(x);
    else if constexpr (requires { EncodeCohort(x); }) return EncodeCohort(x);
    else if constexpr (requires { EncodeClusterQueue(x); }) return EncodeClusterQueue(x);
    else if constexpr (requires { EncodeLocalQueue(x); }) return EncodeLocalQueue(x);
    else if constexpr (requires { EncodePriorityClass(x); }) return EncodePriorityClass(x);
    else if constexpr (requires { EncodeNamespace(x); }) return EncodeNamespace(x);
    else if constexpr (requires { EncodeNode(x); }) return EncodeNode(x);
    else if constexpr (requires { EncodeTopology(x); }) return EncodeTopology(x);
    else if constexpr (requires { EncodeImage(x); }) return EncodeImage(x);
    else return EncodeWorkload(x);
  };
  ALLOT_RETURN_IF_ERROR(check(out.workloads, before.workloads, enc));
  ALLOT_RETURN_IF_ERROR(check(out.nodes, before.nodes, enc));
  ALLOT_RETURN_IF_ERROR(check(out.cluster_queues, before.cluster_queues, enc));
  ALLOT_RETURN_IF_ERROR(check(out.flavors, before.flavors, enc));
  ALLOT_RETURN_IF_ERROR(check(out.cohorts, before.cohorts, enc));
  ALLOT_RETURN_IF_ERROR(check(out.local_queues, before.local_queues, enc));
  ALLOT_RETURN_IF_ERROR(
      check(out.priority_classes, before.priority_classes, enc));
  ALLOT_RETURN_IF_ERROR(check(out.topologies, before.topologies, enc));
  ALLOT_RETURN_IF_ERROR(check(out.images, before.images, enc));
  return check(out.namespaces, before.namespaces, enc);
}

}  // namespace allot::core::internal
