// The Kueue-shaped model: what users declare and what nodes report.
//
// These are plain value types, parsed from manifests (core/manifest.h) or,
// later, from API requests. Field names follow Kueue v1beta1 and Kubernetes
// so that manifests read naturally. They carry no scheduling state: the
// scheduler (sched/) interns them into its own compact indexes.
//
// Every top-level object records where it came from (`source`) so that a
// validation error can name the file, the document and the field.
//
// Equality: every type has a memberwise operator==. SourceRef always compares
// equal, so two objects are equal when their values are, wherever they were
// declared (a manifest read back from its JSON encoding, core/
// manifest_encode.h, equals the original).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/quantity.h"

namespace allot::core {

inline constexpr char kGpuResource[] = "nvidia.com/gpu";
inline constexpr char kMigResourcePrefix[] = "nvidia.com/mig-";
inline constexpr char kCpuResource[] = "cpu";
inline constexpr char kMemoryResource[] = "memory";
// Kueue's "pods": a ClusterQueue that covers it counts every pod as one,
// whatever the pod set requests (sched: Impl::CountPods).
inline constexpr char kPodsResource[] = "pods";
// Labels an agent puts on its node: how it runs pods ("process",
// "container" or "simulated"), and "true" when a process node runs the
// command of a pod with an image on the host (allot agent --ignore-images).
// The scheduler places no pod set with an image on a process node without
// the latter (sched: NodeState::refuses_images).
inline constexpr char kRuntimeLabel[] = "allot.dev/runtime";
inline constexpr char kIgnoreImagesLabel[] = "allot.dev/ignore-images";
inline constexpr char kTopologyBlockLabel[] = "topology.allot.dev/block";
inline constexpr char kTopologyRackLabel[] = "topology.allot.dev/rack";
// A node's own topology domain: its name unless it has the label (as the
// kubelet sets it).
inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
// On every Namespace: its own name, as Kubernetes sets it, so that a
// namespaceSelector can pick namespaces by name.
inline constexpr char kNamespaceNameLabel[] = "kubernetes.io/metadata.name";
// On a Kueue Workload or Job: the Allot workload type (see Workload::type).
inline constexpr char kWorkloadTypeLabel[] = "allot.dev/workload-type";

// True for "nvidia.com/gpu" and "nvidia.com/mig-<profile>".
bool IsGpuResource(const std::string& resource);
// "nvidia.com/mig-1g.10gb" for profile "1g.10gb".
std::string MigResourceName(const std::string& profile);
// True for the workload types: "batch", "training", "inference", "notebook".
bool IsWorkloadType(const std::string& type);

using Labels = std::map<std::string, std::string>;
// Ordered so that iteration (and so every output) is deterministic.
using ResourceList = std::map<std::string, Quantity>;

// Where an object was declared: file and 0-based document index.
struct SourceRef {
  std::string file;
  int doc_index = -1;
  std::string kind;
  // "FILE: document N (Kind name)" or "" when unknown.
  std::string Describe(const std::string& name) const;
  // Always true: an origin is not part of an object's value (see above).
  bool operator==(const SourceRef&) const { return true; }
};

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;

  bool operator==(const Taint&) const = default;
};

enum class TolerationOperator { kEqual, kExists };
struct Toleration {
  std::string key;  // Empty key with kExists tolerates everything.
  TolerationOperator op = TolerationOperator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;  // Unset: all effects.
  bool Tolerates(const Taint& taint) const;

  bool operator==(const Toleration&) const = default;
};

// True when every NoSchedule/NoExecute taint is tolerated by one of `a` or
// `b` (PreferNoSchedule taints never block).
bool TaintsTolerated(const std::vector<Taint>& taints,
                     const std::vector<Toleration>& a,
                     const std::vector<Toleration>& b = {});

struct LabelSelectorRequirement {
  enum class Op { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Op op = Op::kIn;
  std::vector<std::string> values;

  bool operator==(const LabelSelectorRequirement&) const = default;
};
struct LabelSelector {
  Labels match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  // An empty selector matches everything.
  bool Matches(const Labels& labels) const;

