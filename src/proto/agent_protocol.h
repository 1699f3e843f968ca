// The agent protocol: what an agent and `allot serve` say to each other,
// as types with one encoder and one decoder each (docs/agent.md).
//
//   POST /api/v1/agents/sync   body AgentReport, answer SyncAnswer
//   POST /api/v1/agents/logs   body LogAnswers
//
// The server decodes strictly (a bad report is a 400 naming the field);
// the agent decodes the server's answers leniently (an entry it cannot
// read is skipped, so a newer server's extra fields do no harm). Pure: no
// I/O, any thread.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "proto/pod_network.h"

namespace allot::proto {

// A file a pod gets in one of its volumes (a secret volume's key): the
// agent writes it, readable by the pod only, and mounts the volume
// read-only where the pod set's volumeMounts say.
struct PodFile {
  std::string volume;  // The pod set's volume name.
  std::string path;    // Relative to the volume: the Secret's key.
  std::string content;

  bool operator==(const PodFile&) const = default;
};

// A pod the server wants on a node.
struct DesiredPod {
  std::string id;        // ns/name/aATTEMPT/podset/index
  std::string workload;  // ns/name
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_dir;
  // The OCI image (empty: a process on the host) and its pull policy
  // (Always, IfNotPresent, Never; empty: Kubernetes' default).
  std::string image;
  std::string image_pull_policy;
  std::vector<std::string> gpus;  // GPU or MIG UUIDs.
  int64_t grace_ms = 30000;
  int64_t simulated_runtime_ms = 0;  // allot.dev/simulated-runtime
  // The pod's requests; the agent makes them its cgroup's limits. 0: none.
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  // The pod set's volumes and the first container's mounts of them, and
  // its security context (core::PodSet): container runtime only.
  std::vector<core::Volume> volumes;
  std::vector<core::VolumeMount> mounts;
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  bool run_as_non_root = false;
  bool read_only_root = true;
  // hostNetwork, its tenant allowed it: the node's network, not the
  // tenant's (container runtime; processes always have the node's).
  bool host_network = false;
  // The pod set's port (core::PodSet::port), 0: none. The agent reports
  // where the pod serves (PodReport::endpoint).
  int32_t port = 0;
  // Resolved from the tenant's Secrets when the pod is sent (never
  // stored): secret volumes' files, and the registry credentials to pull
  // `image` with, as a container auth file ({"auths": {REGISTRY:
  // {"auth": base64(user:password)}}}; empty: anonymous).
  std::vector<PodFile> files;
  std::string registry_auth;
  // Set: the pod cannot start (a Secret it needs is gone); the agent fails
  // it at once with this reason and exit code 126, as a setup failure.
  std::string start_error;

  bool operator==(const DesiredPod&) const = default;
};

// What an agent reports of one pod it runs (exited false) or ran.
struct PodReport {
  std::string id;
  bool exited = false;
  int exit_code = 0;
  int signal = 0;
  bool stopped = false;  // Ended because the server asked.
  std::string last_lines;  // At most kMaxLastLines bytes are kept.
  std::string reason;      // "OOMKilled: ..." when the agent knows more.
  // Running, but still getting its image (the container runtime's pull):
  // it does not count as started, and the time is not run time.
  bool pulling = false;
  // While pulling: the image's bytes fetched so far, and in all (0: not
  // known).
  int64_t pulled_bytes = 0;
  int64_t pull_total_bytes = 0;
  // Running with a port (DesiredPod::port): "HOST:PORT" where the node's
  // own address space reaches it (loopback for a process, the pod's
  // address for a container on its tenant's network). Empty: none yet.
  std::string endpoint{};

  bool operator==(const PodReport&) const = default;
};

// One reading of one GPU (agent::GpuSample, with its NVML index).
struct GpuTelemetry {
  std::string uuid;
  int index = 0;  // NVML's index on its node: DCGM's "gpu" label.
  int utilization_pct = 0;
  int temperature_c = 0;
  double power_watts = 0;
  int64_t memory_used_bytes = 0;
  int64_t ecc_dbe_volatile = 0;
  int64_t last_xid = 0;

  bool operator==(const GpuTelemetry&) const = default;
};

// The body of a sync: the node as the agent sees it, and its pods.
struct AgentReport {
  core::Node node;      // name, labels, cpu, memory, gpus.
  std::string address;  // Where its pods are reachable (MASTER_ADDR).
  bool simulated = false;  // Simulated GPUs.
  std::vector<PodReport> pods;
  std::vector<GpuTelemetry> gpu_samples;  // Empty: none this time.
  // Its tenants' pod network (cidr empty: none; node and address unused).
  PodNetwork pod_network;

  bool operator==(const AgentReport&) const = default;
};

// A piece of a pod's log the server asks for.
struct LogRequest {
  int64_t id = 0;
  std::string pod;
  int64_t offset = -1;  // -1: the last `limit` bytes.
  int64_t limit = 64 << 10;

  bool operator==(const LogRequest&) const = default;
};

// The answer to a sync: the pods the node should run now.
struct SyncAnswer {
  std::string node;
  // Answers can cross (a held poll and an exit report): the agent applies
  // only the newest.
  int64_t revision = 0;
  std::vector<DesiredPod> pods;
  std::vector<LogRequest> log_requests;
  // The other nodes' tenant pod networks (the receiving agent routes to
  // them and lets each tenant's peers in to that tenant's pods only).
  std::vector<PodNetwork> peers;

  bool operator==(const SyncAnswer&) const = default;
};

// The agent's answer to log requests.
struct LogAnswer {
  int64_t id = 0;
  bool exists = false;
  int64_t offset = 0;
  int64_t next_offset = 0;
  std::string data;

  bool operator==(const LogAnswer&) const = default;
};
struct LogAnswers {
  std::string node;
  std::vector<LogAnswer> logs;

  bool operator==(const LogAnswers&) const = default;
};

inline constexpr size_t kMaxLastLines = 4096;
inline constexpr size_t kMaxReason = 512;
inline constexpr size_t kMaxPods = 100000;

boost::json::object EncodeAgentReport(const AgentReport& r);
// Strict: unknown fields, a node that is not one allot.dev/v1 Node, a pod
// without an id, or a GPU sample out of range or of a GPU the node does
// not have are InvalidArgument naming the field. (Names are not checked
// against the server's rules here: the server does that.)
Result<AgentReport> DecodeAgentReport(const std::string& body);

boost::json::object EncodeDesiredPod(const DesiredPod& d);
boost::json::object EncodeSyncAnswer(const SyncAnswer& a);
// Lenient: pods without a string id and log requests without an integer
// id and a pod are skipped.
SyncAnswer DecodeSyncAnswer(const boost::json::value& v);

boost::json::object EncodeLogAnswers(const LogAnswers& a);
// The node and the list must be there; entries without an integer id are
// skipped.
Result<LogAnswers> DecodeLogAnswers(const std::string& body);

}  // namespace allot::proto
