// Writing the model back as manifests: core objects -> Boost.JSON documents.
//
// The inverse of ParseManifests (core/manifest.h). Each Encode function
// returns one manifest document (apiVersion, kind, metadata, spec, ...) as a
// JSON object. yaml-cpp reads JSON, so ParseManifests reads the serialized
// object back (boost::json::serialize; several documents joined by "---"
// lines) and the HTTP API can store and return objects in this form.
//
// Guarantee (the round trip): for every object x that ParseManifests can
// produce, ParseManifests(serialize(EncodeX(x))) yields an object equal to x
// (operator== of core/model.h, which ignores `source`), and after
// ValidateConfig on both sides, so does every Workload. Exceptions, all of
// them values ParseManifests never produces:
//  - a Workload that names a priority class is encoded with the class only
//    (spec.priority and spec.priorityClassName are exclusive); ValidateConfig
//    sets Workload::priority from the class again;
//  - zero pod requests, which the parser drops, come back dropped;
//  - an empty SchedulerConfig::preemption_strategies reads back as the
//    default list;
//  - creation times outside years 0000..9999 cannot be written in RFC 3339.
//
// Shape: kinds and field spellings are the ones docs/manifests.md
// documents: Kueue's kinds in the KueueVersion asked for (v1beta2 unless
// told otherwise: Kueue's storage version), v1 Namespace, and
// allot.dev/v1 Node, Workload (every workload kind, Kueue Workload and Job
// included, becomes an allot.dev/v1 Workload with a compact template) and
// SchedulerConfig. Every kind writes metadata.generateName when the
// object has one (and metadata.name once it is named). A field equal to
// the parser's default is left out
// (empty labels, BestEffortFIFO, Never, ...), except pod set name and count,
// which are always written. Quantities are strings in canonical Kubernetes
// form ("500m", "64Gi", "8"), prices decimal strings ("2.5"): never JSON
// floating point. Keys keep a fixed, readable order.
//
// Performance: objects are built directly, without text in between; the
// cost is a few small allocations per field.
//
// Thread-safety: pure functions; safe to call from any thread.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>

#include "core/model.h"
#include "core/status.h"

namespace allot::core {

// The Kueue API version the Kueue kinds are written in. The two differ in
// spellings only (docs/manifests.md): ClusterQueue spec.cohort (v1beta1)
// is spec.cohortName (v1beta2); every other field is written alike.
enum class KueueVersion { kV1beta1, kV1beta2 };
// What the server stores and returns, and `allot get` prints by default.
inline constexpr KueueVersion kDefaultKueueVersion = KueueVersion::kV1beta2;
// "kueue.x-k8s.io/v1beta2" for kV1beta2.
const char* KueueApiVersionOf(KueueVersion v);
// The version named by "kueue.x-k8s.io/v1beta2" or "v1beta2" (and the same
// for v1beta1); anything else is InvalidArgument naming both.
Result<KueueVersion> ParseKueueVersion(const std::string& text);

// ResourceFlavor; spec.price with up to 6 decimals.
boost::json::object EncodeFlavor(const ResourceFlavor& flavor,
                                 KueueVersion v = kDefaultKueueVersion);
// Topology: spec.levels[].nodeLabel.
boost::json::object EncodeTopology(const Topology& topology,
                                   KueueVersion v = kDefaultKueueVersion);
// allot.dev/v1 Image: spec.image and spec.description.
boost::json::object EncodeImage(const Image& image);
// Cohort, with spec.parentName (as Kueue's v1beta1 and v1beta2 spell it;
// v1alpha1's parent is read but never written).
boost::json::object EncodeCohort(const Cohort& cohort,
                                 KueueVersion v = kDefaultKueueVersion);
// ClusterQueue, with spec.cohort (v1beta1) or spec.cohortName (v1beta2).
// An unset namespaceSelector is left out (matches no namespace); a set but
// empty one is written as {} (matches every namespace).
boost::json::object EncodeClusterQueue(const ClusterQueue& cq,
                                       KueueVersion v = kDefaultKueueVersion);
boost::json::object EncodeLocalQueue(const LocalQueue& queue,
                                     KueueVersion v = kDefaultKueueVersion);
boost::json::object EncodePriorityClass(const WorkloadPriorityClass& pc,
                                        KueueVersion v = kDefaultKueueVersion);
// v1 Namespace.
boost::json::object EncodeNamespace(const Namespace& ns);
// allot.dev/v1 Node.
boost::json::object EncodeNode(const Node& node);
// allot.dev/v1 NodePool with a provider (autoscaled), every field written.
boost::json::object EncodeNodePool(const NodePool& pool);
// allot.dev/v1 Workload: metadata (labels, annotations, creationTimestamp
// with millisecond precision, left out when 0), spec.type unless "batch",
// spec.priorityClassName when set, else spec.priority unless 0,
// spec.active when false, the pod
// sets with requests, selectors, tolerations, image, command, args, env
// (values and secretKeyRefs), envFrom, workingDir, imagePullSecrets,
// volumes, volumeMounts and securityContext (in Kubernetes' shapes), and
// status.admission when set (every count written).
boost::json::object EncodeWorkload(const Workload& workload);
// allot.dev/v1 SchedulerConfig, as spec.fairSharing.
boost::json::object EncodeSchedulerConfig(const SchedulerConfig& config);

// RFC 3339 in UTC with milliseconds: "2026-01-01T00:00:00.123Z", and
// "2026-01-01T00:00:00Z" when the milliseconds are 0 (as Kubernetes writes
// creationTimestamp). Times before 1970 work; years outside 0000..9999 give
// text that the parser rejects.
std::string FormatRfc3339Ms(int64_t unix_ms);

}  // namespace allot::core
