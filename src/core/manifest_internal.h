// Internal declarations shared by the manifest reader's translation units
// (manifest.cc, manifest_workload.cc, manifest_pod.cc,
// manifest_container.cc, manifest_nodepool.cc, manifest_validate.cc,
// manifest_limits.cc, manifest_text.cc, manifest_yaml.cc). Not part of the public API: include core/manifest.h
// instead.
//
// Tree is a parsed document (from YAML or JSON text); Val is a node of it
// with its field path, which does the strict field and scalar checks; Doc
// is one manifest document with its metadata read.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/manifest.h"
#include "core/model.h"
#include "core/quantity.h"
#include "core/status.h"

namespace allot::core::internal {

using Names = std::initializer_list<std::string_view>;
template <typename E>
using EnumTable = std::initializer_list<std::pair<std::string_view, E>>;

inline std::string Quote(const std::string& s) { return "\"" + s + "\""; }

inline bool Contains(Names names, std::string_view s) {
  for (std::string_view n : names) {
    if (n == s) return true;
  }
  return false;
}

// A document tree: what YAML and JSON have in common. Scalars keep their
// text (JSON numbers and booleans are written as YAML would show them), so
// the checks below treat `count: 2` and `"count": 2` alike.
struct Tree {
  enum class Type : uint8_t { kNull, kScalar, kMap, kSeq };
  Type type = Type::kNull;
  bool bad_key = false;  // A mapping key that is not a scalar.
  std::string scalar;
  std::vector<std::string> keys;  // kMap: in document order.
  std::vector<Tree> items;        // kMap: the values; kSeq: the items.
};

// A Tree node and its field path ("spec.resourceGroups[0]"). An absent or
// null node is "unset": getters then leave their output untouched.
class Val {
 public:
  Val(const Tree* node, std::string path)
      : node_(node), path_(std::move(path)) {}

  bool unset() const {
    return node_ == nullptr || node_->type == Tree::Type::kNull;
  }
  bool IsMap() const { return !unset() && node_->type == Tree::Type::kMap; }
  const std::string& path() const { return path_; }
  Status Error(const std::string& msg) const {
    return Status::InvalidArgument(msg, path_);
  }

  // Field `key` of a mapping; unset when absent (or when this is no map).
  Val operator[](const std::string& key) const {
    return Find(key, path_.empty() ? key : path_ + "." + key);
  }
  // Entry `key` of a map such as labels, with path "path[key]".
  Val Entry(const std::string& key) const {
    return Find(key, path_ + "[" + key + "]");
  }

  // Checks that this is a mapping (or unset) whose keys are all `known` or
  // `ignored`, each once.
  Status CheckFields(Names known, Names ignored = {}) const {
    return CheckFieldsIf(known, [ignored](std::string_view key) {
      return Contains(ignored, key);
    });
  }
  // CheckFields, where `also(key)` says whether a key not `known` is
  // allowed (the caller checks it; the error lists only `known`).
  template <typename Pred>
  Status CheckFieldsIf(Names known, Pred also) const {
    std::vector<std::pair<std::string, Val>> entries;
    ALLOT_RETURN_IF_ERROR(Entries(&entries));
    std::set<std::string> seen;
    for (const auto& [key, v] : entries) {
      std::string path = path_.empty() ? key : path_ + "." + key;
      if (!seen.insert(key).second) {
        return Status::InvalidArgument("field given twice", path);
      }
      if (Contains(known, key) || also(std::string_view(key))) continue;
      std::string list;
      for (std::string_view n : known) {
        list += (list.empty() ? "" : ", ") + std::string(n);
      }
      return Status::InvalidArgument(
          "unknown field " + Quote(key) + " (expected one of: " + list + ")",
          path);
    }
    return Status::Ok();
  }

  // The entries of a mapping, each with path "path[key]".
  Status Entries(std::vector<std::pair<std::string, Val>>* out) const {
    if (unset()) return Status::Ok();
    if (!IsMap()) return Error("expected a mapping");
    if (node_->bad_key) return Error("mapping keys must be strings");
    for (size_t i = 0; i < node_->keys.size(); ++i) {
      const std::string& key = node_->keys[i];
      out->emplace_back(key, Val(&node_->items[i], path_ + "[" + key + "]"));
    }
    return Status::Ok();
  }

