// A tiny OCI image for the container runtime's tests, built here from
// busybox-static with umoci: no registry, no network.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace allot::testing {

// Why this host cannot run the container tests ("" when it can): root,
// runc, umoci, skopeo, busybox-static and ALLOT_BIN are needed (make deps
// installs the tools; ctest sets ALLOT_BIN).
inline std::string ContainersUnavailable() {
  if (geteuid() != 0) return "containers need root (runc, user namespaces)";
  for (const char* t : {"runc", "umoci", "skopeo"}) {
    const std::string cmd = std::string("command -v ") + t + " > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      return std::string(t) + " is not installed (make deps installs it)";
    }
  }
  if (!std::filesystem::exists("/bin/busybox")) return "/bin/busybox is missing (busybox-static)";
  if (std::getenv("ALLOT_BIN") == nullptr) return "ALLOT_BIN is not set (ctest sets it)";
  return "";
}

// Builds the image oci:DIR/oci:tiny (busybox's sh, sleep, cat, id, echo,
// ls, touch, kill, true; env PATH=/bin and FROM_IMAGE=yes; cmd `echo hello
// from tiny`); whether it worked.
inline bool BuildTinyImage(const std::string& dir) {
  const std::string script =
      "set -e; cd '" + dir + "'; umoci init --layout oci; umoci new --image oci:tiny;"
      " umoci unpack --image oci:tiny b > /dev/null; mkdir -p b/rootfs/bin b/rootfs/tmp;"
      " cp /bin/busybox b/rootfs/bin/;"
      " for c in sh sleep cat id echo ls touch kill true; do ln -sf busybox b/rootfs/bin/$c; done;"
      " umoci repack --image oci:tiny b; rm -rf b;"
      " umoci config --image oci:tiny --config.env PATH=/bin --config.env FROM_IMAGE=yes"
      " --config.cmd /bin/sh --config.cmd -c --config.cmd 'echo hello from tiny'";
  return std::system(script.c_str()) == 0;
}

}  // namespace allot::testing
