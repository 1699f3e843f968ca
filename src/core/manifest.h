// Reading Kueue and Allot manifests (YAML) into a core::Config.
//
// Accepted documents (each `---`-separated YAML document is one object):
//   kueue.x-k8s.io/v1beta2,  ResourceFlavor, ClusterQueue, LocalQueue,
//   kueue.x-k8s.io/v1beta1   WorkloadPriorityClass, Workload, Cohort (each
//                            version with its own field spellings: a
//                            spelling of the other is an error that gives
//                            this one's, docs/manifests.md)
//   kueue.x-k8s.io/v1alpha1  Cohort
//   v1                       Namespace
//   batch/v1                 Job (with a kueue.x-k8s.io/queue-name label)
//   allot.dev/v1             Node, NodePool (many identical Nodes, expanded
//                            at parse time), Workload, SchedulerConfig
// Empty documents and `null` are skipped. Anything else is an error.
//
// Validation is strict: an unknown field is an error that names it, except
// for Kubernetes bookkeeping that a manifest exported from a cluster carries
// (metadata.uid, resourceVersion, managedFields, ..., and the `status` of
// kinds whose status Allot does not read); a pod template's fields are read,
// accepted as having no effect, or errors (docs/manifests.md, "Pod templates").
// Annotations are accepted whatever their keys; workloads keep them.
//
// JSON is YAML, so a JSON document (an HTTP request body, or the output of
// core/manifest_encode.h) is read the same way.
//
// Every error is an InvalidArgument whose message a user can act on as is:
//   FILE: document N (Kind name): FIELD.PATH: what is wrong
// (N is 0-based; namespaced objects are named "namespace/name"), and whose
// field() is FIELD.PATH. Every object records its origin in `source`, so
// ValidateConfig names the same place.
//
// Semantics worth knowing:
//  - Pod requests of Kueue Workloads and Jobs follow Kubernetes: the sum over
//    containers (a resource given only in limits is requested at its limit),
//    at least the largest init container, plus the pod overhead. Zero
//    requests are dropped from PodSet::requests.
//  - A Job becomes a Workload with one pod set "main" whose count is
//    spec.parallelism (default 1), capped by spec.completions; its
//    priority class comes from the label kueue.x-k8s.io/priority-class.
//  - A PodSetAssignment without `count` admits the whole pod set.
//  - Workloads keep metadata.labels and metadata.annotations. Their type is
//    spec.type of an allot.dev/v1 Workload (default "batch"), and the label
//    allot.dev/workload-type of a Kueue Workload or Job (default "batch");
//    any other value is an error.
//  - metadata.generateName without metadata.name leaves the name empty (and
//    generate_name set) until core/generate_name.h names the object.
//  - Every Namespace gets the label kubernetes.io/metadata.name with its
//    name; Workload spec.active (default true) is kept in Workload::active.
//  - What a pod runs (image, command, env, volumes, securityContext, ...)
//    comes from an allot.dev/v1 compact template or the FIRST container of a
//    pod template; the others count for their requests and run nothing.
//
// Thread-safety: the functions are pure apart from LoadManifestFile's read.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace allot::core {

// Bounds on the work and memory of reading one manifest text, checked while
// it is read (not after), so that a small hostile input cannot make the
// reader allocate without bound: nested aliases ("billion laughs"), deep
// nesting, a flood of documents. Exceeding one is an InvalidArgument that
// names the limit. The defaults hold any real manifest (an API body is at
// most 1 MiB); Trusted() is for the server's own store.
struct ParseLimits {
  int max_depth = 64;              // Nested mappings and lists.
  int64_t max_nodes = 200000;      // Values in all documents, aliases expanded.
  int64_t max_aliases = 10000;     // *alias uses.
  int64_t max_alias_nodes = 100000;  // Nodes copied by aliases.
  int64_t max_text_bytes = 8 << 20;  // Scalar and key bytes, aliases expanded.
  int64_t max_documents = 10000;
  // The largest object one document may decode to, as stored (its JSON
  // encoding; etcd's limit for a Kubernetes object). 0: unchecked.
  int64_t max_object_bytes = 1536 * 1024;
  // The bounds on a decoded object's parts: pod sets, pods, command, args
  // and env entries, labels, annotations (docs/manifests.md, "Limits").
  bool object_limits = true;

  static ParseLimits Trusted() {
    ParseLimits l;
    l.max_nodes = int64_t(1) << 40;
    l.max_text_bytes = int64_t(1) << 40;
    l.max_documents = int64_t(1) << 40;
    l.max_object_bytes = 0;
    l.object_limits = false;  // What a store holds loads, whatever its size.
    return l;
  }
};

// A document of a kind Allot does not run (a Deployment, a JobSet, a
// RayCluster, Kueue's AdmissionCheck, Topology, MultiKueueCluster, ...: any
// kind the table of accepted kinds above does not name in any apiVersion).
struct SkippedDocument {
  std::string file;
  int doc_index = 0;
  std::string api_version;
  std::string kind;
  std::string name;  // "namespace/name", "name" or "" (as the document has it)
};

// Parses every YAML document in `text` (called `file` in messages) and
// appends the objects to *config, in document order. A SchedulerConfig
// document replaces config->scheduler. Checks each object on its own
// (fields, enums, quantities, quota shape); cross-object checks are
// ValidateConfig's. On error returns InvalidArgument and *config is
// unchanged.
//
// Documents of kinds Allot does not run are one error, field "kind", that
// names each of them and lists the kinds Allot runs; with `skipped` they
// are left out instead and appended to *skipped (`allot apply
// --skip-unsupported`). A kind Allot runs in an apiVersion it does not
// read is always an error (field "apiVersion").
Status ParseManifests(const std::string& text, const std::string& file,
                      Config* config, const ParseLimits& limits = {},
                      std::vector<SkippedDocument>* skipped = nullptr);

// Reads `path` ("-" = stdin) and calls ParseManifests with `path` as the
// file name. A file that cannot be read is NotFound.
Status LoadManifestFile(const std::string& path, Config* config,
                        const ParseLimits& limits = {});

// Cross-object validation, once all files are read:
//  - names are unique per kind (namespaced kinds per namespace);
//  - ClusterQueues and Cohorts name existing ResourceFlavors; Cohort
//    parents form no cycle (a cohort named only by ClusterQueues or as a
//    parent exists implicitly, without quota);
//  - LocalQueues name existing ClusterQueues;
//  - Workloads name existing WorkloadPriorityClasses; Workload::priority is
//    set from the class here;
//  - admissions name an existing ClusterQueue, every pod set once, flavors
//    the ClusterQueue lists for each resource, a count within
//    [minCount or count, count], one placement per admitted pod on an
//    existing Node, and no GPU (or MIG slice) UUID twice in the whole
//    config (node inventories and placements alike).
// A Workload whose LocalQueue does not exist is fine. A namespace that
// LocalQueues or Workloads use but no Namespace declares exists: it is
// added to config->namespaces with its kubernetes.io/metadata.name label.
// An object whose name is still to be generated (metadata.generateName,
// core/generate_name.h) is an error. On error *config may be partly
// resolved; the caller discards it.
Status ValidateConfig(Config* config);

}  // namespace allot::core
