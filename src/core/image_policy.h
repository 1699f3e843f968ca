// Which images a tenant's pods run: the admin image catalogue (allot.dev/v1
// Image objects, name -> reference) and two annotations a cluster-admin
// sets on the tenant (its v1 Namespace):
//
//   allot.dev/allowed-images: "pytorch, jupyter"  the catalogue Images its
//       pods may use; "*" (alone or in the list): any image, catalogue or
//       not; unset: any image (so Kueue's examples keep working);
//   allot.dev/default-image: pytorch  the Image given to a pod set that
//       names none (which would otherwise run as a process on the host).
//
// A pod set whose image is a catalogue name runs that Image's reference:
// `allot submit --image pytorch` stores nvcr.io/nvidia/pytorch:24.01-py3.
// Pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace allot::core {

inline constexpr char kAllowedImagesAnnotation[] = "allot.dev/allowed-images";
inline constexpr char kDefaultImageAnnotation[] = "allot.dev/default-image";

// The catalogue: Image name -> image reference.
using ImageCatalogue = std::map<std::string, std::string>;

struct ImagePolicy {
  // Catalogue names (sorted, unique); unset: any image ("*" or no
  // annotation).
  std::optional<std::vector<std::string>> allowed;
  std::string default_image;  // A catalogue name; empty: none.
};

// The policy in a tenant's annotations. A malformed one is an
// InvalidArgument with field "metadata.annotations.KEY": a name that is no
// DNS-1123 subdomain, or a default-image that allowed-images does not list.
Result<ImagePolicy> ParseImagePolicy(const Labels& annotations);

// Rewrites `w`'s pod sets: no image -> the default Image's reference (if
// the policy has one); a catalogue name -> its reference. Then, under an
// allow list, every pod set must run the reference of an allowed Image:
// PermissionDenied listing the allowed names otherwise. A default-image
// that is not in the catalogue is a FailedPrecondition naming the
// annotation. Errors have field "podSets[NAME].image".
Status ResolveImages(const ImagePolicy& policy, const ImageCatalogue& catalogue, Workload* w);

}  // namespace allot::core
