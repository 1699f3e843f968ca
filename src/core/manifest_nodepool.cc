// The allot.dev/v1 NodePool kind: a compact form for many identical nodes,
// expanded into Node objects at parse time (so everything after parsing,
// ValidateConfig and the scheduler included, sees plain Nodes).
//
//   apiVersion: allot.dev/v1
//   kind: NodePool
//   metadata: {name: philly}
//   spec:
//     count: 352            # nodes, 1..20000 (all pools of a parse together)
//     gpus: 8               # GPUs per node, 0..16
//     product: V100         # GPU model (optional)
//     gpuMemory: 32Gi       # per GPU (optional)
//     cpu: "64"             # per node (optional)
//     memory: 512Gi         # per node (optional)
//     labels: {gpu.nvidia.com/model: V100}   # on every node
//     taints: [...]         # as a Node's spec.taints
//
// Node i (0-based) is named NAME-i, i zero-padded to the width of count-1
// (philly-000 ... philly-351), and its GPUs are GPU-NAME-i-g. metadata.labels
// are node labels too (spec.labels wins on a clash). Every expanded Node
// records the NodePool document as its source, so a duplicate node name or
// GPU names the pool.
//
// With spec.provider the pool is autoscaled (docs/autoscaling.md): it is
// kept as a core::NodePool in Config::node_pools, its nodes come and go
// between minNodes and maxNodes, and nothing is expanded:
//
//   spec:
//     minNodes: 0           # 0..maxNodes
//     maxNodes: 16          # 1..20000
//     gpus: 8               # and product, gpuMemory, cpu, memory, labels,
//                           # taints: what each node is, as above
//     provider: {type: exec, command: [/usr/local/sbin/pool-h100]}
//               # or {type: local, bootDelay: 20s} (agents here),
//               # or {type: simulated, bootDelay: 4m,
//               # failureRate: "0.05"} (allot simulate)
//     location: cloud       # onprem (default), edge or cloud
//     zone: us-east-1a
//     pricePerNodeHour: "98.32"
//     bootTimeout: 10m      # resumed, not registered by then: failed
//     scaleDownDelay: 10m   # no allocated GPU this long: suspended
//     disruptionBudget: {maxNodes: 1, windows: ["22:00-06:00"]}   # UTC
//     headroom: {gpus: 8, arrivals: true}   # or arrivals: 30m
//     failureThreshold: 3   # boot failures in a row: degraded
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "core/manifest_internal.h"
#include "core/names.h"

