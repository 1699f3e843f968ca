// The allot.dev/v1 Image kind: parsing, its errors, encoding, and the
// tenant annotations of the image policy checked when a tenant is read.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>

#include "core/manifest.h"
#include "core/manifest_encode.h"

namespace allot::core {
namespace {

TEST(ImageKindTest, ParsesAndRoundTrips) {
  Config c;
  Status s = ParseManifests(R"(
apiVersion: allot.dev/v1
kind: Image
metadata: {name: pytorch}
spec:
  image: nvcr.io/nvidia/pytorch:24.01-py3
  description: "PyTorch 2.2, CUDA 12.3, NCCL"
---
apiVersion: allot.dev/v1
kind: Image
metadata: {name: base}
spec: {image: "ubuntu@sha256:0123abcd"}
)",
                            "images.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(c.images.size(), 2u);
  EXPECT_EQ(c.images[0].name, "pytorch");
  EXPECT_EQ(c.images[0].image, "nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(c.images[0].description, "PyTorch 2.2, CUDA 12.3, NCCL");
  EXPECT_EQ(c.images[1].description, "");
  EXPECT_EQ(c.images[0].source.kind, "Image");
  EXPECT_TRUE(ValidateConfig(&c).ok());

  // What the encoder writes parses back to the same Image.
  for (const Image& img : c.images) {
    boost::json::object o = EncodeImage(img);
    EXPECT_EQ(o.at("apiVersion").as_string(), "allot.dev/v1");
    EXPECT_EQ(o.at("spec").as_object().contains("description"), !img.description.empty());
    Config again;
    ASSERT_TRUE(ParseManifests(boost::json::serialize(o), "encoded", &again).ok());
    ASSERT_EQ(again.images.size(), 1u);
    EXPECT_EQ(again.images[0].name, img.name);
    EXPECT_EQ(again.images[0].image, img.image);
    EXPECT_EQ(again.images[0].description, img.description);
  }
}

TEST(ImageKindTest, ErrorsNameFileDocumentAndField) {
  struct Case {
    const char* name;
    const char* spec;
    const char* field;
    const char* words;
  };
  const std::string long_text(1025, 'x');
  const std::string long_desc = "image: a\n  description: " + long_text;
  const std::string long_ref = "image: " + long_text;
  const Case cases[] = {
      {"image missing", "description: x", "spec.image", "required"},
      {"image empty", "image: \"\"", "spec.image", "must not be empty"},
      {"image with a space", "image: \"nvcr.io/a b:1\"", "spec.image", "space"},
      {"image with a tab", "image: \"a\\tb\"", "spec.image", "space"},
      {"unknown field", "image: a\n  tag: x", "spec.tag", "unknown field"},
      {"description too long", long_desc.c_str(), "spec.description", "at most 1024"},
      {"reference too long", long_ref.c_str(), "spec.image", "at most 1024"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Config c;
    std::string text = std::string("---\n---\napiVersion: allot.dev/v1\nkind: Image\n"
                                   "metadata: {name: img}\nspec:\n  ") +
                       k.spec + "\n";
    Status s = ParseManifests(text, "f.yaml", &c);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.field(), k.field);
    EXPECT_NE(s.message().find("f.yaml: document 1 (Image img)"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find(k.words), std::string::npos) << s.message();
    EXPECT_TRUE(c.images.empty());
  }
  Config c;
  Status s = ParseManifests("apiVersion: allot.dev/v1\nkind: Image\nmetadata: {name: x}\n",
                            "f.yaml", &c);
  EXPECT_EQ(s.field(), "spec") << s.ToString();
}

TEST(ImageKindTest, DuplicateNamesAreRefused) {
  Config c;
  ASSERT_TRUE(ParseManifests(R"(
apiVersion: allot.dev/v1
kind: Image
metadata: {name: a}
spec: {image: x}
---
apiVersion: allot.dev/v1
kind: Image
metadata: {name: a}
spec: {image: y}
)",
                             "f.yaml", &c)
                  .ok());
  Status v = ValidateConfig(&c);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("Image"), std::string::npos) << v.message();
}

TEST(ImageKindTest, TenantImageAnnotationsAreCheckedWhenRead) {
  struct Case {
    const char* annotations;
    const char* field;  // Empty: accepted.
  };
  const Case cases[] = {
      {"{allot.dev/allowed-images: \"pytorch, jupyter\", allot.dev/default-image: pytorch}", ""},
      {"{allot.dev/allowed-images: \"*\"}", ""},
      {"{allot.dev/allowed-images: \"Py Torch\"}", "metadata.annotations.allot.dev/allowed-images"},
      {"{allot.dev/default-image: \"no_such\"}", "metadata.annotations.allot.dev/default-image"},
      {"{allot.dev/allowed-images: jupyter, allot.dev/default-image: pytorch}",
       "metadata.annotations.allot.dev/default-image"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.annotations);
    Config c;
    Status s = ParseManifests(
        std::string("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: t1\n  annotations: ") +
            k.annotations + "\n",
        "t.yaml", &c);
    EXPECT_EQ(s.field(), k.field) << s.ToString();
  }
}

}  // namespace
}  // namespace allot::core
