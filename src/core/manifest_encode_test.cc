// The round trip: ParseManifests(serialize(EncodeX(x))) == x, for the
// example and e2e manifests, for hand-built objects that set every optional
// field, and the JSON bodies an HTTP client sends.
//
// Equality is the model's operator== (core/model.h), which ignores `source`.
#include "core/manifest_encode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/generate_name.h"
#include "core/manifest.h"

namespace allot::core {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// ---- Helpers ---------------------------------------------------------------

// The repository root: $ALLOT_SOURCE_DIR, else derived from this file's
// path (CMake compiles sources by absolute path).
fs::path SourceRoot() {
  if (const char* dir = std::getenv("ALLOT_SOURCE_DIR"); dir && *dir) {
    return dir;
  }
  std::string file = __FILE__;
  size_t pos = file.rfind("src/core/manifest_encode_test.cc");
  return pos == std::string::npos ? fs::path(".")
                                  : fs::path(file.substr(0, pos));
}

// Every object of `c` as one document each, joined by "\n---\n", with
// the Kueue kinds in version `v`.
std::string EncodeAll(const Config& c, KueueVersion v = kDefaultKueueVersion) {
  std::string out;
  auto add = [&](const json::object& o) {
    if (!out.empty()) out += "\n---\n";
    out += json::serialize(o);
  };
  for (const auto& x : c.topologies) add(EncodeTopology(x, v));
  for (const auto& x : c.flavors) add(EncodeFlavor(x, v));
  for (const auto& x : c.cohorts) add(EncodeCohort(x, v));
  for (const auto& x : c.cluster_queues) add(EncodeClusterQueue(x, v));
  for (const auto& x : c.local_queues) add(EncodeLocalQueue(x, v));
  for (const auto& x : c.priority_classes) add(EncodePriorityClass(x, v));
  for (const auto& x : c.namespaces) add(EncodeNamespace(x));
  for (const auto& x : c.nodes) add(EncodeNode(x));
  for (const auto& x : c.node_pools) add(EncodeNodePool(x));
  for (const auto& x : c.workloads) add(EncodeWorkload(x));
  add(EncodeSchedulerConfig(c.scheduler));
  return out;
}

// Parses the encoding of `c` (and validates it when `validate`) as the
// server reads its store back: trusted, so that label strings outside
// Kubernetes' syntax test the escaping.
Config RoundTrip(const Config& c, bool validate,
                 KueueVersion v = kDefaultKueueVersion) {
  const std::string text = EncodeAll(c, v);
  Config out;
  Status s = ParseManifests(text, "encoded.json", &out, ParseLimits::Trusted());
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << text;
  if (s.ok() && validate) {
    s = ValidateConfig(&out);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return out;
}

// Element-wise equality, showing both encodings of a differing object.
template <typename T, typename Encode>
void ExpectSame(const char* kind, const std::vector<T>& want,
                const std::vector<T>& got, Encode encode) {
  ASSERT_EQ(want.size(), got.size()) << kind;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(want[i] == got[i])
        << kind << " " << i << " differs after the round trip\n  want: "
        << json::serialize(encode(want[i]))
        << "\n  got:  " << json::serialize(encode(got[i]));
  }
}

void ExpectSameConfig(const Config& want, const Config& got) {
  auto enc = [](auto encode) {
    return [encode](const auto& x) { return encode(x, kDefaultKueueVersion); };
  };
  ExpectSame("ResourceFlavor", want.flavors, got.flavors, enc(EncodeFlavor));
  ExpectSame("Topology", want.topologies, got.topologies, enc(EncodeTopology));
  ExpectSame("Cohort", want.cohorts, got.cohorts, enc(EncodeCohort));
  ExpectSame("ClusterQueue", want.cluster_queues, got.cluster_queues,
             enc(EncodeClusterQueue));
  ExpectSame("LocalQueue", want.local_queues, got.local_queues,
             enc(EncodeLocalQueue));
  ExpectSame("WorkloadPriorityClass", want.priority_classes,
             got.priority_classes, enc(EncodePriorityClass));
  ExpectSame("Namespace", want.namespaces, got.namespaces, EncodeNamespace);
  ExpectSame("Node", want.nodes, got.nodes, EncodeNode);
  ExpectSame("NodePool", want.node_pools, got.node_pools, EncodeNodePool);
  ExpectSame("Workload", want.workloads, got.workloads, EncodeWorkload);
  EXPECT_TRUE(want.scheduler == got.scheduler)
      << json::serialize(EncodeSchedulerConfig(got.scheduler));
  EXPECT_TRUE(got.scheduler_declared);  // EncodeAll always writes one.
  Config declared = want;
  declared.scheduler_declared = true;
  EXPECT_TRUE(declared == got);
}

Quantity Q(const char* text) { return *Quantity::Parse(text); }

// The parser names an unnamed pod set "main".
PodSet MainPodSet() {
  PodSet ps;
  ps.name = "main";
  return ps;
}

// ---- (a) The shipped manifests ---------------------------------------------

// examples/demo.yaml and every good e2e case (input.yaml, or all *.yaml of
// the case in name order, as tests/e2e/dry_run_test.sh reads them).
std::vector<std::pair<std::string, std::vector<fs::path>>> GoodInputs() {
  const fs::path root = SourceRoot();
  std::vector<std::pair<std::string, std::vector<fs::path>>> inputs = {
      {"demo", {root / "examples" / "demo.yaml"}},
      {"sim/philly-autoscale", {root / "examples" / "sim" / "philly-autoscale.yaml"}}};
  std::vector<fs::path> cases;
  std::error_code ec;
  for (const auto& e :
       fs::directory_iterator(root / "tests" / "e2e" / "cases", ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("bad-", 0) != 0) cases.push_back(e);
  }
  // examples/kueue: each example on its nodes.yaml.
  for (const auto& e : fs::directory_iterator(root / "examples" / "kueue", ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".yaml" && name != "nodes.yaml" &&
        name != "unsupported-kinds.yaml") {
      inputs.push_back({"kueue/" + name, {root / "examples" / "kueue" / "nodes.yaml", e.path()}});
    }
  }
  std::sort(cases.begin(), cases.end());
  for (const fs::path& dir : cases) {
    std::vector<fs::path> files;
    if (fs::exists(dir / "input.yaml")) {
      files.push_back(dir / "input.yaml");
    } else {
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ".yaml") files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
    }
    inputs.emplace_back(dir.filename().string(), files);
  }
  return inputs;
}

