// Builders shared by every test binary: the manifests a scenario repeats
// (flavors, cohorts, namespaces, nodes, local queues, GPU ClusterQueues,
// priority classes) as YAML documents, the fluent Wl builder of an
// allot.dev/v1 Workload as the scheduler's scenarios hold it (admitted or
// not, with a creation time), and WorkloadJson, a Workload as a client
// submits it. Each YAML helper returns complete documents followed by
// "---\n", so documents add up with +.
//
// Test-only and header-only: nothing here is linked into the allot binary,
// and it depends on no module (plain strings), so any *_test.cc may include
// it. The scheduler's scenario runner (sched/test_util.h) builds on it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace allot::testing {

// ---------------------------------------------------------------------------
// YAML snippets. Each returns complete documents followed by "---\n".

// A ResourceFlavor `name` selecting nodes labeled
// allot.dev/gpu-product=<product>; every node when `product` is empty.
inline std::string FlavorSpec(const std::string& name, const std::string& spec);
inline std::string Flavor(const std::string& name, const std::string& product) {
  return FlavorSpec(name, product.empty() ? "" : "{nodeLabels: {allot.dev/gpu-product: " + product + "}}");
}

// A ResourceFlavor `name` with `spec` in flow style ("" for none):
//   FlavorSpec("h100", "{nodeLabels: {gpu: h100}}")
//   FlavorSpec("h100", "{price: {nvidia.com/gpu: 2.5}}")
inline std::string FlavorSpec(const std::string& name, const std::string& spec) {
  std::string out = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n"
                    "metadata: {name: " + name + "}\n";
  if (!spec.empty()) out += "spec: " + spec + "\n";
  return out + "---\n";
}

// A Cohort `name`, under `parent` when one is given.
inline std::string Cohort(const std::string& name, const std::string& parent = "") {
  std::string out = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: " +
                    name + "}\n";
  if (!parent.empty()) out += "spec: {parentName: " + parent + "}\n";
  return out + "---\n";
}

// `count` nodes "<prefix>-0".."<prefix>-<count-1>", each with `gpus` whole
// GPUs of `product` (UUIDs "GPU-<prefix>-<node>-<gpu>"), 128 CPUs and 1Ti
// of memory, in rack `rack`.
inline std::string GpuNodes(const std::string& prefix, int count,
                            const std::string& product, int gpus = 8,
                            const std::string& rack = "r1") {
  std::string out;
  for (int n = 0; n < count; ++n) {
    std::string name = prefix + "-" + std::to_string(n);
    out +=
        "apiVersion: allot.dev/v1\nkind: Node\n"
        "metadata: {name: " +
        name + ", labels: {allot.dev/gpu-product: " + product +
        ", topology.allot.dev/rack: " + rack +
        "}}\n"
        "status:\n  capacity: {cpu: \"128\", memory: 1Ti}\n  gpus:\n";
    for (int g = 0; g < gpus; ++g) {
      out += "  - {uuid: GPU-" + name + "-" + std::to_string(g) +
             ", product: " + product + ", memory: 80Gi}\n";
    }
    out += "---\n";
  }
  return out;
}

// A LocalQueue `ns`/`name` feeding ClusterQueue `cq`.
inline std::string LocalQueue(const std::string& ns, const std::string& name,
                              const std::string& cq) {
  return "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
         "metadata: {name: " +
         name + ", namespace: " + ns +
         "}\n"
         "spec: {clusterQueue: " +
         cq + "}\n---\n";
}

// A v1 Namespace with labels, e.g. Namespace("team-a", "{team: a}").
inline std::string Namespace(const std::string& name,
                             const std::string& labels) {
  return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + name +
         ", labels: " + labels + "}\n---\n";
}
// A v1 Namespace without labels.
inline std::string Namespace(const std::string& name) {
  return "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + name + "}\n---\n";
}

// "<prefix>0" .. "<prefix><n-1>": GPU UUIDs for Node.
inline std::vector<std::string> Uuids(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// A Node `name` with `labels` (flow style, "" for none), `cpu` and `memory`
// capacity and GPUs known only by their UUIDs (none: a node without GPUs):
//   Node("n1", "{pool: main}", "32", "256Gi", Uuids("G-", 4))
// Unlike GpuNodes, nothing else is said of the node or its GPUs.
inline std::string Node(const std::string& name, const std::string& labels,
                        const std::string& cpu, const std::string& memory,
                        const std::vector<std::string>& gpu_uuids) {
  std::string out = "apiVersion: allot.dev/v1\nkind: Node\nmetadata: {name: " + name +
                    (labels.empty() ? "" : ", labels: " + labels) +
                    "}\nstatus:\n  capacity: {cpu: " + cpu + ", memory: " + memory + "}\n";
  if (!gpu_uuids.empty()) {
    out += "  gpus: [";
    for (size_t i = 0; i < gpu_uuids.size(); ++i) {
      out += (i ? ", {uuid: " : "{uuid: ") + gpu_uuids[i] + "}";
    }
    out += "]\n";
  }
  return out + "---\n";
}

// A ClusterQueue selecting every namespace, with one resource group over
// nvidia.com/gpu and one flavor:
//   GpuCq("team-a-cq", "research", "h100", "nominalQuota: 8, borrowingLimit:
//   0",
//         "  preemption: {withinClusterQueue: LowerPriority}\n")
// `cohort` may be empty (no cohort); `extra` is more spec lines, indented by
// two spaces. A name "<ns>-cq" also gets LocalQueue <ns>/q, so that
// workloads of namespace <ns> reach it with the default queue name.
inline std::string GpuCq(const std::string& name, const std::string& cohort,
                         const std::string& flavor, const std::string& quota,
                         const std::string& extra = "") {
  std::string out =
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
      "metadata: {name: " +
      name + "}\nspec:\n";
  if (!cohort.empty()) out += "  cohort: " + cohort + "\n";
  out += "  namespaceSelector: {}\n" + extra +
         "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    "
         "flavors:\n"
         "    - name: " +
         flavor + "\n      resources: [{name: nvidia.com/gpu, " + quota +
         "}]\n---\n";
  const std::string suffix = "-cq";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    out += LocalQueue(name.substr(0, name.size() - suffix.size()), "q", name);
  }
  return out;
}

