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
#include <string>

#include "core/manifest_internal.h"

namespace allot::core::internal {

namespace {
// Bounds on what documents may expand into: a small body must not become
// gigabytes (a fuzzer found `count: 100000, gpus: 4096` taking 2 GB, and
// the server parses a body before it authorizes it).
constexpr int32_t kMaxPoolNodes = 20000;       // Over all pools of one parse.
constexpr int32_t kMaxPoolGpusPerNode = 16;
}  // namespace

Status ParseNodePool(const Doc& d, Config* out) {
  ALLOT_RETURN_IF_ERROR(d.root.CheckFields(kTopFields));
  if (d.name.empty()) {
    return d.metadata["generateName"].Error(
        "a NodePool names its nodes after metadata.name: give a name");
  }
  Val spec = d.root["spec"];
  ALLOT_RETURN_IF_ERROR(spec.Require());
  ALLOT_RETURN_IF_ERROR(
      spec.CheckFields({"count", "gpus", "product", "gpuMemory", "cpu",
                        "memory", "labels", "taints"}));
  int32_t count = 0, gpus = 0;
  ALLOT_RETURN_IF_ERROR(spec["count"].Require());
  ALLOT_RETURN_IF_ERROR(spec["count"].Get(&count));
  if (count < 1 || count > kMaxPoolNodes) {
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
  const size_t width = std::to_string(count - 1).size();
  for (int32_t i = 0; i < count; ++i) {
    std::string idx = std::to_string(i);
    idx.insert(0, width - idx.size(), '0');
    Node& n = out->nodes.emplace_back(proto);
    n.name = d.name + "-" + idx;
    n.gpus.reserve(size_t(gpus));
    for (int32_t g = 0; g < gpus; ++g) {
      Gpu& gpu = n.gpus.emplace_back();
      gpu.uuid = "GPU-" + n.name + "-" + std::to_string(g);
      gpu.product = product;
      gpu.memory = gpu_memory;
    }
  }
  return Status::Ok();
}

}  // namespace allot::core::internal
