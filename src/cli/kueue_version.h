// The Kueue API version `allot get -o json|yaml` prints (--api-version).
//
// The server answers in core::kDefaultKueueVersion; the client rewrites
// each object of Kueue's group into the version asked for by reading it
// (core::ParseManifests) and writing it again (core/manifest_encode.h), so
// the spellings are the encoder's. What the server adds and the manifests
// do not carry (status, metadata.resourceVersion) is kept as it came.
// Other objects (Workloads, Nodes, Namespaces) pass through unchanged.
#pragma once

#include <boost/json/value.hpp>

#include "core/manifest_encode.h"
#include "core/status.h"

namespace allot::cli {

// One object, a list ({"items": [...]}) or a watch event ({"object": ...}),
// with its Kueue objects in version `v`. An object that does not read back
// is an error naming it.
Result<boost::json::value> InKueueVersion(const boost::json::value& v,
                                          core::KueueVersion version);

}  // namespace allot::cli
