#include "core/image_policy.h"

#include <algorithm>

#include "core/names.h"

namespace allot::core {

namespace {

std::string Field(const char* key) { return std::string("metadata.annotations.") + key; }

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The names of a comma-separated list, trimmed, empty entries dropped.
std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out = SplitCommaList(list);
  std::erase(out, std::string());
  return out;
}

// "pytorch, jupyter (not in the catalogue)": the allowed names, for messages.
std::string AllowedList(const std::vector<std::string>& allowed, const ImageCatalogue& catalogue) {
  if (allowed.empty()) return "none is (" + std::string(kAllowedImagesAnnotation) + " is empty)";
  std::string out;
  for (const std::string& n : allowed) {
    out += (out.empty() ? "" : ", ") + n + (catalogue.count(n) ? "" : " (not in the catalogue)");
  }
  return "use one of: " + out;
}

}  // namespace

Result<ImagePolicy> ParseImagePolicy(const Labels& annotations) {
  ImagePolicy p;
  if (auto it = annotations.find(kAllowedImagesAnnotation); it != annotations.end()) {
    std::vector<std::string> names = SplitList(it->second);
    bool any = false;
    for (const std::string& n : names) {
      if (n == "*") {
        any = true;
      } else if (!IsDnsSubdomain(n)) {
        return Status::InvalidArgument(
            "'" + n + "' is not an Image name (a comma-separated list of catalogue names, "
                "e.g. \"pytorch, jupyter\", or \"*\" for any image)",
            Field(kAllowedImagesAnnotation));
      }
    }
    if (!any) {
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      p.allowed = std::move(names);
    }
  }
  if (auto it = annotations.find(kDefaultImageAnnotation); it != annotations.end()) {
    const std::string name = Trim(it->second);
    if (!IsDnsSubdomain(name)) {
      return Status::InvalidArgument("'" + it->second + "' is not an Image name",
                                     Field(kDefaultImageAnnotation));
    }
    if (p.allowed && !std::binary_search(p.allowed->begin(), p.allowed->end(), name)) {
      return Status::InvalidArgument(
          "names Image " + name + ", which " + kAllowedImagesAnnotation +
              " does not list: the tenant's pods could not use it",
          Field(kDefaultImageAnnotation));
    }
    p.default_image = name;
  }
  return p;
}

Status ResolveImages(const ImagePolicy& policy, const ImageCatalogue& catalogue, Workload* w) {
  for (PodSet& ps : w->pod_sets) {
    const std::string field = "podSets[" + ps.name + "].image";
    if (ps.image.empty() && !policy.default_image.empty()) {
      auto it = catalogue.find(policy.default_image);
      if (it == catalogue.end()) {
        return Status::FailedPrecondition(
            "the pod set names no image and the tenant's default (annotation " +
                std::string(kDefaultImageAnnotation) + ") is Image " + policy.default_image +
                ", which is not in the catalogue (allot get images): give the pod set an "
                "image, or ask a cluster-admin to fix the annotation",
            field);
      }
      ps.image = it->second;
    } else if (auto it = catalogue.find(ps.image); it != catalogue.end()) {
      ps.image = it->second;
    }
    if (!policy.allowed) continue;
    const bool allowed = std::any_of(
        policy.allowed->begin(), policy.allowed->end(), [&](const std::string& n) {
          auto it = catalogue.find(n);
          return it != catalogue.end() && it->second == ps.image;
        });
    if (!allowed) {
      const std::string what =
          ps.image.empty() ? "a pod set with no image (a process on the host)"
                           : "image " + ps.image;
      return Status::PermissionDenied(what + " is not allowed in tenant " + w->ns +
                                          " (annotation " + kAllowedImagesAnnotation +
                                          "): " + AllowedList(*policy.allowed, catalogue),
                                      field);
    }
  }
  return Status::Ok();
}

}  // namespace allot::core