TEST(ManifestEncodeTest, ShippedManifestsRoundTrip) {
  const auto inputs = GoodInputs();
  ASSERT_GE(inputs.size(), 20u) << "e2e cases not found under " << SourceRoot();
  for (const auto& [name, files] : inputs) {
    SCOPED_TRACE(name);
    Config c;
    for (const fs::path& f : files) {
      Status s = LoadManifestFile(f.string(), &c);
      ASSERT_TRUE(s.ok()) << s.message();
    }
    // As the dry-run names generateName objects.
    Status s = GenerateNames(&c, nullptr, SeededRandom(0));
    ASSERT_TRUE(s.ok()) << s.message();
    s = ValidateConfig(&c);
    ASSERT_TRUE(s.ok()) << s.message();
    for (KueueVersion v : {KueueVersion::kV1beta1, KueueVersion::kV1beta2}) {
      SCOPED_TRACE(KueueApiVersionOf(v));
      Config back = RoundTrip(c, /*validate=*/true, v);
      ExpectSameConfig(c, back);
      // The encoding is a fixed point: encoding again gives the same bytes.
      EXPECT_EQ(EncodeAll(back, v), EncodeAll(c, v));
    }
  }
}

// ---- (b) Hand-built objects with every optional field
// ------------------------

// Strings that YAML would read as something else, or that need escapes.
const std::vector<std::string> kTrickyStrings = {
    "",       "null",    "~",           "true",      "no",
    "0x10",   "1e3",     "- a",         "a: b",      "# c",
    "'q'",    "\"dq\"",  "back\\slash", "tab\there", "new\nline",
    "cr\r\n", "\x01ctl", "é ü 日本",    "rocket 🚀",  "{x}",
    "[y]",    "*alias",  "&anchor",     "!tag",      "%pct",
    "@at",    "`tick`",  " lead",       "trail ",    "---",
    "...",    "a/b=c,d", "<<",          "?",         "|"};

