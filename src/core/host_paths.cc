#include "core/host_paths.h"

#include <filesystem>
#include <vector>

namespace allot::core {

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// `path` is `dir` or below it, both normal absolute paths.
bool Under(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

}  // namespace

Result<bool> HostPathAccess(const Labels& annotations, const std::string& path) {
  const std::string normal = std::filesystem::path(path).lexically_normal().string();
  if (path.empty() || path[0] != '/' || normal != path) {
    return Status::InvalidArgument("hostPath " + path + " must be an absolute, normal path");
  }
  auto it = annotations.find(kHostPathsAnnotation);
  if (it == annotations.end() || Trim(it->second).empty()) {
    return Status::PermissionDenied("the tenant may not mount host paths (a cluster-admin "
                                    "lists them in its annotation " +
                                    std::string(kHostPathsAnnotation) + ")");
  }
  std::string list = it->second, allowed;
  bool found = false, writable = false;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string entry = Trim(list.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) continue;
    bool rw = false;
    if (entry.size() > 3 && entry.compare(entry.size() - 3, 3, ":rw") == 0) {
      rw = true;
      entry.resize(entry.size() - 3);
    } else if (entry.size() > 3 && entry.compare(entry.size() - 3, 3, ":ro") == 0) {
      entry.resize(entry.size() - 3);
    }
    if (entry[0] != '/' || std::filesystem::path(entry).lexically_normal().string() != entry) {
      return Status::InvalidArgument("the tenant's annotation " + std::string(kHostPathsAnnotation) +
                                     " lists " + entry + ", which is not an absolute, normal path");
    }
    allowed += (allowed.empty() ? "" : ", ") + entry + (rw ? " (rw)" : "");
    if (Under(path, entry)) {
      found = true;
      writable |= rw;
    }
  }
  if (!found) {
    return Status::PermissionDenied("hostPath " + path + " is not one the tenant may mount: " +
                                    allowed);
  }
  return writable;
}

Status HostNetworkAllowed(const Labels& annotations) {
  auto it = annotations.find(kHostNetworkAnnotation);
  if (it != annotations.end() && it->second == "true") return Status::Ok();
  return Status::PermissionDenied(
      std::string("this tenant's pods may not use the host's network (hostNetwork): a "
                  "cluster-admin allows it with the tenant annotation ") +
          kHostNetworkAnnotation + ": \"true\"",
      "hostNetwork");
}

}  // namespace allot::core