// A WorkloadPriorityClass.
inline std::string PriorityClass(const std::string& name, int32_t value) {
  return "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\n"
         "metadata: {name: " +
         name + "}\nvalue: " + std::to_string(value) + "\n---\n";
}

// A fluent builder for an allot.dev/v1 Workload document:
//   Wl("team-a/train").Queue("q").Priority(100).Created(3).Gpus(8).Count(2)
// The first pod set ("main") exists from the start; PodSet() starts another,
// and Count/MinCount/Gpus/Request apply to the last one.
class Wl {
 public:
  explicit Wl(const std::string& key) {
    size_t slash = key.find('/');
    ns_ = key.substr(0, slash);
    name_ = key.substr(slash + 1);
    pod_sets_.push_back(PodSetSpec{"main", 1, std::nullopt, {}, {}, {}});
  }
  Wl& Queue(const std::string& q) {
    queue_ = q;
    return *this;
  }
  Wl& Priority(int32_t p) {
    priority_ = p;
    return *this;
  }
  Wl& PriorityClass(const std::string& c) {
    priority_class_ = c;
    return *this;
  }
  // allot.dev/preemptible: "true": it may run on parked capacity.
  Wl& Preemptible() {
    preemptible_ = true;
    return *this;
  }
  // Creation time: 2026-01-01T00:00:00Z plus `minutes`.
  Wl& Created(int minutes) {
    created_min_ = minutes;
    return *this;
  }
  Wl& PodSet(const std::string& name) {
    pod_sets_.push_back(PodSetSpec{name, 1, std::nullopt, {}, {}, {}});
    return *this;
  }
  Wl& Count(int32_t n) {
    pod_sets_.back().count = n;
    return *this;
  }
  Wl& MinCount(int32_t n) {
    pod_sets_.back().min_count = n;
    return *this;
  }
  // Per-pod nvidia.com/gpu.
  Wl& Gpus(int32_t n) { return Request("nvidia.com/gpu", std::to_string(n)); }
  Wl& Request(const std::string& resource, const std::string& quantity) {
    pod_sets_.back().requests[resource] = quantity;
    return *this;
  }
  // A node selector on the last pod set's pod template.
  Wl& NodeSelector(const std::string& key, const std::string& value) {
    pod_sets_.back().node_selector[key] = value;
    return *this;
  }
  // Already admitted in `cq`, every requested resource of every pod set on
  // `flavor`, whole pod sets, placed by the scheduler at Create.
  Wl& Admitted(const std::string& cq, const std::string& flavor) {
    admitted_cq_ = cq;
    admitted_flavor_ = flavor;
    return *this;
  }

  // With Admitted: the next pod of the last pod set runs on `node` with
  // these GPU UUIDs. Give one per admitted pod, or none (the scheduler
  // then places the pods at Create).
  Wl& Placement(const std::string& node, const std::vector<std::string>& gpus) {
    pod_sets_.back().placements.emplace_back(node, gpus);
    return *this;
  }