namespace allot::core::internal {

namespace {
// Bounds on what documents may expand into: a small body must not become
// gigabytes (a fuzzer found `count: 100000, gpus: 4096` taking 2 GB, and
// the server parses a body before it authorizes it).
constexpr int32_t kMaxPoolNodes = 20000;       // Over all pools of one parse.
constexpr int32_t kMaxPoolGpusPerNode = 16;
Status GetDurationMs(const Val& v, int64_t* out) {
  if (v.unset()) return Status::Ok();
  std::string text;
  ALLOT_RETURN_IF_ERROR(v.Get(&text));
  Result<int64_t> secs = ParseDurationSeconds(text);
  if (!secs.ok()) return v.Error(secs.status().message());
  *out = *secs * 1000;
  return Status::Ok();
}

// "HH:MM-HH:MM" in minutes of the day; the end may be before the start
// (across midnight), never equal to it.
Status ParseWindow(const Val& v, std::pair<int32_t, int32_t>* out) {
  std::string s;
  ALLOT_RETURN_IF_ERROR(v.Get(&s));
  auto minute = [](std::string_view t, int32_t* m) {
    if (t.size() != 5 || t[2] != ':') return false;
    for (size_t i : {0, 1, 3, 4}) {
      if (t[i] < '0' || t[i] > '9') return false;
    }
    const int32_t h = (t[0] - '0') * 10 + (t[1] - '0');
    const int32_t mm = (t[3] - '0') * 10 + (t[4] - '0');
    if (h > 23 || mm > 59) return false;
    *m = h * 60 + mm;
    return true;
  };
  const size_t dash = s.find('-');
  if (dash == std::string::npos ||
      !minute(std::string_view(s).substr(0, dash), &out->first) ||
      !minute(std::string_view(s).substr(dash + 1), &out->second) ||
      out->first == out->second) {
    return v.Error("expected a window \"HH:MM-HH:MM\" (UTC, two different "
                   "times), got " + Quote(s));
  }
  return Status::Ok();
}

Status ParseProvider(const Val& v, PoolProvider* out) {
  ALLOT_RETURN_IF_ERROR(v.CheckFields(
      {"type", "command", "bootDelay", "failureRate"}));
  ALLOT_RETURN_IF_ERROR(v["type"].Require());
  ALLOT_RETURN_IF_ERROR(v["type"].GetEnum(
      EnumTable<PoolProvider::Type>{{"exec", PoolProvider::Type::kExec},
                                    {"local", PoolProvider::Type::kLocal},
                                    {"simulated", PoolProvider::Type::kSimulated}},
      &out->type));
  const bool exec = out->type == PoolProvider::Type::kExec;
  const bool sim = out->type == PoolProvider::Type::kSimulated;
  if (exec) {
    ALLOT_RETURN_IF_ERROR(v["command"].Require());
    ALLOT_RETURN_IF_ERROR(v["command"].Get(&out->command));
    if (out->command.empty() || out->command[0].empty()) {
      return v["command"].Error("give the program to run (and its arguments)");
    }
  } else if (!v["command"].unset()) {
    return v["command"].Error("is for type exec");
  }
  if (!sim && !v["failureRate"].unset()) return v["failureRate"].Error("is for type simulated");
  if (exec && !v["bootDelay"].unset()) {
    return v["bootDelay"].Error("is for types simulated and local (a program boots as it boots)");
  }
  ALLOT_RETURN_IF_ERROR(GetDurationMs(v["bootDelay"], &out->boot_delay_ms));
  if (!v["failureRate"].unset()) {
    Quantity q;
    ALLOT_RETURN_IF_ERROR(v["failureRate"].GetNonNegative(&q));
    if (q.milli() > 1000) {
      return v["failureRate"].Error("must be between 0 and 1, got " + q.ToString());
    }
    out->failure_rate = double(q.milli()) / 1000.0;
  }
  return Status::Ok();
}

Status ParseAutoscaling(const Val& spec, NodePool* pool) {
  ALLOT_RETURN_IF_ERROR(spec["maxNodes"].Require());
  ALLOT_RETURN_IF_ERROR(spec["maxNodes"].Get(&pool->max_nodes));
  if (pool->max_nodes < 1 || pool->max_nodes > kMaxPoolNodes) {
    return spec["maxNodes"].Error("must be between 1 and " +
                                  std::to_string(kMaxPoolNodes) + ", got " +
                                  std::to_string(pool->max_nodes));
  }
  ALLOT_RETURN_IF_ERROR(spec["minNodes"].Get(&pool->min_nodes));
  if (pool->min_nodes < 0 || pool->min_nodes > pool->max_nodes) {
    return spec["minNodes"].Error("must be between 0 and maxNodes (" +
                                  std::to_string(pool->max_nodes) + "), got " +
                                  std::to_string(pool->min_nodes));
  }
  ALLOT_RETURN_IF_ERROR(ParseProvider(spec["provider"], &pool->provider));
  if (!spec["location"].unset()) {
    ALLOT_RETURN_IF_ERROR(spec["location"].Get(&pool->location));
    if (pool->location != "onprem" && pool->location != "edge" &&
        pool->location != "cloud") {
      return spec["location"].Error("expected onprem, edge or cloud, got " +
                                    Quote(pool->location));
    }
  }
  ALLOT_RETURN_IF_ERROR(spec["zone"].Get(&pool->zone));
  if (!spec["pricePerNodeHour"].unset()) {
    ALLOT_RETURN_IF_ERROR(ParseMicros(spec["pricePerNodeHour"],
                                      &pool->price_micros_per_node_hour));
  }
  ALLOT_RETURN_IF_ERROR(GetDurationMs(spec["bootTimeout"], &pool->boot_timeout_ms));
  if (pool->boot_timeout_ms <= 0) {
    return spec["bootTimeout"].Error("must be longer than 0s");
  }
  ALLOT_RETURN_IF_ERROR(
      GetDurationMs(spec["scaleDownDelay"], &pool->scale_down_delay_ms));
  const Val budget = spec["disruptionBudget"];
  ALLOT_RETURN_IF_ERROR(budget.CheckFields({"maxNodes", "windows"}));
  ALLOT_RETURN_IF_ERROR(budget["maxNodes"].Get(&pool->max_disrupted));
  if (pool->max_disrupted < 0) {
    return budget["maxNodes"].Error("must not be negative (0: never suspend)");
  }
  std::vector<Val> windows;
  if (!budget["windows"].unset()) ALLOT_RETURN_IF_ERROR(budget["windows"].Items(&windows));
  for (const Val& w : windows) {
    ALLOT_RETURN_IF_ERROR(ParseWindow(w, &pool->windows.emplace_back()));
  }
  const Val headroom = spec["headroom"];
  ALLOT_RETURN_IF_ERROR(headroom.CheckFields({"gpus", "arrivals"}));
  ALLOT_RETURN_IF_ERROR(headroom["gpus"].Get(&pool->headroom_gpus));
  if (pool->headroom_gpus < 0) {
    return headroom["gpus"].Error("must not be negative, got " +
                                  std::to_string(pool->headroom_gpus));
  }
  // arrivals: true (one boot time's worth) or a window ("30m").
  std::string arrivals;
  ALLOT_RETURN_IF_ERROR(headroom["arrivals"].Get(&arrivals));
  if (arrivals == "true") {
    pool->headroom_arrivals = true;
  } else if (!arrivals.empty() && arrivals != "false") {
    Result<int64_t> secs = ParseDurationSeconds(arrivals);
    if (!secs.ok() || *secs <= 0) {
      return headroom["arrivals"].Error(
          "expected true, false or a window such as 30m (the arrivals to keep room for), got " +
          Quote(arrivals));
    }
    pool->headroom_arrivals = true;
    pool->headroom_window_ms = *secs * 1000;
  }
  ALLOT_RETURN_IF_ERROR(spec["failureThreshold"].Get(&pool->failure_threshold));
  if (pool->failure_threshold < 1) {
    return spec["failureThreshold"].Error("must be at least 1, got " +
                                          std::to_string(pool->failure_threshold));
  }
  return Status::Ok();
}

}  // namespace

Status ParseNodePool(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields));
  if (d.name.empty()) {
    return d.metadata["generateName"].Error(
        "a NodePool names its nodes after metadata.name: give a name");
  }
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.Require());
  ALLOT_RETURN_IF_ERROR(spec.CheckFields(
      {"count", "gpus", "product", "gpuMemory", "cpu", "memory", "labels",
       "taints", "minNodes", "maxNodes", "provider", "location", "zone",
       "pricePerNodeHour", "bootTimeout", "scaleDownDelay",
       "disruptionBudget", "headroom", "failureThreshold"}));
  const bool autoscaled = !spec["provider"].unset();
  if (!autoscaled) {
    for (const char* f : {"minNodes", "maxNodes", "location", "zone",
                          "pricePerNodeHour", "bootTimeout", "scaleDownDelay",
                          "disruptionBudget", "headroom", "failureThreshold"}) {
      if (!spec[f].unset()) {
        return spec[f].Error(
            "is for an autoscaled pool: give spec.provider too (or remove "
            "it: a pool without a provider is `count` fixed nodes)");
      }
    }
  }
  int32_t count = 0, gpus = 0;
  if (autoscaled) {
    if (!spec["count"].unset()) {
      return spec["count"].Error(
          "an autoscaled pool (spec.provider) sizes itself between minNodes "
          "and maxNodes: remove count");
    }
  } else {
    ALLOT_RETURN_IF_ERROR(spec["count"].Require());
    ALLOT_RETURN_IF_ERROR(spec["count"].Get(&count));
  }
  if (!autoscaled && (count < 1 || count > kMaxPoolNodes)) {
    return spec["count"].Error("must be between 1 and " +
                               std::to_string(kMaxPoolNodes) + ", got " +
                               std::to_string(count));
  }
  if (out->nodes.size() + size_t(count) > size_t(kMaxPoolNodes)) {
    return spec["count"].Error(
        "would make " + std::to_string(out->nodes.size() + size_t(count)) +
        " nodes; NodePools may bring at most " + std::to_string(kMaxPoolNodes) +
        " nodes in all");
  }
  ALLOT_RETURN_IF_ERROR(spec["gpus"].Get(&gpus));
  if (gpus < 0 || gpus > kMaxPoolGpusPerNode) {
    return spec["gpus"].Error("must be between 0 and " +
                              std::to_string(kMaxPoolGpusPerNode) + ", got " +
                              std::to_string(gpus));
  }
  Node proto;
  proto.labels = d.labels;
  proto.source = d.source;
  std::string product;
  Quantity gpu_memory;
  ALLOT_RETURN_IF_ERROR(spec["product"].Get(&product));
  ALLOT_RETURN_IF_ERROR(spec["gpuMemory"].GetNonNegative(&gpu_memory));
  ALLOT_RETURN_IF_ERROR(spec["cpu"].GetNonNegative(&proto.cpu));
  ALLOT_RETURN_IF_ERROR(spec["memory"].GetNonNegative(&proto.memory));
  Labels labels;
  ALLOT_RETURN_IF_ERROR(spec["labels"].Get(&labels));
  for (auto& [k, v] : labels) proto.labels[k] = v;
  ALLOT_RETURN_IF_ERROR(ParseTaints(spec["taints"], &proto.taints));
  if (autoscaled) {
    NodePool pool;
    pool.name = d.name;
    pool.source = d.source;
    pool.node = std::move(proto);
    pool.node.gpus.resize(size_t(gpus));
    for (Gpu& g : pool.node.gpus) {
      g.product = product;
      g.memory = gpu_memory;
    }
    ALLOT_RETURN_IF_ERROR(ParseAutoscaling(spec, &pool));
    out->node_pools.push_back(std::move(pool));
    return Status::Ok();
  }
  for (int32_t i = 0; i < count; ++i) {
    Node& n = out->nodes.emplace_back(proto);
    n.name = PoolNodeName(d.name, i, count);
    n.gpus.reserve(size_t(gpus));
    for (int32_t g = 0; g < gpus; ++g) {
      Gpu& gpu = n.gpus.emplace_back();
      gpu.uuid = PoolGpuUuid(n.name, g);
      gpu.product = product;
      gpu.memory = gpu_memory;
    }
  }
  return Status::Ok();
}

}  // namespace allot::core::internal
