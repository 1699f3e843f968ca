// Which priorities a tenant's members may give their workloads: set by a
// cluster-admin as annotations on the tenant (its v1 Namespace) or on one
// of its LocalQueues (the queue's own override the tenant's, key by key):
//
//   allot.dev/priority-classes: "low,normal"  the WorkloadPriorityClasses
//       its members may name (unset: any that exists);
//   allot.dev/default-priority-class: normal   given to a workload that
//       names none and gives no literal priority;
//   allot.dev/allow-literal-priority: "true"  lets members give a literal
//       spec.priority (unset or "false": cluster-admins only).
//
// Cluster-admins are not bound by it (docs/server.md, "Priority policy").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace allot::core {

inline constexpr char kPriorityClassesKey[] = "allot.dev/priority-classes";
inline constexpr char kDefaultPriorityClassKey[] = "allot.dev/default-priority-class";
inline constexpr char kAllowLiteralPriorityKey[] = "allot.dev/allow-literal-priority";

struct PriorityPolicy {
  std::optional<std::vector<std::string>> classes;  // Sorted, unique.
  std::optional<std::string> default_class;
  std::optional<bool> literal;
  // Where each came from ("LocalQueue t1/q", "Tenant t1"), for messages.
  std::string classes_from, default_from, literal_from;
};

// The policy in `annotations` (of `owner`, e.g. "Tenant t1"); an
// annotation with a bad value is an InvalidArgument naming it, with field
// "metadata.annotations.KEY".
Result<PriorityPolicy> ParsePriorityPolicy(const Labels& annotations, const std::string& owner);
// `queue`'s keys override `tenant`'s.
PriorityPolicy MergePriorityPolicy(const PriorityPolicy& queue, const PriorityPolicy& tenant);
// Whether the two maps differ in a policy annotation (only cluster-admins
// may change those on a LocalQueue).
bool PriorityPolicyChanged(const Labels& before, const Labels& after);

}  // namespace allot::core