  // The items of a sequence, each with path "path[i]".
  Status Items(std::vector<Val>* out) const {
    if (unset()) return Status::Ok();
    if (node_->type != Tree::Type::kSeq) return Error("expected a list");
    for (size_t i = 0; i < node_->items.size(); ++i) {
      out->emplace_back(&node_->items[i],
                        path_ + "[" + std::to_string(i) + "]");
    }
    return Status::Ok();
  }

  Status CheckMap() const {
    return unset() || IsMap() ? Status::Ok() : Error("expected a mapping");
  }
  Status Require() const {
    return unset() ? Error("required field is missing") : Status::Ok();
  }

  Status Get(std::string* out) const {
    if (unset()) return Status::Ok();
    if (node_->type != Tree::Type::kScalar) return Error("expected a string");
    *out = node_->scalar;
    return Status::Ok();
  }
  // A string that must be given and not be empty.
  Status GetName(std::string* out) const {
    ALLOT_RETURN_IF_ERROR(Require());
    ALLOT_RETURN_IF_ERROR(Get(out));
    return out->empty() ? Error("must not be empty") : Status::Ok();
  }
  Status Get(int32_t* out) const {
    std::string s;
    ALLOT_RETURN_IF_ERROR(Get(&s));
    if (unset()) return Status::Ok();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() ||
        v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max()) {
      return Error("expected a 32-bit integer, got " + Quote(s));
    }
    *out = static_cast<int32_t>(v);
    return Status::Ok();
  }
  Status Get(bool* out) const {
    std::string s;
    ALLOT_RETURN_IF_ERROR(Get(&s));
    if (unset()) return Status::Ok();
    // YAML 1.1 spellings too, as kubectl accepts them.
    if (Contains(
            {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"},
            s)) {
      *out = true;
    } else if (Contains({"false", "False", "FALSE", "no", "No", "NO", "off",
                         "Off", "OFF"},
                        s)) {
      *out = false;
    } else {
      return Error("expected true or false, got " + Quote(s));
    }
    return Status::Ok();
  }
  Status Get(Quantity* out) const {
    std::string s;
    ALLOT_RETURN_IF_ERROR(Get(&s));
    if (unset()) return Status::Ok();
    Result<Quantity> q = Quantity::Parse(s);
    if (!q.ok()) return Error(q.status().message());
    *out = *q;
    return Status::Ok();
  }
  // A quantity that must not be negative.
  Status GetNonNegative(Quantity* out) const {
    ALLOT_RETURN_IF_ERROR(Get(out));
    if (out->IsNegative()) {
      return Error("must not be negative, got " + out->ToString());
    }
    return Status::Ok();
  }
  Status Get(Labels* out) const {
    std::vector<std::pair<std::string, Val>> entries;
    ALLOT_RETURN_IF_ERROR(Entries(&entries));
    for (const auto& [key, v] : entries) {
      ALLOT_RETURN_IF_ERROR(v.Get(&(*out)[key]));
    }
    return Status::Ok();
  }
  Status Get(std::vector<std::string>* out) const {
    std::vector<Val> items;
    ALLOT_RETURN_IF_ERROR(Items(&items));
    for (const Val& item : items) {
      ALLOT_RETURN_IF_ERROR(item.Get(&out->emplace_back()));
    }
    return Status::Ok();
  }
  template <typename T>
  Status Get(std::optional<T>* out) const {
    if (unset()) return Status::Ok();
    T v{};
    ALLOT_RETURN_IF_ERROR(Get(&v));
    *out = v;
    return Status::Ok();
  }
  template <typename E>
  Status GetEnum(EnumTable<E> table, E* out) const {
    std::string s;
    ALLOT_RETURN_IF_ERROR(Get(&s));
    if (unset()) return Status::Ok();
    std::string list;
    for (const auto& [name, value] : table) {
      if (s == name) {
        *out = value;
        return Status::Ok();
      }
      list += (list.empty() ? "" : ", ") + std::string(name);
    }
    return Error("unknown value " + Quote(s) + " (expected one of: " + list +
                 ")");
  }

 private:
  Val Find(const std::string& key, std::string path) const {
    if (IsMap()) {
      for (size_t i = 0; i < node_->keys.size(); ++i) {
        if (node_->keys[i] == key) return Val(&node_->items[i], std::move(path));
      }
    }
    return Val(nullptr, std::move(path));
  }

  const Tree* node_;
  std::string path_;
};

// ---- Input text ------------------------------------------------------------

// Checked before any parsing (manifest_text.cc): the text is UTF-8 (the
// store keeps JSON, which must be UTF-8; invalid bytes once stored would
// stop the server from loading it). The error names the line.
Status CheckText(const std::string& text, const std::string& file);

// When `text` is one JSON object that Boost.JSON reads, appends its Tree to
// *docs and sets *done (manifest_text.cc); else leaves both for yaml-cpp.
// Over `limits` (depth, nodes) it is an error, not read a second time.
Status TryJson(const std::string& text, const std::string& file,
               const ParseLimits& limits, std::vector<Tree>* docs, bool* done);

// Reads the YAML documents of `text` into *docs (appended) within
// `limits` (manifest_yaml.cc). Syntax errors name the line and column.
Status ParseYamlText(const std::string& text, const std::string& file,
                     const ParseLimits& limits, std::vector<Tree>* docs);

// Turns an error with a relative field into the user-facing message
// ("FILE: document N (Kind name): ...").
Status At(const SourceRef& src, const std::string& name, const Status& s);

// ---- Shared shapes (manifest.cc) -------------------------------------------

Status ParseTolerations(const Val& v, std::vector<Toleration>* out);
// A Node's spec.taints.
Status ParseTaints(const Val& v, std::vector<Taint>* out);

// No node has more GPUs than this; a larger per-pod request is a typo.
inline constexpr int64_t kMaxGpusPerPod = 4096;

// Per-pod requests: non-negative; GPUs and MIG slices in whole units, at
// most kMaxGpusPerPod.
Status ParseRequests(const Val& v, ResourceList* out);

// ---- Pod templates (manifest_pod.cc, manifest_container.cc) ---------------

// A Kubernetes field Allot does not honour. It is accepted only with one of
// the values in `accepted` (", "-separated; each a Kubernetes default, or a
// value that asks for what Allot does anyway), else it is an error naming
// the field that says `why`.
struct Unsupported {
  std::string_view field;
  std::string_view why;
  std::string_view accepted = "";
};
using UnsupportedTable = std::initializer_list<Unsupported>;

// `v` (a mapping) has only `known` fields and those of `table`, each once,
// and each field of `table` it has holds an accepted value.
Status CheckPodFields(const Val& v, Names known, UnsupportedTable table);

// The spec of a Kubernetes PodTemplateSpec (a Kueue Workload's pod set, a
// Job's template) into *ps: its requests, placement and what its first
// container runs (manifest_pod.cc). Every field is read, accepted as
// having no effect, or an error naming it.
Status ParsePodSpec(const Val& spec, PodSet* ps);

// What a pod runs, read alike from the first container of a pod template
// and from allot.dev/v1's compact template (manifest_container.cc): image,
// imagePullPolicy, command, args, env (values and secretKeyRefs), envFrom
// (secretRefs) and workingDir. Checks no field names.
Status ParseRunFields(const Val& v, PodSet* ps);
// imagePullSecrets and volumes, read from a PodSpec or a compact template.
Status ParsePodStorage(const Val& v, PodSet* ps);
// volumeMounts of the first container or the compact template; after
// ParsePodStorage (each mount names one of ps->volumes).
Status ParseVolumeMounts(const Val& v, PodSet* ps);
// The pod's securityContext (`pod`, unset for a compact template) and the
// container's (`container`, whose fields win), into ps->run_as_user and
// the rest.
Status ParseSecurityContexts(const Val& pod, const Val& container,
                             PodSet* ps);

// ---- Kinds -----------------------------------------------------------------

// The API versions of Kueue's group that Allot reads (kueue.x-k8s.io/...).
// kNone: a document of another group (v1, batch/v1, allot.dev/v1).
enum class KueueApi { kNone, kV1alpha1, kV1beta1, kV1beta2 };
// "kueue.x-k8s.io/v1beta2" for kV1beta2; "" for kNone.
std::string_view KueueApiVersion(KueueApi api);

// One manifest document, with its metadata read.
struct Doc {
  Doc(const Tree* node, SourceRef src)
      : root(node, ""), metadata(nullptr, "metadata"), source(src) {}
  Val root;
  Val metadata;
  SourceRef source;
  KueueApi api = KueueApi::kNone;
  std::string name;
  // metadata.generateName when metadata.name is absent: the server picks
  // the name (core/generate_name.h); `name` is then empty.
  std::string generate_name;
  std::string ns;  // Namespaced kinds only ("default" when absent).
  Labels labels;
  Labels annotations;
  // "ns/name", or "ns/PREFIX*" for a name still to be generated.
  std::string DisplayName() const {
    std::string n = name.empty() && !generate_name.empty()
                        ? generate_name + "*"
                        : name;
    return ns.empty() ? n : ns + "/" + n;
  }
};

// A field that only some Kueue API versions have, and how the others spell
// it: in a document of another version it is an error that says so
// (ClusterQueue spec.cohort is v1beta1's, v1beta2 writes cohortName).
struct VersionedField {
  std::string_view field;
  unsigned versions;           // Where `field` is valid: ApiBit()s or'ed.
  std::string_view elsewhere;  // Its spelling in the other versions.
};
constexpr unsigned ApiBit(KueueApi api) {
  return 1u << static_cast<unsigned>(api);
}
// The first field of `v` (a mapping) that `api` does not have, as an error
// naming it, its versions and `elsewhere`.
Status CheckVersionedFields(const Val& v, KueueApi api,
                            std::initializer_list<VersionedField> fields);

// apiVersion, kind, metadata and spec (manifest.cc).
extern const Names kTopFields;

inline constexpr char kPriorityLabel[] = "kueue.x-k8s.io/priority-class";

// The Kueue configuration kinds (manifest_kueue.cc).
Status ParseResourceFlavor(const Doc& d, Config* out);
Status ParseTopology(const Doc& d, Config* out);
Status ParseClusterQueue(const Doc& d, Config* out);
Status ParseCohort(const Doc& d, Config* out);
Status ParseLocalQueue(const Doc& d, Config* out);
Status ParsePriorityClass(const Doc& d, Config* out);
// A duration annotation (core/duration.h), when given, in seconds into
// *out: 0 only with `allow_zero`; an error names the annotation.
Status DurationAnnotation(const Labels& annotations, const char* key, bool allow_zero,
                          int64_t* out);
// The kPreemptibleKey annotation, when given: "true" or "false"
// (manifest_workload.cc).
Status ParsePreemptible(const Labels& annotations, bool* out);

// The workload kinds (manifest_workload.cc).
Status ParseAllotWorkload(const Doc& d, Config* out);
Status ParseKueueWorkload(const Doc& d, Config* out);
Status ParseJob(const Doc& d, Config* out);
// allot.dev/v1 Notebook: a Workload of type notebook that runs Jupyter
// (docs/notebooks.md).
Status ParseNotebook(const Doc& d, Config* out);
// allot.dev/v1 NodePool: expanded into Nodes, or an autoscaled pool
// (with spec.provider) kept in Config::node_pools (manifest_nodepool.cc).
Status ParseNodePool(const Doc& d, Config* out);
// A non-negative decimal with up to 6 fraction digits (a price), in
// millionths (manifest_kueue.cc).
Status ParseMicros(const Val& v, int64_t* out);
Status ParseImage(const Doc& d, Config* out);  // manifest_image.cc

// ---- Checks on each parsed object (manifest_limits.cc) --------------------

// How many objects of each kind a Config holds: what a document added is
// what lies past the counts taken before it was parsed.
struct Counts {
  size_t workloads, nodes, cluster_queues, flavors, cohorts, local_queues,
      priority_classes, namespaces, topologies, images;
};
Counts CountsOf(const Config& c);

// A pod set's total request (count x per pod) must stay far from int64's
// limit, so that quota sums over many workloads cannot overflow.
Status CheckTotals(const Workload& w);

// With ParseLimits::object_limits: the syntax of label and annotation keys
// and label values, and bounds on their number and size.
Status CheckMetadataLimits(const Doc& d);
// With ParseLimits::object_limits: bounds on pod sets, pods, command, args
// and env entries (Kueue allows 8 pod sets; the rest are far past any real
// workload).
Status CheckWorkloadLimits(const Workload& w);
// With ParseLimits::object_limits: the syntax of the names inside the
// objects a document added (after `before`): resource names, selectors'
// and flavors' labels.
Status CheckObjectNames(const Counts& before, const Config& out);

// The stored size of each object the document added (after `before`): its
// JSON encoding, as the server keeps it, must stay within max_bytes (<= 0:
// no limit).
Status CheckEncodedSize(const Counts& before, const Config& out,
                        int64_t max_bytes);

}  // namespace allot::core::internal