  std::string Yaml() const {
    std::string out = "apiVersion: allot.dev/v1\nkind: Workload\n";
    char ts[64];
    std::snprintf(ts, sizeof(ts), "2026-01-%02dT%02d:%02d:00Z",
                  1 + created_min_ / 1440, (created_min_ / 60) % 24,
                  created_min_ % 60);
    out += "metadata: {name: " + name_ + ", namespace: " + ns_ +
           ", creationTimestamp: \"" + ts + "\"" +
           (preemptible_ ? ", annotations: {allot.dev/preemptible: \"true\"}" : "") + "}\n";
    out += "spec:\n  queueName: " + queue_ + "\n";
    if (!priority_class_.empty()) {
      out += "  priorityClassName: " + priority_class_ + "\n";
    } else {
      out += "  priority: " + std::to_string(priority_) + "\n";
    }
    out += "  podSets:\n";
    for (const PodSetSpec& ps : pod_sets_) {
      out += "  - name: " + ps.name +
             "\n    count: " + std::to_string(ps.count) + "\n";
      if (ps.min_count)
        out += "    minCount: " + std::to_string(*ps.min_count) + "\n";
      out += "    template:\n      resources: {requests: {";
      bool first = true;
      for (const auto& [r, q] : ps.requests) {
        out += std::string(first ? "" : ", ") + r + ": \"" + q + "\"";
        first = false;
      }
      out += "}}\n";
      if (!ps.node_selector.empty()) {
        out += "      nodeSelector: {";
        bool first_label = true;
        for (const auto& [k, v] : ps.node_selector) {
          out += std::string(first_label ? "" : ", ") + k + ": " + v;
          first_label = false;
        }
        out += "}\n";
      }
    }
    if (!admitted_cq_.empty()) {
      out += "status:\n  admission:\n    clusterQueue: " + admitted_cq_ +
             "\n    podSetAssignments:\n";
      for (const PodSetSpec& ps : pod_sets_) {
        out += "    - name: " + ps.name +
               "\n      count: " + std::to_string(ps.count) +
               "\n      flavors: {";
        bool first = true;
        for (const auto& [r, q] : ps.requests) {
          out += std::string(first ? "" : ", ") + r + ": " + admitted_flavor_;
          first = false;
        }
        out += "}\n";
        if (!ps.placements.empty()) out += "      placements:\n";
        for (const auto& [node, gpus] : ps.placements) {
          out += "      - {node: " + node + ", gpus: [";
          for (size_t i = 0; i < gpus.size(); ++i)
            out += (i ? ", " : "") + gpus[i];
          out += "]}\n";
        }
      }
    }
    return out + "---\n";
  }
  operator std::string() const {
    return Yaml();
  }  // NOLINT: reads naturally in YAML sums.

 private:
  struct PodSetSpec {
    std::string name;
    int32_t count = 1;
    std::optional<int32_t> min_count;
    std::map<std::string, std::string> requests;
    std::vector<std::pair<std::string, std::vector<std::string>>> placements;
    std::map<std::string, std::string> node_selector;
  };
  std::string ns_, name_;
  std::string queue_ = "q";
  int32_t priority_ = 0;
  bool preemptible_ = false;
  std::string priority_class_;
  int created_min_ = 0;
  std::vector<PodSetSpec> pod_sets_;
  std::string admitted_cq_, admitted_flavor_;
};

inline std::string operator+(const std::string& a, const Wl& w) {
  return a + w.Yaml();
}

// A Workload as a client submits it to the API: one line of JSON (so also
// a YAML document), with no creation time and no priority unless Spec()
// gives one, and one pod set (the server names it "main") of Count() pods
// requesting Gpus() nvidia.com/gpu each:
//   WorkloadJson("t1/a").Gpus(2)               a POST /api/v1/workloads body
//   WorkloadJson("t1/w").Doc()                 a document of an apply
//   WorkloadJson("t1/v").Spec(R"("priorityClassName":"pc1",)")
class WorkloadJson {
 public:
  explicit WorkloadJson(const std::string& key) {
    size_t slash = key.find('/');
    ns_ = key.substr(0, slash);
    name_ = key.substr(slash + 1);
  }
  // The LocalQueue (default "q").
  WorkloadJson& Queue(const std::string& q) {
    queue_ = q;
    return *this;
  }
  // Per-pod nvidia.com/gpu (default 1).
  WorkloadJson& Gpus(int n) {
    gpus_ = n;
    return *this;
  }
  // Pods in the pod set (default 1).
  WorkloadJson& Count(int n) {
    count_ = n;
    return *this;
  }
  // The pods' command (default none).
  WorkloadJson& Command(const std::vector<std::string>& argv) {
    command_ = argv;
    return *this;
  }
  // More spec members as raw JSON, each followed by a comma; they come
  // after queueName.
  WorkloadJson& Spec(const std::string& members) {
    spec_ += members;
    return *this;
  }

  std::string Json() const {
    std::string out = R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":")" +
                      name_ + R"(","namespace":")" + ns_ + R"("},"spec":{"queueName":")" +
                      queue_ + R"(",)" + spec_ + R"("podSets":[{"count":)" +
                      std::to_string(count_) +
                      R"(,"template":{"resources":{"requests":{"nvidia.com/gpu":)" +
                      std::to_string(gpus_) + "}}";
    if (!command_.empty()) {
      out += R"(,"command":[)";
      for (size_t i = 0; i < command_.size(); ++i) {
        out += (i ? ",\"" : "\"") + command_[i] + "\"";
      }
      out += "]";
    }
    return out + "}}]}}";
  }
  // Json() as a document of a YAML stream, followed by "---\n".
  std::string Doc() const { return Json() + "\n---\n"; }
  operator std::string() const { return Json(); }  // NOLINT: a request body.

 private:
  std::string ns_, name_;
  std::string queue_ = "q";
  int gpus_ = 1;
  int count_ = 1;
  std::vector<std::string> command_;
  std::string spec_;
};

}  // namespace allot::testing