Labels TrickyMap(const std::string& prefix) {
  Labels m;
  for (size_t i = 0; i < kTrickyStrings.size(); ++i) {
    m[prefix + std::to_string(i) + kTrickyStrings[i]] = kTrickyStrings[i];
  }
  return m;
}

std::vector<Taint> AllTaints() {
  return {{"dedicated", "gpu", TaintEffect::kNoSchedule},
          {"spot", "", TaintEffect::kPreferNoSchedule},
          {"maintenance", "true", TaintEffect::kNoExecute}};
}

// Every operator with every effect (and none); Exists with an empty key.
std::vector<Toleration> AllTolerations() {
  std::vector<Toleration> out;
  const std::optional<TaintEffect> effects[] = {
      std::nullopt, TaintEffect::kNoSchedule, TaintEffect::kPreferNoSchedule,
      TaintEffect::kNoExecute};
  for (const auto& e : effects) {
    out.push_back({"dedicated", TolerationOperator::kEqual, "gpu", e});
    out.push_back({"dedicated", TolerationOperator::kEqual, "", e});
    out.push_back({"spot", TolerationOperator::kExists, "", e});
    out.push_back({"", TolerationOperator::kExists, "", e});
  }
  return out;
}

std::vector<ResourceGroup> Groups() {
  ResourceGroup gpus;
  gpus.covered_resources = {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"};
  gpus.flavors = {
      {"h100",
       {{"nvidia.com/gpu", Q("8"), Q("4"), Q("2")},
        {"nvidia.com/mig-1g.10gb", Q("0"), Q("0"), std::nullopt}}},
      {"a100",
       {{"nvidia.com/gpu", Q("16"), std::nullopt, Q("16")},
        {"nvidia.com/mig-1g.10gb", Q("7"), std::nullopt, std::nullopt}}}};
  ResourceGroup cpu;
  cpu.covered_resources = {"cpu", "memory"};
  cpu.flavors = {{"cpu-only",
                  {{"cpu", Q("1.5"), Q("500m"), Q("1")},
                   {"memory", Q("64Gi"), Q("1Ti"), Q("1000")}}}};
  ResourceGroup empty;  // Covers a quota-only resource with no flavor yet.
  empty.covered_resources = {"example.com/licenses"};
  return {gpus, cpu, empty};
}

std::vector<ResourceFlavor> Flavors() {
  ResourceFlavor f;
  f.name = "h100";
  f.node_labels = TrickyMap("l");
  f.node_taints = AllTaints();
  f.tolerations = AllTolerations();
  f.price_micros_per_hour = {{"nvidia.com/gpu", 2500000},
                             {"cpu", 125},
                             {"memory", 0},
                             {"a", 1},
                             {"b", 1000000},
                             {"c", 100000},
                             {"max", 999999999999999999}};
  ResourceFlavor bare;
  bare.name = "bare";
  return {f, bare};
}

std::vector<Cohort> Cohorts() {
  Cohort root;
  root.name = "org";
  Cohort child;
  child.name = "research";
  child.parent = "org";
  child.resource_groups = Groups();
  child.fair_weight_milli = 500;  // weight 0.5
  Cohort zero;
  zero.name = "zero";
  zero.parent = "research";
  zero.fair_weight_milli = 0;
  return {root, child, zero};
}

// Every combination of the preemption enums, cycling the other fields.
std::vector<ClusterQueue> ClusterQueues() {
  std::vector<ClusterQueue> out;
  const WithinClusterQueue within[] = {
      WithinClusterQueue::kNever, WithinClusterQueue::kLowerPriority,
      WithinClusterQueue::kLowerOrNewerEqualPriority};
  const ReclaimWithinCohort reclaim[] = {ReclaimWithinCohort::kNever,
                                         ReclaimWithinCohort::kLowerPriority,
                                         ReclaimWithinCohort::kAny};
  const BorrowWithinCohortPolicy borrow[] = {
      BorrowWithinCohortPolicy::kNever,
      BorrowWithinCohortPolicy::kLowerPriority};
  const std::optional<int32_t> thresholds[] = {
      std::nullopt, 0, -100, std::numeric_limits<int32_t>::max()};
  const FungibilityPolicy fungibility[] = {FungibilityPolicy::kMayStopSearch,
                                           FungibilityPolicy::kTryNextFlavor};
  const StopPolicy stops[] = {StopPolicy::kNone, StopPolicy::kHold,
                              StopPolicy::kHoldAndDrain};
  const int64_t weights[] = {1000, 500, 0, 1500, 2000000};
  using Op = LabelSelectorRequirement::Op;
  LabelSelector full;
  full.match_labels = {{"tier", "gold"}, {"x", ""}};
  full.match_expressions = {{"team", Op::kIn, {"a", "b"}},
                            {"env", Op::kNotIn, {"prod"}},
                            {"owner", Op::kExists, {}},
                            {"legacy", Op::kDoesNotExist, {}}};
  const std::optional<LabelSelector> selectors[] = {std::nullopt,
                                                    LabelSelector{}, full};
  int i = 0;
  for (auto w : within) {
    for (auto r : reclaim) {
      for (auto b : borrow) {
        for (auto t : thresholds) {
          ClusterQueue cq;
          cq.name = "cq-" + std::to_string(i);
          cq.cohort = i % 4 == 0 ? "" : "research";
          cq.namespace_selector = selectors[i % 3];
          if (i % 2 == 0) cq.resource_groups = Groups();
          cq.queueing_strategy = i % 2 ? QueueingStrategy::kStrictFIFO
                                       : QueueingStrategy::kBestEffortFIFO;
          cq.preemption = {w, r, b, t};
          cq.flavor_fungibility = {fungibility[i % 2], fungibility[i / 2 % 2]};
          if (i % 4 == 3) {  // Both TryNextFlavor: a preference may be set.
            cq.flavor_fungibility.preference =
                i % 8 == 3 ? FungibilityPreference::kBorrowingOverPreemption
                           : FungibilityPreference::kPreemptionOverBorrowing;
          }
          cq.fair_weight_milli = weights[i % 5];
          cq.stop_policy = stops[i % 3];
          out.push_back(cq);
          ++i;
        }
      }
    }
  }
  return out;
}

std::vector<Node> Nodes() {
  Node n;
  n.name = "gpu-01";
  n.labels = {{kTopologyRackLabel, "r1"}, {"allot.dev/gpu-product", "H100"}};
  n.taints = AllTaints();
  n.unschedulable = true;
  n.cpu = Q("95500m");
  n.memory = Q("1Ti");
  n.gpus = {
      {"GPU-0", "NVIDIA H100 80GB HBM3", Q("80Gi"), true, {}},
      {"GPU-1", "", Q("0"), false, {}},
      {"GPU-2",
       "NVIDIA A100",
       Q("40Gi"),
       true,
       {{"MIG-2-0", "1g.10gb"}, {"MIG-2-1", "3g.40gb"}}},
      {"GPU-3", "NVIDIA A100", Q("40Gi"), false, {{"MIG-3-0", "7g.80gb"}}}};
  Node bare;
  bare.name = "bare";
  return {n, bare};
}

PodSet FullPodSet() {
  PodSet ps;
  ps.name = "workers";
  ps.count = 4;
  ps.min_count = 2;
  ps.requests = {{"nvidia.com/gpu", Q("2")},
                 {"cpu", Q("500m")},
                 {"memory", Q("64Gi")},
                 {"example.com/licenses", Q("1.5")}};
  ps.node_selector = {{"location", "onprem"}, {"rack", ""}};
  ps.tolerations = AllTolerations();
  ps.command = kTrickyStrings;
  ps.args = {"--lr", "3e-4", "", "null"};
  for (size_t i = 0; i < kTrickyStrings.size(); ++i) {
    ps.env.emplace_back("V" + std::to_string(i), kTrickyStrings[i]);
  }
  ps.env.emplace_back("V0", "repeated");
  ps.working_dir = "/work space/ü";
  ps.image = "127.0.0.1:5000/team a/ü:1";
  ps.image_pull_policy = "Never";
  ps.env_secrets = {{"TOKEN", {"hub", "to.k-en_1", true}}, {"V0", {"s", "k", false}}};
  ps.env_from = {{"wandb", "W_", false}, {"extra", "", true}};
  ps.image_pull_secrets = {"regcred", "mirror.example.com"};
  ps.volumes.resize(4);
  ps.volumes[0] = {"shm", Volume::Type::kEmptyDir, "Memory", 1 << 30, "", "", "", false};
  ps.volumes[1] = {"data", Volume::Type::kHostPath, "", 0, "/srv/ü data", "", "", false};
  ps.volumes[2] = {"creds", Volume::Type::kSecret, "", 0, "", "hub", "", false};
  ps.volumes[3] = {"ckpt", Volume::Type::kClaim, "", 0, "", "", "ckpt", true};
  ps.volume_mounts = {{"shm", "/dev/shm", "", false}, {"creds", "/etc/t", "token", true}};
  ps.run_as_user = 0;
  ps.run_as_group = 2147483647;
  ps.read_only_root = false;
  ps.host_network = true;
  return ps;
}

std::vector<Workload> Workloads() {
  Workload full;
  full.ns = "team-a";
  full.name = "train";
  full.queue_name = "lq";
  full.labels = TrickyMap("l");
  full.annotations = TrickyMap("a");
  full.type = "training";
  full.priority_class_name = "high";  // priority stays 0 (not encoded).
  full.creation_unix_ms = 1767225601123;
  full.backoff_limit = 3;
  full.max_execution_seconds = 86400;
  full.generate_name = "tr";
  full.active = false;
  PodSet plain;
  plain.name = "launcher";
  plain.count = 1;  // A pod set has at least one pod.
  full.pod_sets = {FullPodSet(), plain};
  Admission& a = full.admission.emplace();
  a.cluster_queue = "cq-0";
  a.pod_set_assignments = {
      {"workers",
       3,  // Partial: minCount 2 <= 3 < 4.
       {{"nvidia.com/gpu", "h100"}, {"cpu", "cpu-only"}},
       {{"gpu-01", {"GPU-0", "MIG-2-0"}}, {"gpu-01", {}}, {"bare", {"x"}}}},
      {"launcher", 0, {}, {}}};

  std::vector<Workload> out = {full};
  const char* types[] = {"batch", "training", "inference", "notebook"};
  const int32_t priorities[] = {0, -5, std::numeric_limits<int32_t>::max(),
                                std::numeric_limits<int32_t>::min()};
  const int64_t times[] = {0, -1, 1767225600000, 253402300799999};
  for (int i = 0; i < 4; ++i) {
    Workload w;
    w.name = "w" + std::to_string(i);
    w.ns = "default";
    w.queue_name = "q";
    w.type = types[i];
    w.priority = priorities[i];
    w.creation_unix_ms = times[i];
    w.pod_sets = {MainPodSet()};
    if (i == 1) w.admission = Admission{"cq-1", {}};  // Admitted, no pod sets.
    out.push_back(w);
  }
  return out;
}

// Autoscaled pools: each provider, every field set or left at its default.
std::vector<NodePool> NodePools() {
  std::vector<NodePool> out;
  NodePool a;
  a.name = "exec-pool";
  a.node.labels = {{"allot.dev/pool", "h100"}, {"zone", "a"}};
  a.node.taints = {{"cloud", "true", TaintEffect::kNoSchedule}};
  a.node.cpu = Q("96");
  a.node.memory = Q("1Ti");
  a.node.gpus.resize(8);
  for (Gpu& g : a.node.gpus) {
    g.product = "H100";
    g.memory = Q("80Gi");
  }
  a.min_nodes = 1;
  a.max_nodes = 16;
  a.provider.type = PoolProvider::Type::kExec;
  a.provider.command = {"/usr/local/sbin/pool", "--region", "us-east-1"};
  a.location = "cloud";
  a.zone = "us-east-1a";
  a.price_micros_per_node_hour = 98320000;
  a.boot_timeout_ms = 900000;
  a.scale_down_delay_ms = 300000;
  a.max_disrupted = 2;
  a.windows = {{22 * 60, 6 * 60 + 30}, {12 * 60, 13 * 60}};
  a.headroom_gpus = 8;
  a.headroom_arrivals = true;
  a.headroom_window_ms = 1800000;
  a.failure_threshold = 5;
  out.push_back(a);
  NodePool b;
  b.name = "local-pool";
  b.max_nodes = 2;
  b.provider.type = PoolProvider::Type::kLocal;
  out.push_back(b);
  NodePool c;
  c.name = "sim-pool";
  c.max_nodes = 3;
  c.node.gpus.resize(4);
  c.provider.type = PoolProvider::Type::kSimulated;
  c.provider.boot_delay_ms = 240000;
  c.provider.failure_rate = 0.125;
  c.headroom_arrivals = true;
  out.push_back(c);
  return out;
}

Config HandBuilt() {
  Config c;
  c.flavors = Flavors();
  c.cohorts = Cohorts();
  c.cluster_queues = ClusterQueues();
  c.local_queues = {{"team-a", "lq", "cq-0", {}, {{"allot.dev/priority-classes", "low,high"}}},
                    {"default", "q", "cq-1", {}, {}}};
  c.priority_classes = {{"high", 1000, {}},
                        {"min", std::numeric_limits<int32_t>::min(), {}},
                        {"zero", 0, {}}};
  // Every namespace carries its name label (the parser adds it).
  c.namespaces = {{"team-a",
                   {{"tier", "gold"}, {kNamespaceNameLabel, "team-a"}},
                   {},
                   {{"allot.dev/default-priority-class", "low"},
                    {"allot.dev/allow-literal-priority", "false"}}},
                  {"bare", {{kNamespaceNameLabel, "bare"}}, {}, {}, "ba"}};
  c.flavors[1].generate_name = "bare-";  // Named, and generated from it.
  c.nodes = Nodes();
  c.node_pools = NodePools();
  c.workloads = Workloads();
  c.scheduler.fair_sharing = true;
  c.scheduler.preemption_strategies = {
      FairSharingStrategy::kLessThanInitialShare,
      FairSharingStrategy::kLessThanOrEqualToFinalShare};
  return c;
}

// Not validated: the objects exercise fields, not a consistent cluster.
TEST(ManifestEncodeTest, EveryOptionalFieldRoundTrips) {
  const Config c = HandBuilt();
  ASSERT_EQ(c.cluster_queues.size(), 72u);
  for (KueueVersion v : {KueueVersion::kV1beta1, KueueVersion::kV1beta2}) {
    SCOPED_TRACE(KueueApiVersionOf(v));
    ExpectSameConfig(c, RoundTrip(c, /*validate=*/false, v));
  }
}

// Each SchedulerConfig setting, the default one included.
TEST(ManifestEncodeTest, SchedulerConfigsRoundTrip) {
  using S = FairSharingStrategy;
  for (const SchedulerConfig& sc :
       {SchedulerConfig{}, SchedulerConfig{true, {S::kLessThanInitialShare}},
        SchedulerConfig{false, {S::kLessThanOrEqualToFinalShare}}}) {
    Config c;
    c.scheduler = sc;
    EXPECT_TRUE(RoundTrip(c, /*validate=*/false).scheduler == sc);
  }
}

// The Kueue semantics that hinge on presence: an unset namespaceSelector
// matches nothing and is left out; an empty one matches everything and is {}.
TEST(ManifestEncodeTest, ShapeOfDefaultsAndPresence) {
  ClusterQueue cq;
  cq.name = "none";
  json::object o = EncodeClusterQueue(cq);
  EXPECT_EQ(json::serialize(o),
            R"({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue",)"
            R"("metadata":{"name":"none"},"spec":{}})");
  cq.namespace_selector.emplace();
  EXPECT_EQ(json::serialize(EncodeClusterQueue(cq).at("spec")),
            R"({"namespaceSelector":{}})");

  // Prices and quantities are strings, never JSON floating point.
  ResourceFlavor f;
  f.name = "f";
  f.price_micros_per_hour = {{"nvidia.com/gpu", 2500000}, {"cpu", 125}};
  EXPECT_EQ(json::serialize(EncodeFlavor(f).at("spec")),
            R"({"price":{"cpu":"0.000125","nvidia.com/gpu":"2.5"}})");

  // A named class is the priority; a literal one is written only otherwise.
  Workload w;
  w.name = "w";
  w.ns = "default";
  w.queue_name = "q";
  w.priority = 7;
  w.pod_sets = {MainPodSet()};
  w.pod_sets[0].requests = {{"cpu", Q("0.5")}, {"memory", Q("65536Mi")}};
  EXPECT_EQ(json::serialize(EncodeWorkload(w).at("spec")),
            R"({"queueName":"q","priority":7,"podSets":[{"name":"main",)"
            R"("count":1,"template":{"resources":{"requests":)"
            R"({"cpu":"500m","memory":"64Gi"}}}}]})");
  w.priority_class_name = "high";
  EXPECT_FALSE(EncodeWorkload(w).at("spec").as_object().contains("priority"));
}