  bool operator==(const LabelSelector&) const = default;
};

// True when `labels` has every key/value of `selector`.
bool LabelsMatch(const Labels& selector, const Labels& labels);

struct ResourceFlavor {
  std::string name;
  Labels node_labels;
  std::vector<Taint> node_taints;
  std::vector<Toleration> tolerations;
  // Allot extension (spec.price): price per unit-hour of each resource, in
  // micro-units of the billing currency (2.5 -> 2500000).
  std::map<std::string, int64_t> price_micros_per_hour;
  // Kueue's spec.topologyName: the Topology whose levels place the pod sets
  // that ask for one (topology-aware scheduling). Empty: none.
  std::string topology_name;
  SourceRef source;
  // metadata.generateName: the prefix the name was (or is to be) generated
  // from (core/generate_name.h); "" when the name was given. While `name`
  // is empty the object is not yet named. (The `{}` keeps aggregate
  // initializers that leave it out free of -Wmissing-field-initializers.)
  std::string generate_name{};

  bool operator==(const ResourceFlavor&) const = default;
};

// Kueue's Topology: the node labels that name a node's domains, from the
// widest (e.g. a block) to the narrowest (e.g. kubernetes.io/hostname).
struct Topology {
  std::string name;
  std::vector<std::string> levels;  // Node label keys.
  SourceRef source;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  bool operator==(const Topology&) const = default;
};

// allot.dev/v1 Image: an entry of the admin image catalogue, a named,
// described image reference (e.g. pytorch -> nvcr.io/nvidia/pytorch:24.01-py3).
// A pod set naming it runs the reference (core/image_policy.h).
struct Image {
  std::string name;
  std::string image;        // The OCI image reference; never empty.
  std::string description;  // Free text for people (allot get images).
  SourceRef source;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  bool operator==(const Image&) const = default;
};

// Where a pod set's pods must or should share a topology domain (Kueue's
// podset-required-topology / podset-preferred-topology /
// podset-unconstrained-topology annotations, v1beta2's topologyRequest).
// At most one of required, preferred and unconstrained is set.
struct TopologyRequest {
  std::string required;   // A level (node label): all pods in one domain.
  std::string preferred;  // A level: one domain if one fits, else the
                          // narrowest level above that fits, else anywhere.
  bool unconstrained = false;  // Topology-aware, no domain asked for.

  bool empty() const { return required.empty() && preferred.empty() && !unconstrained; }
  bool operator==(const TopologyRequest&) const = default;
};

struct ResourceQuota {
  std::string name;
  Quantity nominal_quota;
  std::optional<Quantity> borrowing_limit;
  std::optional<Quantity> lending_limit;

  bool operator==(const ResourceQuota&) const = default;
};
struct FlavorQuotas {
  std::string name;  // ResourceFlavor name.
  std::vector<ResourceQuota> resources;

  bool operator==(const FlavorQuotas&) const = default;
};
struct ResourceGroup {
  std::vector<std::string> covered_resources;
  std::vector<FlavorQuotas> flavors;  // In the order they are tried.

  bool operator==(const ResourceGroup&) const = default;
};

enum class QueueingStrategy { kBestEffortFIFO, kStrictFIFO };
enum class WithinClusterQueue {
  kNever,
  kLowerPriority,
  kLowerOrNewerEqualPriority
};
enum class ReclaimWithinCohort { kNever, kLowerPriority, kAny };
enum class BorrowWithinCohortPolicy { kNever, kLowerPriority };
struct PreemptionPolicy {
  WithinClusterQueue within_cluster_queue = WithinClusterQueue::kNever;
  ReclaimWithinCohort reclaim_within_cohort = ReclaimWithinCohort::kNever;
  BorrowWithinCohortPolicy borrow_within_cohort =
      BorrowWithinCohortPolicy::kNever;
  // Only workloads with priority <= this may be preempted while borrowing.
  std::optional<int32_t> max_priority_threshold;

