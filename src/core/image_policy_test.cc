// The image policy: catalogue names resolved to references, the tenant's
// default image, and its allow list, as a scenario table.
#include "core/image_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace allot::core {
namespace {

const ImageCatalogue kCatalogue = {
    {"pytorch", "nvcr.io/nvidia/pytorch:24.01-py3"},
    {"jupyter", "quay.io/jupyter/scipy-notebook:2024-01"},
    {"tf", "nvcr.io/nvidia/tensorflow:24.01-tf2-py3"},
};

// A workload in tenant t1 with one pod set per image ("" = none).
Workload WithImages(const std::vector<std::string>& images) {
  Workload w;
  w.ns = "t1";
  w.name = "w";
  for (size_t i = 0; i < images.size(); ++i) {
    PodSet& ps = w.pod_sets.emplace_back();
    ps.name = i == 0 ? "main" : "p" + std::to_string(i);
    ps.image = images[i];
  }
  return w;
}

TEST(ImagePolicyTest, Scenarios) {
  struct Case {
    const char* name;
    Labels annotations;
    std::vector<std::string> images;  // Of the pod sets, as submitted.
    std::vector<std::string> want;    // As stored (when accepted).
    StatusCode code = StatusCode::kOk;
    std::string field = "";
    std::string words = "";  // In the message.
  };
  const std::string pt = kCatalogue.at("pytorch"), jp = kCatalogue.at("jupyter");
  const Labels allow = {{kAllowedImagesAnnotation, "pytorch, jupyter"}};
  Labels allow_default = allow;
  allow_default[kDefaultImageAnnotation] = "pytorch";
  const Case cases[] = {
      {"no annotation: a name resolves", {}, {"pytorch"}, {pt}},
      {"no annotation: any image, none kept", {}, {"alpine:3", ""}, {"alpine:3", ""}},
      {"allowed name resolves", allow, {"jupyter"}, {jp}},
      {"allowed reference itself", allow, {pt}, {pt}},
      {"catalogue name not allowed", allow, {"tf"}, {},
       StatusCode::kPermissionDenied, "podSets[main].image", "use one of: jupyter, pytorch"},
      {"image outside the catalogue", allow, {"pytorch", "alpine:3"}, {},
       StatusCode::kPermissionDenied, "podSets[p1].image", "image alpine:3 is not allowed in tenant t1"},
      {"no image and no default under a list", allow, {""}, {},
       StatusCode::kPermissionDenied, "podSets[main].image", "no image (a process on the host)"},
      {"default for a pod set with none", allow_default, {"", "jupyter"}, {pt, jp}},
      {"default alone, no list", {{kDefaultImageAnnotation, "tf"}}, {"", "busybox"},
       {kCatalogue.at("tf"), "busybox"}},
      {"default not in the catalogue", {{kDefaultImageAnnotation, "gone"}}, {""}, {},
       StatusCode::kFailedPrecondition, "podSets[main].image", "allot.dev/default-image"},
      {"star: any image", {{kAllowedImagesAnnotation, "pytorch, *"}}, {"alpine:3", "pytorch"},
       {"alpine:3", pt}},
      {"allowed name missing from the catalogue", {{kAllowedImagesAnnotation, "gone"}},
       {"gone"}, {}, StatusCode::kPermissionDenied, "podSets[main].image",
       "gone (not in the catalogue)"},
      {"empty list: nothing", {{kAllowedImagesAnnotation, ""}}, {"pytorch"}, {},
       StatusCode::kPermissionDenied, "podSets[main].image", "none is"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Result<ImagePolicy> policy = ParseImagePolicy(k.annotations);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    Workload w = WithImages(k.images);
    Status s = ResolveImages(*policy, kCatalogue, &w);
    EXPECT_EQ(s.code(), k.code) << s.ToString();
    if (!s.ok()) {
      EXPECT_EQ(s.field(), k.field);
      EXPECT_NE(s.message().find(k.words), std::string::npos) << s.message();
      continue;
    }
    std::vector<std::string> got;
    for (const PodSet& ps : w.pod_sets) got.push_back(ps.image);
    EXPECT_EQ(got, k.want);
  }
}

TEST(ImagePolicyTest, ParseErrorsNameTheAnnotation) {
  struct Case {
    Labels annotations;
    std::string field;
  };
  const Case cases[] = {
      {{{kAllowedImagesAnnotation, "ok, Not_A_Name"}},
       std::string("metadata.annotations.") + kAllowedImagesAnnotation},
      {{{kDefaultImageAnnotation, ""}}, std::string("metadata.annotations.") + kDefaultImageAnnotation},
      {{{kAllowedImagesAnnotation, "a"}, {kDefaultImageAnnotation, "b"}},
       std::string("metadata.annotations.") + kDefaultImageAnnotation},
  };
  for (const Case& k : cases) {
    Result<ImagePolicy> p = ParseImagePolicy(k.annotations);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().field(), k.field) << p.status().ToString();
  }
  // "*" with a default: any image, and the default still applies.
  Result<ImagePolicy> p =
      ParseImagePolicy({{kAllowedImagesAnnotation, "*"}, {kDefaultImageAnnotation, "x"}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->allowed.has_value());
  EXPECT_EQ(p->default_image, "x");
}

}  // namespace
}  // namespace allot::core
