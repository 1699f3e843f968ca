// Manifest reading, cross-object validation: ValidateConfig.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_internal.h"
#include "core/names.h"

namespace allot::core {
namespace {

using internal::At;
using internal::kPriorityLabel;

// ---- Cross-object validation ----------------------------------------------

template <typename T>
using Index = std::map<std::string, T*>;

// Indexes `items` by `key`; a second object with the same key is an error.
template <typename T, typename KeyFn>
Status IndexUnique(std::vector<T>& items, const std::string& kind, KeyFn key,
                   Index<T>* index) {
  for (T& item : items) {
    std::string k = key(item);
    if (item.name.empty()) {
      return At(item.source, k + item.generate_name + "*",
                Status::InvalidArgument(
                    "the name is not generated yet (a server names objects "
                    "with metadata.generateName when they are applied)",
                    "metadata.generateName"));
    }
    auto [it, inserted] = index->emplace(k, &item);
    if (inserted) continue;
    const SourceRef& first = it->second->source;
    std::string where =
        (first.file == item.source.file ? "" : first.file + " ") + "document " +
        std::to_string(first.doc_index);
    return At(item.source, k,
              Status::InvalidArgument("duplicate " + kind + " name " + k +
                                          " (first in " + where + ")",
                                      "metadata.name"));
  }
  return Status::Ok();
}

std::string Indexed(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

Status CheckFlavorsExist(const std::vector<ResourceGroup>& groups,
                         const Index<ResourceFlavor>& flavors) {
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (size_t fi = 0; fi < groups[gi].flavors.size(); ++fi) {
      const std::string& name = groups[gi].flavors[fi].name;
      if (flavors.count(name) == 0) {
        return Status::InvalidArgument(
            "ResourceFlavor " + name + " does not exist",
            Indexed(Indexed("spec.resourceGroups", gi) + ".flavors", fi) +
                ".name");
      }
    }
  }
  return Status::Ok();
}

// Follows each cohort's parents; reaching the cohort again is a cycle. A
// parent that is not declared is an implicit root.
Status CheckCohortCycles(const std::vector<Cohort>& cohorts,
                         const Index<Cohort>& index) {
  for (const Cohort& c : cohorts) {
    std::string chain = c.name;
    std::string cur = c.parent;
    for (size_t steps = 0; !cur.empty() && steps <= cohorts.size(); ++steps) {
      chain += " -> " + cur;
      if (cur == c.name) {
        return At(c.source, c.name,
                  Status::InvalidArgument("cohort cycle: " + chain,
                                          "spec.parentName"));
      }
      auto it = index.find(cur);
      if (it == index.end()) break;
      cur = it->second->parent;
    }
  }
  return Status::Ok();
}

// No GPU or MIG slice is declared by two nodes (or twice by one).
Status CheckGpuInventory(const std::vector<Node>& nodes) {
  std::map<std::string, std::string> owner;
  for (const Node& n : nodes) {
    auto claim = [&](const std::string& uuid, const std::string& field) {
      auto [it, inserted] = owner.emplace(uuid, n.name);
      if (inserted) return Status::Ok();
      return At(n.source, n.name,
                Status::InvalidArgument("GPU " + uuid +
                                            " is declared twice (first on "
                                            "node " +
                                            it->second + ")",
                                        field));
    };
    for (size_t gi = 0; gi < n.gpus.size(); ++gi) {
      const std::string gpu = Indexed("status.gpus", gi);
      ALLOT_RETURN_IF_ERROR(claim(n.gpus[gi].uuid, gpu + ".uuid"));
      for (size_t mi = 0; mi < n.gpus[gi].mig.size(); ++mi) {
        ALLOT_RETURN_IF_ERROR(claim(n.gpus[gi].mig[mi].uuid,
                                    Indexed(gpu + ".mig", mi) + ".uuid"));
      }
    }
  }
  return Status::Ok();
}

struct Indexes {
  Index<ResourceFlavor> flavors;
  Index<Topology> topologies;
  Index<Image> images;
  Index<Cohort> cohorts;
  Index<ClusterQueue> cluster_queues;
  Index<LocalQueue> local_queues;
  Index<WorkloadPriorityClass> priority_classes;
  Index<Namespace> namespaces;
  Index<Node> nodes;
  Index<Workload> workloads;
  // GPU UUID -> the pod that a placement gives it to.
  std::map<std::string, std::string> placed_gpus;
};

const ResourceGroup* GroupCovering(const ClusterQueue& cq,
                                   const std::string& resource) {
  for (const ResourceGroup& g : cq.resource_groups) {
    for (const std::string& r : g.covered_resources) {
      if (r == resource) return &g;
    }
  }
  return nullptr;
}

// One pod set assignment of an admitted workload (field paths relative to
// the assignment).
Status CheckAssignment(const Workload& w, const PodSet& ps,
                       const PodSetAssignment& psa, const ClusterQueue& cq,
                       Indexes* idx) {
  for (const auto& [resource, flavor] : psa.flavors) {
    const std::string field = "flavors[" + resource + "]";
    const ResourceGroup* g = GroupCovering(cq, resource);
    if (g == nullptr) {
      return Status::InvalidArgument(
          "resource " + resource + " is not covered by ClusterQueue " + cq.name,
          field);
    }
    bool listed = false;
    for (const FlavorQuotas& f : g->flavors) listed |= f.name == flavor;
    if (!listed) {
      return Status::InvalidArgument(
          "flavor " + flavor + " is not listed in ClusterQueue " + cq.name +
              "'s resource group for " + resource,
          field);
    }
  }
  for (const auto& [resource, q] : ps.requests) {
    if (GroupCovering(cq, resource) != nullptr &&
        !psa.flavors.count(resource)) {
      return Status::InvalidArgument(
          "no flavor for requested resource " + resource, "flavors");
    }
  }
  const int32_t lo = ps.min_count.value_or(ps.count);
  if (psa.count < lo || psa.count > ps.count) {
    return Status::InvalidArgument(
        "count " + std::to_string(psa.count) + " is outside [" +
            std::to_string(lo) + ", " + std::to_string(ps.count) +
            "] (pod set " + ps.name + "'s minCount or count, and count)",
        "count");
  }
  if (!psa.placements.empty() &&
      psa.placements.size() != static_cast<size_t>(psa.count)) {
    return Status::InvalidArgument(
        std::to_string(psa.placements.size()) + " placements for " +
            std::to_string(psa.count) + " admitted pods (give one per pod)",
        "placements");
  }
  for (size_t pi = 0; pi < psa.placements.size(); ++pi) {
    const PodPlacement& p = psa.placements[pi];
    const std::string field = Indexed("placements", pi);
    if (idx->nodes.count(p.node) == 0) {
      return Status::InvalidArgument("node " + p.node + " does not exist",
                                     field + ".node");
    }
    const std::string pod =
        w.Key() + " pod set " + ps.name + " pod " + std::to_string(pi);
    for (size_t gi = 0; gi < p.gpus.size(); ++gi) {
      auto [it, inserted] = idx->placed_gpus.emplace(p.gpus[gi], pod);
      if (!inserted) {
        return Status::InvalidArgument("GPU " + p.gpus[gi] +
                                           " is assigned twice (first to " +
                                           it->second + ")",
                                       Indexed(field + ".gpus", gi));
      }
    }
  }
  return Status::Ok();
}

Status CheckAdmission(const Workload& w, Indexes* idx) {
  const Admission& a = *w.admission;
  auto cq = idx->cluster_queues.find(a.cluster_queue);
  if (cq == idx->cluster_queues.end()) {
    return Status::InvalidArgument(
        "ClusterQueue " + a.cluster_queue + " does not exist",
        "status.admission.clusterQueue");
  }
  std::set<std::string> assigned;
  for (size_t i = 0; i < a.pod_set_assignments.size(); ++i) {
    const PodSetAssignment& psa = a.pod_set_assignments[i];
    const std::string field = Indexed("status.admission.podSetAssignments", i);
    const PodSet* ps = nullptr;
    for (const PodSet& p : w.pod_sets) {
      if (p.name == psa.name) ps = &p;
    }
    if (ps == nullptr) {
      return Status::InvalidArgument(
          "no pod set named " + psa.name + " in spec.podSets", field + ".name");
    }
    if (!assigned.insert(psa.name).second) {
      return Status::InvalidArgument(
          "pod set " + psa.name + " is assigned twice", field + ".name");
    }
    Status s = CheckAssignment(w, *ps, psa, *cq->second, idx);
    if (!s.ok()) return s.WithFieldPrefix(field);
  }
  for (const PodSet& ps : w.pod_sets) {
    if (!assigned.count(ps.name)) {
      return Status::InvalidArgument(
          "pod set " + ps.name + " has no assignment",
          "status.admission.podSetAssignments");
    }
  }
  return Status::Ok();
}

// Resolves the priority class and checks the admission (relative fields).
Status CheckWorkload(Workload* w, Indexes* idx) {
  const bool job = w->source.kind == "Job";
  if (!w->priority_class_name.empty()) {
    auto pc = idx->priority_classes.find(w->priority_class_name);
    if (pc == idx->priority_classes.end()) {
      return Status::InvalidArgument(
          "WorkloadPriorityClass " + w->priority_class_name + " does not exist",
          job ? "metadata.labels[" + std::string(kPriorityLabel) + "]"
              : "spec.priorityClassName");
    }
    w->priority = pc->second->value;
  }
  return w->admission ? CheckAdmission(*w, idx) : Status::Ok();
}

std::string NsName(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

}  // namespace

Status ValidateConfig(Config* config) {
  Indexes idx;
  auto name = [](const auto& x) { return x.name; };
  ALLOT_RETURN_IF_ERROR(
      IndexUnique(config->flavors, "ResourceFlavor", name, &idx.flavors));
  ALLOT_RETURN_IF_ERROR(
      IndexUnique(config->topologies, "Topology", name, &idx.topologies));
  ALLOT_RETURN_IF_ERROR(IndexUnique(config->images, "Image", name, &idx.images));
  // Kueue leaves a ClusterQueue with such a flavor inactive
  // (TopologyNotFound); here it is an error that changes nothing.
  for (const ResourceFlavor& f : config->flavors) {
    if (!f.topology_name.empty() && idx.topologies.count(f.topology_name) == 0) {
      return At(f.source, f.name,
                Status::InvalidArgument("Topology " + f.topology_name +
                                            " does not exist",
                                        "spec.topologyName"));
    }
  }
  ALLOT_RETURN_IF_ERROR(
      IndexUnique(config->cohorts, "Cohort", name, &idx.cohorts));
  ALLOT_RETURN_IF_ERROR(IndexUnique(config->cluster_queues, "ClusterQueue",
                                    name, &idx.cluster_queues));
  ALLOT_RETURN_IF_ERROR(IndexUnique(
      config->local_queues, "LocalQueue",
      [](const LocalQueue& q) { return NsName(q.ns, q.name); },
      &idx.local_queues));
  ALLOT_RETURN_IF_ERROR(IndexUnique(config->priority_classes,
                                    "WorkloadPriorityClass", name,
                                    &idx.priority_classes));
  ALLOT_RETURN_IF_ERROR(
      IndexUnique(config->namespaces, "Namespace", name, &idx.namespaces));
  ALLOT_RETURN_IF_ERROR(IndexUnique(config->nodes, "Node", name, &idx.nodes));
  {
    std::map<std::string, const NodePool*> pools;
    for (const NodePool& p : config->node_pools) {
      auto [it, inserted] = pools.emplace(p.name, &p);
      if (!inserted) {
        return At(p.source, p.name,
                  Status::InvalidArgument("duplicate autoscaled NodePool name " +
                                              p.name,
                                          "metadata.name"));
      }
    }
  }
  ALLOT_RETURN_IF_ERROR(IndexUnique(
      config->workloads, "Workload", [](const Workload& w) { return w.Key(); },
      &idx.workloads));

  for (const ClusterQueue& cq : config->cluster_queues) {
    Status s = CheckFlavorsExist(cq.resource_groups, idx.flavors);
    if (!s.ok()) return At(cq.source, cq.name, s);
  }
  for (const Cohort& c : config->cohorts) {
    Status s = CheckFlavorsExist(c.resource_groups, idx.flavors);
    if (!s.ok()) return At(c.source, c.name, s);
  }
  ALLOT_RETURN_IF_ERROR(CheckCohortCycles(config->cohorts, idx.cohorts));
  for (const LocalQueue& q : config->local_queues) {
    if (idx.cluster_queues.count(q.cluster_queue) == 0) {
      return At(q.source, NsName(q.ns, q.name),
                Status::InvalidArgument(
                    "ClusterQueue " + q.cluster_queue + " does not exist",
                    "spec.clusterQueue"));
    }
  }
  ALLOT_RETURN_IF_ERROR(CheckGpuInventory(config->nodes));
  for (Workload& w : config->workloads) {
    Status s = CheckWorkload(&w, &idx);
    if (!s.ok()) return At(w.source, w.Key(), s);
  }
  // Namespaces used but not declared exist, with the label Kubernetes
  // gives every namespace (so that namespaceSelectors on it work).
  std::set<std::string> implicit;
  for (const LocalQueue& q : config->local_queues) implicit.insert(q.ns);
  for (const Workload& w : config->workloads) implicit.insert(w.ns);
  for (const std::string& ns : implicit) {
    if (idx.namespaces.count(ns)) continue;
    Namespace& added = config->namespaces.emplace_back();
    added.name = ns;
    if (LabelValueError(ns).empty()) added.labels[kNamespaceNameLabel] = ns;
  }
  return Status::Ok();
}

}  // namespace allot::core