  bool operator==(const PreemptionPolicy&) const = default;
};
enum class FungibilityPolicy { kMayStopSearch, kTryNextFlavor };
// flavorFungibility.preference: which flavor wins when every candidate
// needs borrowing, preemption or both. BorrowingOverPreemption ranks by
// preemption mode first (fit > reclaim > preempt), then by how deep in the
// cohort tree the quota is borrowed; PreemptionOverBorrowing the other way
// round. Unset behaves as BorrowingOverPreemption (Kueue's default).
enum class FungibilityPreference {
  kBorrowingOverPreemption,
  kPreemptionOverBorrowing
};
struct FlavorFungibility {
  FungibilityPolicy when_can_borrow = FungibilityPolicy::kMayStopSearch;
  FungibilityPolicy when_can_preempt = FungibilityPolicy::kTryNextFlavor;
  // Set only when both policies are kTryNextFlavor (Kueue's rule); unset
  // otherwise (sched/flavor_assigner.cc ranks as BorrowingOverPreemption).
  std::optional<FungibilityPreference> preference{};

  bool operator==(const FlavorFungibility&) const = default;
};
enum class StopPolicy { kNone, kHold, kHoldAndDrain };

struct ClusterQueue {
  std::string name;
  std::string cohort;  // Empty: none.
  // Unset matches no namespace (Kueue semantics); an empty selector all.
  std::optional<LabelSelector> namespace_selector;
  std::vector<ResourceGroup> resource_groups;
  QueueingStrategy queueing_strategy = QueueingStrategy::kBestEffortFIFO;
  PreemptionPolicy preemption;
  FlavorFungibility flavor_fungibility;
  int64_t fair_weight_milli = 1000;  // fairSharing.weight, as milli-units.
  StopPolicy stop_policy = StopPolicy::kNone;
  SourceRef source;
  Labels annotations;  // metadata.annotations, as given.
  // The default run-time limit of its workloads that set no
  // maximumExecutionTimeSeconds, from the annotation kMaxRunDurationKey
  // (an Allot extension); 0: none.
  int64_t max_run_seconds = 0;
  // Park its admitted workloads after this long with every GPU under the
  // server's idle threshold (docs/parking.md), from the annotation
  // kIdleAfterKey; 0: never. A workload's own annotation wins.
  int64_t idle_after_seconds = 0;
  // How long a workload running on capacity that a parked workload of
  // this ClusterQueue lent (docs/parking.md) may take to stop once that
  // workload resumes, from the annotation kReclaimGraceKey: its pods' grace
  // period is capped at the smallest of its cohort tree's.
  int64_t reclaim_grace_seconds = 30;
  // A workload parked longer than this is stopped: its quota is freed and
  // it is held out of the queue (Suspended) until resumed, from the
  // annotation kMaxParkedKey; 0: never.
  int64_t max_parked_seconds = 0;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  bool operator==(const ClusterQueue&) const = default;
};

// The ClusterQueue annotation that sets max_run_seconds: a duration
// ("4h", "1h30m", core/duration.h).
inline constexpr char kMaxRunDurationKey[] = "allot.dev/max-run-duration";
// The ClusterQueue or Workload annotation that parks an idle workload
// ("30m"; "0s" on a workload: never, whatever its ClusterQueue says).
inline constexpr char kIdleAfterKey[] = "allot.dev/idle-after";
// The ClusterQueue annotation that sets max_parked_seconds ("24h").
inline constexpr char kMaxParkedKey[] = "allot.dev/max-parked";
// The ClusterQueue annotation that sets reclaim_grace_seconds ("30s").
inline constexpr char kReclaimGraceKey[] = "allot.dev/reclaim-grace";
// The Workload or WorkloadPriorityClass annotation ("true" or "false")
// that lets a workload run on capacity parked workloads gave back, as the
// first to go when they resume (docs/parking.md).
inline constexpr char kPreemptibleKey[] = "allot.dev/preemptible";

// A node of the cohort tree; may hold quota of its own.
struct Cohort {
  std::string name;
  std::string parent;  // Empty: a root.
  std::vector<ResourceGroup> resource_groups;
  int64_t fair_weight_milli = 1000;
  SourceRef source;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  bool operator==(const Cohort&) const = default;
};

struct LocalQueue {
  std::string ns;  // The tenant.
  std::string name;
  std::string cluster_queue;
  SourceRef source;
  // Kept for the priority policy (core/priority_policy.h).
  Labels annotations;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  bool operator==(const LocalQueue&) const = default;
};

struct WorkloadPriorityClass {
  std::string name;
  int32_t value = 0;
  SourceRef source;
  std::string generate_name{};  // As ResourceFlavor::generate_name.
  // Its kPreemptibleKey annotation: its workloads are preemptible unless
  // they say otherwise.
  bool preemptible = false;

