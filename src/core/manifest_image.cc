// The allot.dev/v1 Image kind: an entry of the admin image catalogue.
//
//   apiVersion: allot.dev/v1
//   kind: Image
//   metadata: {name: pytorch}
//   spec:
//     image: nvcr.io/nvidia/pytorch:24.01-py3   # required: an image reference
//     description: "PyTorch 2.2, CUDA 12.3"       # optional, at most 1024 bytes
//
// A pod set whose image is "pytorch" runs the reference (image_policy.h).
#include <string>

#include "core/manifest_internal.h"

namespace allot::core::internal {

namespace {
constexpr size_t kMaxImageReference = 1024;
constexpr size_t kMaxImageDescription = 1024;

// An image reference as a container runtime takes it: not empty, no
// whitespace or control characters, bounded. (The registry checks the
// rest when it is pulled.)
Status CheckReference(const Val& v, const std::string& ref) {
  if (ref.size() > kMaxImageReference) {
    return v.Error("is " + std::to_string(ref.size()) + " bytes; an image reference has at most " +
                   std::to_string(kMaxImageReference));
  }
  for (unsigned char c : ref) {
    if (c <= ' ' || c == 0x7f) {
      return v.Error("image reference " + Quote(ref) +
                     " has a space or control character; expected e.g. "
                     "nvcr.io/nvidia/pytorch:24.01-py3");
    }
  }
  return Status::Ok();
}
}  // namespace

Status ParseImage(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields));
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.Require());
  ALLOT_RETURN_IF_ERROR(spec.CheckFields({"image", "description"}));
  Image img;
  img.name = d.name;
  img.generate_name = d.generate_name;
  img.source = d.source;
  ALLOT_RETURN_IF_ERROR(spec["image"].GetName(&img.image));
  ALLOT_RETURN_IF_ERROR(CheckReference(spec["image"], img.image));
  ALLOT_RETURN_IF_ERROR(spec["description"].Get(&img.description));
  if (img.description.size() > kMaxImageDescription) {
    return spec["description"].Error("is " + std::to_string(img.description.size()) +
                                      " bytes; at most " +
                                      std::to_string(kMaxImageDescription));
  }
  out->images.push_back(std::move(img));
  return Status::Ok();
}

}  // namespace allot::core::internal
