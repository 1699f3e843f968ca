// Which host directories a tenant's pods may mount (hostPath volumes): a
// cluster-admin lists them on the tenant, as the annotation
//   allot.dev/host-paths: "/datasets, /scratch/team-a:rw"
// (absolute paths, comma separated; `:rw` lets pods write, the default is
// read-only). A hostPath volume must name a listed path or one under it.
// Likewise the host's network (a pod set's hostNetwork, for RDMA and
// NCCL across nodes): only for a tenant annotated
//   allot.dev/host-network: "true"
// Pure.
#pragma once

#include <string>

#include "core/model.h"
#include "core/status.h"

namespace allot::core {

inline constexpr char kHostPathsAnnotation[] = "allot.dev/host-paths";

// Whether pods of the tenant with `annotations` may mount `path`: true
// when writable, false when read-only; PermissionDenied naming the allowed
// paths (or saying there are none) otherwise, and InvalidArgument when the
// annotation itself is malformed.
Result<bool> HostPathAccess(const Labels& annotations, const std::string& path);

inline constexpr char kHostNetworkAnnotation[] = "allot.dev/host-network";

// Ok when the tenant with `annotations` may put pods on the host's
// network; PermissionDenied saying how a cluster-admin allows it
// otherwise.
Status HostNetworkAllowed(const Labels& annotations);

}  // namespace allot::core