  bool operator==(const WorkloadPriorityClass&) const = default;
};

// A tenant. Labels feed ClusterQueue namespaceSelectors.
struct Namespace {
  std::string name;
  Labels labels;
  SourceRef source;
  // Kept for the priority policy (core/priority_policy.h).
  Labels annotations;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  bool operator==(const Namespace&) const = default;
};

// A value kept in a tenant's Secret (server/secrets.h), resolved only when
// the pod starts, so a workload names its secrets but never holds them.
struct SecretKeyRef {
  std::string secret;  // A Secret in the workload's tenant.
  std::string key;
  bool optional = false;  // Missing secret or key: the variable is unset.

  bool operator==(const SecretKeyRef&) const = default;
};

// env[].valueFrom.secretKeyRef: one variable from one key.
struct SecretEnvVar {
  std::string name;
  SecretKeyRef ref;

  bool operator==(const SecretEnvVar&) const = default;
};

// envFrom[].secretRef: every key of a Secret as a variable, with a prefix.
struct SecretEnvFrom {
  std::string secret;
  std::string prefix;
  bool optional = false;

  bool operator==(const SecretEnvFrom&) const = default;
};

// A pod volume (spec.volumes[]): exactly one source is set by `type`.
struct Volume {
  enum class Type { kEmptyDir, kHostPath, kSecret, kClaim };
  std::string name;
  Type type = Type::kEmptyDir;
  // emptyDir: "" (node disk) or "Memory" (a tmpfs), and an optional size
  // limit in bytes (0: none).
  std::string medium;
  int64_t size_limit_bytes = 0;
  // hostPath: an absolute path on the node, allowed per tenant by an admin.
  std::string path;
  // secret: a Secret of the tenant, its keys as files.
  std::string secret;
  // persistentVolumeClaim: one of the tenant's persistent volumes, a
  // directory under the agent's volume root shared by the workload's pods.
  std::string claim;
  bool read_only = false;  // hostPath and claims: mounted read-only.

  bool operator==(const Volume&) const = default;
};

// containers[0].volumeMounts[]: where a volume appears in the pod.
struct VolumeMount {
  std::string name;        // A Volume of the pod set.
  std::string mount_path;  // Absolute, in the container.
  std::string sub_path;    // Relative, within the volume; empty: all of it.
  bool read_only = false;

  bool operator==(const VolumeMount&) const = default;
};

struct PodSet {
  std::string name;
  int32_t count = 1;
  std::optional<int32_t> min_count;  // Partial admission down to this.
  ResourceList requests;             // Per pod.
  Labels node_selector;
  std::vector<Toleration> tolerations;
  TopologyRequest topology;
  // What each pod runs (of a Kubernetes pod template: its first container).
  // Empty command: the image's entrypoint. env keeps its order and may name
  // a variable twice (the last one wins, as in Kubernetes).
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // name -> value
  std::string working_dir;  // Empty: the runtime's default.
  // The OCI image its pods run in (the container runtime); empty: a
  // process on the host (the process runtime). Pull policy: Always,
  // IfNotPresent, Never, or empty for Kubernetes' default (Always for
  // a :latest or untagged image, else IfNotPresent).
  std::string image;
  std::string image_pull_policy;
  // Secrets: variables from keys (set after `env`, so they win over a
  // literal of the same name), whole secrets as variables (set before
  // `env`, as Kubernetes' envFrom), and the registry credentials its image
  // is pulled with (imagePullSecrets, Secrets of type
  // kubernetes.io/dockerconfigjson).
  std::vector<SecretEnvVar> env_secrets;
  std::vector<SecretEnvFrom> env_from;
  std::vector<std::string> image_pull_secrets;
  std::vector<Volume> volumes;
  std::vector<VolumeMount> volume_mounts;
  // securityContext (the first container's over the pod's): the uid the
  // pod runs as inside its user namespace (unset: the image's user), and
  // whether a root uid is refused.
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  bool run_as_non_root = false;
  bool read_only_root = true;  // readOnlyRootFilesystem (default true).
  // hostNetwork: the pods share the node's network instead of their
  // tenant's; only for tenants a cluster-admin allows it
  // (allot.dev/host-network, core/host_paths.h).
  bool host_network = false;
  // The one port its pods serve on (the first container's first
  // containerPort; `port` in the compact template), 0: none. A process
  // pod is given a free port of its node's loopback as $PORT instead (it
  // must listen there); a container listens on this one in its network.
  // The agent reports where each pod is reachable (docs/notebooks.md).
  int32_t port = 0;

