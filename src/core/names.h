// Kubernetes' syntax for names, label keys and values, and resource names
// (k8s.io/apimachinery/pkg/util/validation), so that what Allot accepts
// Kubernetes would too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace allot::core {

// DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
bool IsDnsLabel(std::string_view s);
// DNS-1123 subdomain: labels joined by '.', at most 253 characters.
bool IsDnsSubdomain(std::string_view s);

// A qualified name, the syntax of label and annotation keys and of resource
// names: an optional DNS-1123 subdomain prefix and '/', then a name of at
// most 63 characters, alphanumeric at both ends with '-', '_' and '.'
// between. "" when `s` is one, else why not.
std::string QualifiedNameError(std::string_view s);

// A label value: empty, or at most 63 characters, alphanumeric at both ends
// with '-', '_' and '.' between. "" when `s` is one, else why not.
std::string LabelValueError(std::string_view s);

// The items of an annotation's comma-separated list ("a, b"), trimmed of
// spaces and tabs; empty items are kept (callers say whether one may be).
std::vector<std::string> SplitCommaList(std::string_view list);

// Node `index` of a NodePool `pool` of `count` nodes: "POOL-I", I
// zero-padded to the width of count-1 (so names sort in pool order), and
// its GPU `g`: "GPU-NODE-G".
std::string PoolNodeName(std::string_view pool, int32_t index, int32_t count);
std::string PoolGpuUuid(std::string_view node, int32_t g);

}  // namespace allot::core