TEST(ManifestEncodeTest, FormatRfc3339Ms) {
  EXPECT_EQ(FormatRfc3339Ms(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Ms(1767225601500), "2026-01-01T00:00:01.500Z");
  EXPECT_EQ(FormatRfc3339Ms(1767225600007), "2026-01-01T00:00:00.007Z");
  EXPECT_EQ(FormatRfc3339Ms(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339Ms(1709164800000), "2024-02-29T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Ms(951782400000), "2000-02-29T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Ms(253402300799999), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339Ms(-62167219200000), "0000-01-01T00:00:00Z");
}

// Random times over the whole RFC 3339 range read back exactly.
TEST(ManifestEncodeTest, RandomTimesRoundTrip) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> ms(-62167219200000, 253402300799999);
  Config c;
  for (int i = 0; i < 2000; ++i) {
    Workload& w = c.workloads.emplace_back();
    w.name = "w" + std::to_string(i);
    w.ns = "default";
    w.queue_name = "q";
    w.creation_unix_ms = i < 1000 ? ms(rng) : ms(rng) / 1000 * 1000;
    w.pod_sets = {MainPodSet()};
  }
  Config back = RoundTrip(c, /*validate=*/false);
  ExpectSame("Workload", c.workloads, back.workloads, EncodeWorkload);
}

// ---- (c) JSON bodies as an HTTP client sends them --------------------------

constexpr char kJsonBody[] = R"({
  "apiVersion": "allot.dev/v1",
  "kind": "Workload",
  "metadata": {
    "name": "chat",
    "namespace": "team-b",
    "labels": {"app": "chat"},
    "annotations": {"allot.dev/owner": "bob", "empty": ""},
    "creationTimestamp": "2026-03-01T12:00:00.250Z"
  },
  "spec": {
    "queueName": "team-b",
    "type": "inference",
    "priority": 10,
    "podSets": [{
      "name": "server",
      "count": 2,
      "minCount": 1,
      "template": {
        "resources": {"requests": {"nvidia.com/gpu": 1, "cpu": "500m",
                                   "memory": "16Gi"}},
        "tolerations": [{"key": "spot", "operator": "Exists"}],
        "command": ["vllm", "serve"],
        "args": ["--port", "8000"],
        "env": [{"name": "HF_HOME", "value": "/cache"}, {"name": "N", "value": 3}],
        "workingDir": "/app"
      }
    }]
  }
})";

