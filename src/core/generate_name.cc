#include "core/generate_name.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/names.h"

namespace allot::core {
namespace {

// Kubernetes' alphabet for generated names (lower-case consonants and the
// digits that do not read as letters).
constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
constexpr size_t kMaxNameLength = 63;

template <typename T>
std::string KeyOf(const T& x, const std::string& name) {
  if constexpr (requires { x.ns; }) {
    return x.ns + "/" + name;
  } else {
    return name;
  }
}

template <typename T>
Status NameAll(std::string_view kind, std::vector<T>* items,
               const NameTaken& taken,
               const std::function<uint64_t()>& random) {
  std::set<std::string> in_config;
  for (const T& x : *items) {
    if (!x.name.empty()) in_config.insert(KeyOf(x, x.name));
  }
  for (T& x : *items) {
    if (!x.name.empty() || x.generate_name.empty()) continue;
    for (int i = 0; i < kMaxNameTries && x.name.empty(); ++i) {
      std::string name = GenerateName(x.generate_name, random);
      std::string key = KeyOf(x, name);
      if (in_config.count(key) || (taken && taken(kind, key))) continue;
      in_config.insert(key);
      x.name = std::move(name);
      if constexpr (std::is_same_v<T, Namespace>) {
        // As Kubernetes sets it (and the parser does for a given name).
        if (LabelValueError(x.name).empty()) x.labels[kNamespaceNameLabel] = x.name;
      }
    }
    if (x.name.empty()) {
      return Status::AlreadyExists(
          x.source.Describe(KeyOf(x, x.generate_name + "*")) +
              ": metadata.generateName: " + std::to_string(kMaxNameTries) +
              " generated names were all taken; try again",
          "metadata.generateName");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string GenerateName(std::string_view prefix,
                         const std::function<uint64_t()>& random) {
  std::string name(prefix.substr(
      0, std::min(prefix.size(), kMaxNameLength - kGeneratedSuffixLength)));
  for (int i = 0; i < kGeneratedSuffixLength; ++i) {
    name += kAlphabet[random() % kAlphabet.size()];
  }
  return name;
}

Status GenerateNames(Config* c, const NameTaken& taken,
                     const std::function<uint64_t()>& random) {
  ALLOT_RETURN_IF_ERROR(NameAll("ResourceFlavor", &c->flavors, taken, random));
  ALLOT_RETURN_IF_ERROR(NameAll("Cohort", &c->cohorts, taken, random));
  ALLOT_RETURN_IF_ERROR(
      NameAll("ClusterQueue", &c->cluster_queues, taken, random));
  ALLOT_RETURN_IF_ERROR(NameAll("LocalQueue", &c->local_queues, taken, random));
  ALLOT_RETURN_IF_ERROR(
      NameAll("WorkloadPriorityClass", &c->priority_classes, taken, random));
  ALLOT_RETURN_IF_ERROR(NameAll("Topology", &c->topologies, taken, random));
  ALLOT_RETURN_IF_ERROR(NameAll("Image", &c->images, taken, random));
  ALLOT_RETURN_IF_ERROR(NameAll("Namespace", &c->namespaces, taken, random));
  ALLOT_RETURN_IF_ERROR(NameAll("Node", &c->nodes, taken, random));
  return NameAll("Workload", &c->workloads, taken, random);
}

std::function<uint64_t()> SeededRandom(uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [rng] { return (*rng)(); };
}

}  // namespace allot::core
