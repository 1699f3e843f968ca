#include "core/priority_policy.h"

#include <algorithm>

#include "core/names.h"

namespace allot::core {

Result<PriorityPolicy> ParsePriorityPolicy(const Labels& annotations, const std::string& owner) {
  PriorityPolicy p;
  auto field = [](const char* key) { return std::string("metadata.annotations.") + key; };
  if (auto it = annotations.find(kPriorityClassesKey); it != annotations.end()) {
    std::vector<std::string> names;
    for (std::string& name : SplitCommaList(it->second)) {
      if (name.empty()) continue;
      if (!IsDnsSubdomain(name)) {
        return Status::InvalidArgument(
            "'" + name + "' is not a WorkloadPriorityClass name (a comma-separated list of "
                "DNS-1123 subdomains, e.g. \"low,normal\")",
            field(kPriorityClassesKey));
      }
      names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    p.classes = std::move(names);
    p.classes_from = owner;
  }
  if (auto it = annotations.find(kDefaultPriorityClassKey); it != annotations.end()) {
    if (!IsDnsSubdomain(it->second)) {
      return Status::InvalidArgument("'" + it->second + "' is not a WorkloadPriorityClass name",
                                     field(kDefaultPriorityClassKey));
    }
    p.default_class = it->second;
    p.default_from = owner;
  }
  if (auto it = annotations.find(kAllowLiteralPriorityKey); it != annotations.end()) {
    if (it->second != "true" && it->second != "false") {
      return Status::InvalidArgument("must be \"true\" or \"false\", not '" + it->second + "'",
                                     field(kAllowLiteralPriorityKey));
    }
    p.literal = it->second == "true";
    p.literal_from = owner;
  }
  return p;
}

PriorityPolicy MergePriorityPolicy(const PriorityPolicy& queue, const PriorityPolicy& tenant) {
  PriorityPolicy p = tenant;
  if (queue.classes) {
    p.classes = queue.classes;
    p.classes_from = queue.classes_from;
  }
  if (queue.default_class) {
    p.default_class = queue.default_class;
    p.default_from = queue.default_from;
  }
  if (queue.literal) {
    p.literal = queue.literal;
    p.literal_from = queue.literal_from;
  }
  return p;
}

bool PriorityPolicyChanged(const Labels& before, const Labels& after) {
  for (const char* key : {kPriorityClassesKey, kDefaultPriorityClassKey, kAllowLiteralPriorityKey}) {
    auto a = before.find(key);
    auto b = after.find(key);
    if ((a == before.end()) != (b == after.end())) return true;
    if (a != before.end() && a->second != b->second) return true;
  }
  return false;
}

}  // namespace allot::core