void ExpectChat(const Config& c) {
  ASSERT_EQ(c.workloads.size(), 1u);
  const Workload& w = c.workloads[0];
  EXPECT_EQ(w.Key(), "team-b/chat");
  EXPECT_EQ(w.labels, (Labels{{"app", "chat"}}));
  EXPECT_EQ(w.annotations, (Labels{{"allot.dev/owner", "bob"}, {"empty", ""}}));
  EXPECT_EQ(w.creation_unix_ms, 1772366400250);
  EXPECT_EQ(w.type, "inference");
  EXPECT_EQ(w.priority, 10);
  ASSERT_EQ(w.pod_sets.size(), 1u);
  const PodSet& ps = w.pod_sets[0];
  EXPECT_EQ(ps.count, 2);
  EXPECT_EQ(ps.min_count, 1);
  EXPECT_EQ(ps.requests, (ResourceList{{"cpu", Q("500m")},
                                       {"memory", Q("16Gi")},
                                       {"nvidia.com/gpu", Q("1")}}));
  EXPECT_EQ(ps.tolerations.size(), 1u);
  EXPECT_EQ(ps.command, (std::vector<std::string>{"vllm", "serve"}));
  EXPECT_EQ(ps.args, (std::vector<std::string>{"--port", "8000"}));
  EXPECT_EQ(ps.env, (std::vector<std::pair<std::string, std::string>>{
                        {"HF_HOME", "/cache"}, {"N", "3"}}));
  EXPECT_EQ(ps.working_dir, "/app");
}

