// A container pod's volumes, secret files and registry credentials
// (container.h): what the agent writes when it starts the pod, and the
// mounts `allot container-run` makes of them. Internal to src/agent.
//
// Where each volume lives on the node:
//   emptyDir            POD_DIR/volumes/NAME (Memory: a tmpfs of its size
//                       limit), gone with the pod;
//   secret              POD_DIR/volumes/NAME/KEY, one file per key, read-only;
//   persistentVolumeClaim  VOLUME_ROOT/TENANT/CLAIM, kept across pods and
//                       shared by every pod of the tenant that names it;
//   hostPath            the path itself (the server allowed it for the
//                       tenant; read-only unless allowed otherwise).
// Directories a pod writes to are owned by the host ids its user maps to,
// so its user, and no other tenant's, can write them.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <string>

#include "agent/exec.h"
#include "core/status.h"

namespace allot::agent {

// Agent side, in the pod's directory `dir`: the secret files (0400) and the
// registry auth file (0600), and into *pod what container-run needs:
// "volumes" (with each one's host source), "mounts", "authFile" and the
// security context ("runAsUser", "runAsGroup", "runAsNonRoot",
// "readOnlyRoot"). A mount of an undeclared volume, a relative mount path
// or a subPath with ".." is InvalidArgument.
Status WritePodVolumes(const PodSpec& spec, const std::string& dir,
                       const std::string& volume_root, boost::json::object* pod);

// container-run side: creates the volumes' directories (owned by host ids
// host_uid:host_gid), the mount points in `rootfs` (never through a
// symbolic link of the image) and appends the bind and tmpfs mounts to
// *mounts.
Status MountVolumes(const boost::json::object& pod, const std::string& rootfs,
                    int64_t host_uid, int64_t host_gid, boost::json::array* mounts);

}  // namespace allot::agent