  bool operator==(const PodSet&) const = default;
};

// Where one pod runs: its node and the UUIDs of its GPUs or MIG slices.
struct PodPlacement {
  std::string node;
  std::vector<std::string> gpus;

  bool operator==(const PodPlacement&) const = default;
};

struct PodSetAssignment {
  std::string name;
  int32_t count = 0;  // Admitted pods (< PodSet.count when partial).
  std::map<std::string, std::string> flavors;  // resource -> flavor.
  // One entry per admitted pod, in pod index order. May be empty in input
  // (the scheduler then places the pods itself).
  std::vector<PodPlacement> placements;

  bool operator==(const PodSetAssignment&) const = default;
};

struct Admission {
  std::string cluster_queue;
  std::vector<PodSetAssignment> pod_set_assignments;
  // Parked (docs/parking.md): the quota is kept; pod sets without placements
  // gave their devices back (all, unless parked in part: a head keeps its).
  // Not in manifests: the server keeps it as the workload's state (Parked).
  bool parked = false;
  // Runs on capacity that parked workloads of its cohort tree gave back
  // (docs/parking.md): it holds no quota of its own and is the first to
  // go when they resume. The server keeps it (status.onParkedCapacity).
  bool on_parked_capacity = false;

  bool operator==(const Admission&) const = default;
};

struct Workload {
  std::string ns;  // The tenant.
  std::string name;
  std::string queue_name;                          // A LocalQueue in `ns`.
  Labels labels;                                   // metadata.labels
  std::map<std::string, std::string> annotations;  // metadata.annotations
  // "batch" | "training" | "inference" | "notebook" (IsWorkloadType): how
  // the workload is run, scaled and culled; it does not affect admission.
  std::string type = "batch";
  std::string priority_class_name;
  int32_t priority = 0;  // Resolved from the class, or given literally.
  int64_t creation_unix_ms = 0;
  // How often a failed gang is restarted whole before the workload fails
  // (spec.backoffLimit; a Job's spec.backoffLimit). 0: never.
  int32_t backoff_limit = 0;
  // The longest it may run once admitted, in seconds (Kueue's
  // spec.maximumExecutionTimeSeconds; a Job's activeDeadlineSeconds).
  // 0: no limit.
  int64_t max_execution_seconds = 0;
  // Kueue's spec.active: false holds the workload out of its queue until it
  // is active again; an admitted one is parked instead (docs/parking.md).
  bool active = true;
  // Its own kIdleAfterKey annotation: -1 none (its ClusterQueue's
  // applies), 0 never, else seconds.
  int64_t idle_after_seconds = -1;
  // It may run on capacity that parked workloads lent (kPreemptibleKey, its
  // own or its priority class's): it is then the first to go.
  bool preemptible = false;
  std::vector<PodSet> pod_sets;
  std::optional<Admission> admission;  // Set: already admitted.
  SourceRef source;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  std::string Key() const { return ns + "/" + name; }

  bool operator==(const Workload&) const = default;
};

struct MigSlice {
  std::string uuid;
  std::string profile;  // e.g. "1g.10gb"; consumed as nvidia.com/mig-1g.10gb.

  bool operator==(const MigSlice&) const = default;
};
struct Gpu {
  std::string uuid;
  std::string product;
  Quantity memory;
  bool healthy = true;
  // Non-empty: the GPU is MIG-partitioned and only its slices are offered.
  std::vector<MigSlice> mig;