TEST(ManifestEncodeTest, JsonBodyParses) {
  Config pretty;
  Status s = ParseManifests(kJsonBody, "request body", &pretty);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectChat(pretty);
  // The same body without whitespace, as most clients send it.
  Config compact;
  s = ParseManifests(json::serialize(json::parse(kJsonBody)), "request body",
                     &compact);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectChat(compact);
  EXPECT_TRUE(pretty == compact);
}

// A ClusterQueue body with JSON numbers (a price, a weight) and an empty
// selector; unknown fields stay errors in JSON too.
TEST(ManifestEncodeTest, JsonBodyOtherKinds) {
  Config c;
  Status s = ParseManifests(
      R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ResourceFlavor",)"
      R"("metadata":{"name":"h100"},"spec":{"price":{"nvidia.com/gpu":2.5}}})"
      "\n---\n"
      R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ClusterQueue",)"
      R"("metadata":{"name":"cq"},"spec":{"namespaceSelector":{},)"
      R"("fairSharing":{"weight":0.5},"resourceGroups":[{"coveredResources":)"
      R"(["nvidia.com/gpu"],"flavors":[{"name":"h100","resources":[{"name":)"
      R"("nvidia.com/gpu","nominalQuota":8,"borrowingLimit":null}]}]}]}})",
      "body", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.flavors[0].price_micros_per_hour.at("nvidia.com/gpu"), 2500000);
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  const ClusterQueue& cq = c.cluster_queues[0];
  EXPECT_TRUE(cq.namespace_selector.has_value());
  EXPECT_EQ(cq.fair_weight_milli, 500);
  // null is absent, as in YAML.
  EXPECT_FALSE(cq.resource_groups[0].flavors[0].resources[0].borrowing_limit);

  Config bad;
  s = ParseManifests(
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},)"
      R"("metdata":{}})",
      "body", &bad);
  EXPECT_EQ(s.field(), "metdata");
}

}  // namespace
}  // namespace allot::core