  bool operator==(const Gpu&) const = default;
};
struct Node {
  std::string name;
  Labels labels;
  std::vector<Taint> taints;
  bool unschedulable = false;
  Quantity cpu;
  Quantity memory;
  std::vector<Gpu> gpus;
  SourceRef source;
  std::string generate_name{};  // As ResourceFlavor::generate_name.

  bool operator==(const Node&) const = default;
};

// allot.dev/v1 NodePool with a provider: a pool whose nodes come and go
// with demand (docs/autoscaling.md). A NodePool without one is only a
// compact form for identical Nodes, expanded when read.
struct PoolProvider {
  enum class Type { kExec, kLocal, kSimulated };
  Type type = Type::kSimulated;
  // kExec: the program and its arguments; called with "resume", "suspend"
  // or "list" appended and a JSON request on stdin.
  std::vector<std::string> command;
  // kSimulated (allot simulate): boot time, and the share of boots that
  // never register.
  int64_t boot_delay_ms = 0;
  double failure_rate = 0;

  bool operator==(const PoolProvider&) const = default;
};
struct NodePool {
  std::string name;
  // What each of its nodes is: labels (flavor labels among them), taints,
  // cpu, memory, and GPUs (product, memory; uuid empty). The name is "".
  Node node;
  int32_t min_nodes = 0;
  int32_t max_nodes = 0;
  std::string location = "onprem";  // "onprem", "edge" or "cloud".
  std::string zone;
  int64_t price_micros_per_node_hour = 0;
  // A node asked to resume that has not registered by then failed to boot.
  int64_t boot_timeout_ms = 600000;
  // A node without allocated GPUs this long is suspended.
  int64_t scale_down_delay_ms = 600000;
  // Disruption budget: at most this many of its nodes suspending at once
  // (scale-down; consolidation when it exists), and only inside one of
  // `windows` when any is given ("HH:MM-HH:MM" UTC, minutes of the day).
  int32_t max_disrupted = 1;
  std::vector<std::pair<int32_t, int32_t>> windows;
  // Headroom: GPUs kept free beyond the backlog, a constant and/or the
  // GPUs expected to arrive (at the rate the owner measures) within
  // headroom_window_ms, or within one boot time when that is 0.
  int32_t headroom_gpus = 0;
  bool headroom_arrivals = false;
  int64_t headroom_window_ms = 0;
  // Boot failures in a row that mark it degraded (tried after other pools).
  int32_t failure_threshold = 3;
  PoolProvider provider;
  SourceRef source;
  // Always "": a NodePool names its nodes after its name (the field is
  // here for the code every kind shares).
  std::string generate_name{};

  bool operator==(const NodePool&) const = default;
};

enum class FairSharingStrategy {
  kLessThanOrEqualToFinalShare,
  kLessThanInitialShare
};
// allot.dev/v1 SchedulerConfig.
struct SchedulerConfig {
  bool fair_sharing = false;
  std::vector<FairSharingStrategy> preemption_strategies = {
      FairSharingStrategy::kLessThanOrEqualToFinalShare,
      FairSharingStrategy::kLessThanInitialShare};

  bool operator==(const SchedulerConfig&) const = default;
};

// A whole cluster, as read from one or more manifest files.
struct Config {
  std::vector<ResourceFlavor> flavors;
  std::vector<Topology> topologies;
  std::vector<Image> images;
  std::vector<Cohort> cohorts;
  std::vector<ClusterQueue> cluster_queues;
  std::vector<LocalQueue> local_queues;
  std::vector<WorkloadPriorityClass> priority_classes;
  std::vector<Namespace> namespaces;
  std::vector<Node> nodes;
  std::vector<NodePool> node_pools;  // Autoscaled ones (with a provider).
  std::vector<Workload> workloads;
  SchedulerConfig scheduler;
  // Whether `scheduler` came from a SchedulerConfig document (so that a
  // document that sets the defaults, e.g. fairSharing.enable: false, is
  // told apart from no document at all).
  bool scheduler_declared = false;

  bool operator==(const Config&) const = default;
};

}  // namespace allot::core
