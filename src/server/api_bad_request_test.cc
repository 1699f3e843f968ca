// Bad requests against a real `allot serve` with a realistic cluster: every
// row must be answered with the documented status and error JSON
// {"error":{"code","message","field"}}, and must change nothing (the
// fingerprint of every list, tokens included, is compared before and after
// each row; the audit log, which records failures too, is not state here).
#include <gtest/gtest.h>

#include <fcntl.h>

#include <cstdio>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "server/test_server.h"
#include "testing/builders.h"

namespace allot::server {
namespace {

using testing::TestServer;
namespace json = boost::json;

// Two tenants in cohort research: team-a's cq-a (8 H100s, all on node n1)
// and team-b's cq-b (4 A100s, no node); priority classes high and low;
// train-1 (2 GPUs) is admitted, big (2 x 8) and infer-1 wait.
std::string Cluster() {
  namespace b = allot::testing;
  return b::Namespace("team-a", "{org: research}") + b::Namespace("team-b") +
         b::FlavorSpec("h100", "{nodeLabels: {gpu: h100}}") +
         b::FlavorSpec("a100", "{nodeLabels: {gpu: a100}}") + b::Cohort("research") +
         b::GpuCq("cq-a", "research", "h100", "nominalQuota: 8") +
         b::GpuCq("cq-b", "research", "a100", "nominalQuota: 4") +
         b::LocalQueue("team-a", "q", "cq-a") + b::LocalQueue("team-b", "q", "cq-b") +
         b::PriorityClass("high", 1000) + b::PriorityClass("low", 10) +
         b::Node("n1", "{gpu: h100}", "64", "512Gi", b::Uuids("GPU-", 8)) + R"(
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: train-1, namespace: team-a}
spec:
  queueName: q
  priorityClassName: high
  podSets: [{count: 1, template: {resources: {requests: {nvidia.com/gpu: 2}}}}]
---
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: big, namespace: team-a}
spec:
  queueName: q
  podSets: [{count: 2, template: {resources: {requests: {nvidia.com/gpu: 8}}}}]
---
apiVersion: allot.dev/v1
kind: Workload
metadata: {name: infer-1, namespace: team-b, labels: {app: chat}}
spec:
  type: inference
  queueName: q
  podSets: [{count: 1, template: {resources: {requests: {nvidia.com/gpu: 1}}}}]
)";
}

// Valid bodies of objects that do not exist yet; each row breaks one thing.
const std::string kWl =
    R"({"apiVersion":"allot.dev/v1","kind":"Workload","metadata":{"name":"fresh-wl","namespace":"team-a"},)"
    R"("spec":{"queueName":"q","podSets":[{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":1}}}}]}})";
const std::string kFlavor =
    R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ResourceFlavor","metadata":{"name":"fresh-f"},)"
    R"("spec":{"nodeLabels":{"gpu":"l4"}}})";
const std::string kCq =
    R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ClusterQueue","metadata":{"name":"fresh-cq"},)"
    R"("spec":{"namespaceSelector":{},"resourceGroups":[{"coveredResources":["nvidia.com/gpu"],)"
    R"("flavors":[{"name":"h100","resources":[{"name":"nvidia.com/gpu","nominalQuota":4}]}]}]}})";
const std::string kLq =
    R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"LocalQueue","metadata":{"name":"fresh-q","namespace":"team-a"},)"
    R"("spec":{"clusterQueue":"cq-a"}})";
const std::string kPc =
    R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"WorkloadPriorityClass","metadata":{"name":"fresh-pc"},"value":5})";
const std::string kNs = R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fresh-t"}})";
const std::string kNode =
    R"({"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":"fresh-n"},)"
    R"("status":{"capacity":{"cpu":"8","memory":"32Gi"},"gpus":[{"uuid":"FRESH-G0"}]}})";
const std::string kCohort =
    R"({"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"Cohort","metadata":{"name":"fresh-co"},"spec":{"parentName":"research"}})";

// `base` with the first `from` replaced by `to`; a typo in a row aborts.
std::string Sub(const std::string& base, const std::string& from,
                const std::string& to) {
  size_t at = base.find(from);
  if (at == std::string::npos) {
    std::fprintf(stderr, "Sub: '%s' not in %s\n", from.c_str(), base.c_str());
    std::abort();
  }
  std::string s = base;
  s.replace(at, from.size(), to);
  return s;
}

enum class Tok { kAdmin, kNone, kGarbage, kRevoked, kBasic, kViewer, kMember };

struct Row {
  std::string desc;
  std::string method;
  std::string target;
  std::string body;
  int status;
  std::string code;                  // error.code ("" = not checked)
  std::string message;               // a substring of error.message
  std::optional<std::string> field = {};  // error.field (unset = not checked)
  Tok tok = Tok::kAdmin;
  std::vector<std::string> absent = {};  // GETs that must answer 404 afterwards
};

const char* const kPlurals[] = {"resourceflavors", "cohorts",
                                "clusterqueues",   "localqueues",
                                "workloadpriorityclasses", "tenants",
                                "nodes",           "workloads"};

const std::string kGpu = "nvidia.com/gpu";
const std::string kReq = "spec.podSets[0].template.resources.requests";

std::vector<Row> Rows() {
  const std::string W = "/api/v1/workloads";
  const std::string A = "/api/v1/apply";
  const std::string T = "/api/v1/tokens";
  const std::string kBad = "InvalidArgument";
  std::vector<Row> r;
  auto add = [&](Row row) { r.push_back(std::move(row)); };

  // ---- Syntax ---------------------------------------------------------------
  add({"malformed JSON", "POST", W, R"({"apiVersion": "allot.dev/v1", "kind":)", 400, kBad, "YAML error", {}});
  add({"JSON with trailing garbage", "POST", W, kWl + "}}", 400, kBad, "YAML error", {}});
  add({"malformed YAML", "POST", A, "kind: [unclosed\nmetadata: {name: x", 400, kBad, "YAML error", {}});
  add({"YAML tab indentation error", "POST", A, "apiVersion: v1\nkind: Namespace\nmetadata:\n\tname: x\n", 400, kBad, "", {}});
  add({"empty body to create", "POST", W, "", 400, kBad, "no body", "body"});
  add({"empty body to apply", "POST", A, "", 400, kBad, "no body", "body"});
  add({"empty body to replace", "PUT", "/api/v1/clusterqueues/cq-a", "", 400, kBad, "no body", "body"});
  add({"null document to create", "POST", W, "null", 400, kBad, "found 0 object(s)", "kind"});
  add({"JSON array instead of an object", "POST", W, "[1,2,3]", 400, kBad, "expected a mapping", {}});
  add({"JSON string instead of an object", "POST", "/api/v1/resourceflavors", R"("h100")", 400, kBad, "expected a mapping", {}});
  add({"missing apiVersion", "POST", W, Sub(kWl, R"("apiVersion":"allot.dev/v1",)", ""), 400, kBad, "required field is missing", "apiVersion"});
  add({"duplicate YAML key in metadata", "POST", "/api/v1/tenants",
       "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dup-a\n  name: dup-b\n", 400, kBad, "given twice", "metadata.name"});
  // The same document as JSON must read the same (Boost.JSON keeps one of
  // the two keys silently).
  add({"duplicate JSON key in metadata", "POST", "/api/v1/tenants",
       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dup-a","name":"dup-b"}})", 400, kBad, "given twice", "metadata.name"});

  // ---- Unknown fields at several depths --------------------------------------
  add({"unknown top-level field", "POST", W, Sub(kWl, R"("kind":)", R"("extra":1,"kind":)"), 400, kBad, "unknown field \"extra\"", "extra"});
  add({"negative backoffLimit", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":"q","backoffLimit":-1)"), 400, kBad, "between 0 and 1000", "spec.backoffLimit"});
  add({"zero maximumExecutionTimeSeconds", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":"q","maximumExecutionTimeSeconds":0)"), 400, kBad, "between 1 and", "spec.maximumExecutionTimeSeconds"});
  add({"unknown metadata field", "POST", W, Sub(kWl, R"("name":"fresh-wl")", R"("name":"fresh-wl","colour":"red")"), 400, kBad, "unknown field \"colour\"", "metadata.colour"});
  add({"misspelt spec field", "POST", W, Sub(kWl, "queueName", "queueNmae"), 400, kBad, "unknown field \"queueNmae\"", "spec.queueNmae"});
  add({"unknown field in a pod template", "POST", W, Sub(kWl, R"("requests":{"nvidia.com/gpu":1}})", R"("requests":{"nvidia.com/gpu":1},"limits":{}})"),
       400, kBad, "unknown field \"limits\"", "spec.podSets[0].template.resources.limits"});
  add({"unknown field in a ClusterQueue quota", "POST", "/api/v1/clusterqueues", Sub(kCq, "nominalQuota", "nominalQuotaa"),
       400, kBad, "unknown field \"nominalQuotaa\"", "spec.resourceGroups[0].flavors[0].resources[0].nominalQuotaa"});
  add({"unknown field in node status", "POST", "/api/v1/nodes", Sub(kNode, R"("uuid":"FRESH-G0")", R"("uuid":"FRESH-G0","cores":9)"),
       400, kBad, "unknown field \"cores\"", "status.gpus[0].cores"});

  // ---- Wrong types -----------------------------------------------------------
  add({"string for count", "POST", W, Sub(kWl, R"("count":1)", R"("count":"two")"), 400, kBad, "32-bit integer", "spec.podSets[0].count"});
  add({"fraction for count", "POST", W, Sub(kWl, R"("count":1)", R"("count":1.5)"), 400, kBad, "32-bit integer", "spec.podSets[0].count"});
  add({"count over 32 bits", "POST", W, Sub(kWl, R"("count":1)", R"("count":3000000000)"), 400, kBad, "32-bit integer", "spec.podSets[0].count"});
  add({"map for podSets", "POST", W, Sub(kWl, R"("podSets":[{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":1}}}}])", R"("podSets":{"count":1})"),
       400, kBad, "expected a list", "spec.podSets"});
  add({"list for labels", "POST", W, Sub(kWl, R"("name":"fresh-wl")", R"("name":"fresh-wl","labels":["a","b"])"), 400, kBad, "expected a mapping", "metadata.labels"});
  add({"list for requests", "POST", W, Sub(kWl, R"({"nvidia.com/gpu":1})", R"(["nvidia.com/gpu"])"), 400, kBad, "expected a mapping", kReq});
  add({"map for queueName", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":{"name":"q"})"), 400, kBad, "expected a string", "spec.queueName"});
  add({"list for nodeLabels", "POST", "/api/v1/resourceflavors", Sub(kFlavor, R"({"gpu":"l4"})", R"(["gpu"])"), 400, kBad, "expected a mapping", "spec.nodeLabels"});
  add({"string for priority value", "POST", "/api/v1/workloadpriorityclasses", Sub(kPc, R"("value":5)", R"("value":"high")"), 400, kBad, "32-bit integer", "value"});
  add({"unknown enum value", "POST", "/api/v1/clusterqueues", Sub(kCq, R"("namespaceSelector":{})", R"("queueingStrategy":"LIFO")"),
       400, kBad, "unknown value \"LIFO\"", "spec.queueingStrategy"});
  add({"unknown workload type", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":"q","type":"gaming")"), 400, kBad, "unknown value \"gaming\"", "spec.type"});

  // ---- Quantities ----------------------------------------------------------
  add({"negative GPU request", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":-1)"), 400, kBad, "must not be negative", kReq + "[" + kGpu + "]"});
  add({"negative count", "POST", W, Sub(kWl, R"("count":1)", R"("count":-1)"), 400, kBad, "must be at least 1", "spec.podSets[0].count"});
  add({"zero pods", "POST", W, Sub(kWl, R"("count":1)", R"("count":0)"), 400, kBad, "must be at least 1", "spec.podSets[0].count"});
  add({"negative nominalQuota", "POST", "/api/v1/clusterqueues", Sub(kCq, R"("nominalQuota":4)", R"("nominalQuota":"-4")"),
       400, kBad, "must not be negative", "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"});
  add({"absurd quantity 1e30", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":1e30)"), 400, kBad, "too large", kReq + "[" + kGpu + "]"});
  add({"absurd quantity 999999999999999Ti", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":1,"memory":"999999999999999Ti")"),
       400, kBad, "too large", kReq + "[memory]"});
  add({"absurd node capacity", "POST", "/api/v1/nodes", Sub(kNode, R"("memory":"32Gi")", R"("memory":"99999999999Ei")"), 400, kBad, "too large", "status.capacity.memory"});
  add({"fractional GPU 0.5", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":0.5)"), 400, kBad, "whole number", kReq + "[" + kGpu + "]"});
  add({"fractional GPU 1500m", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":"1500m")"), 400, kBad, "whole number", kReq + "[" + kGpu + "]"});
  add({"fractional MIG slice", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/mig-1g.10gb":"0.25")"), 400, kBad, "whole number", {}});
  add({"malformed quantity", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":"lots")"), 400, kBad, "malformed quantity", kReq + "[" + kGpu + "]"});
  add({"unknown quantity suffix", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":1,"memory":"4GB")"), 400, kBad, "unknown suffix", kReq + "[memory]"});
  // count x request past int64: the quota sum wraps (the scheduler then
  // admits 2 x 4.7e15 GPUs as 1 GPU a pod, 4699982712012801 mod 2^32 = 1).
  add({"pod-set total past int64 (2 x 4699982712012801 GPUs)", "POST", W,
       Sub(Sub(Sub(kWl, "fresh-wl", "overflow-wl"), R"("count":1)", R"("count":2)"), R"("nvidia.com/gpu":1)",
           R"("nvidia.com/gpu":"4699982712012801")"),
       400, kBad, "", {}});
  add({"lendingLimit over nominalQuota", "POST", "/api/v1/clusterqueues", Sub(kCq, R"("nominalQuota":4)", R"("nominalQuota":4,"lendingLimit":5)"),
       400, kBad, "exceeds nominalQuota", {}});
  add({"negative price", "POST", "/api/v1/resourceflavors", Sub(kFlavor, R"("nodeLabels")", R"("price":{"nvidia.com/gpu":"-2.5"},"nodeLabels")"),
       400, kBad, "must not be negative", "spec.price[nvidia.com/gpu]"});
  add({"minCount over count", "POST", W, Sub(kWl, R"("count":1)", R"("count":1,"minCount":2)"), 400, kBad, "must be between 1 and count", "spec.podSets[0].minCount"});
  add({"no pod sets", "POST", W, Sub(kWl, R"([{"count":1,"template":{"resources":{"requests":{"nvidia.com/gpu":1}}}}])", "[]"),
       400, kBad, "at least one pod set", "spec.podSets"});

  // ---- Names -----------------------------------------------------------------
  add({"upper-case workload name", "POST", W, Sub(kWl, "fresh-wl", "Fresh-WL"), 400, kBad, "not a DNS-1123 label", "metadata.name"});
  add({"underscore in a workload name", "POST", W, Sub(kWl, "fresh-wl", "fresh_wl"), 400, kBad, "not a DNS-1123 label", "metadata.name"});
  add({"64-character workload name", "POST", W, Sub(kWl, "fresh-wl", std::string(64, 'w')), 400, kBad, "not a DNS-1123 label", "metadata.name"});
  add({"leading '-' in a tenant name", "POST", "/api/v1/tenants", Sub(kNs, "fresh-t", "-fresh-t"), 400, kBad, "not a DNS-1123 label", "metadata.name"});
  add({"trailing '-' in a LocalQueue name", "POST", "/api/v1/localqueues", Sub(kLq, "fresh-q", "fresh-q-"), 400, kBad, "not a DNS-1123 label", "metadata.name"});
  add({"dot in a LocalQueue name (labels have none)", "POST", "/api/v1/localqueues", Sub(kLq, "fresh-q", "fresh.q"), 400, kBad, "not a DNS-1123 label", "metadata.name"});
  add({"upper-case flavor name", "POST", "/api/v1/resourceflavors", Sub(kFlavor, "fresh-f", "H100-Fresh"), 400, kBad, "not a DNS-1123 subdomain", "metadata.name"});
  add({"254-character node name", "POST", "/api/v1/nodes", Sub(kNode, "fresh-n", std::string(50, 'n') + "." + std::string(50, 'n') + "." + std::string(50, 'n') + "." + std::string(50, 'n') + "." + std::string(50, 'n')),
       400, kBad, "not a DNS-1123 subdomain", "metadata.name"});
  add({"empty name", "POST", "/api/v1/workloadpriorityclasses", Sub(kPc, "fresh-pc", ""), 400, kBad, "must not be empty", "metadata.name"});
  add({"missing name", "POST", "/api/v1/cohorts", Sub(kCohort, R"({"name":"fresh-co"})", "{}"), 400, kBad, "required field is missing", "metadata.name"});
  add({"namespace with an underscore", "POST", "/api/v1/localqueues", Sub(kLq, R"("namespace":"team-a")", R"("namespace":"team_a")"),
       400, kBad, "not a DNS-1123 label", "metadata.namespace"});
  add({"namespace with a dot", "POST", W, Sub(kWl, R"("namespace":"team-a")", R"("namespace":"team.a")"), 400, kBad, "not a DNS-1123 label", "metadata.namespace"});

  // ---- References to missing objects -----------------------------------------
  add({"LocalQueue -> missing ClusterQueue", "POST", "/api/v1/localqueues", Sub(kLq, R"("cq-a")", R"("cq-nope")"),
       400, kBad, "ClusterQueue cq-nope does not exist", "spec.clusterQueue"});
  add({"LocalQueue in a missing tenant", "POST", "/api/v1/localqueues", Sub(kLq, R"("namespace":"team-a")", R"("namespace":"ghost")"),
       404, "NotFound", "tenant ghost does not exist", "metadata.namespace"});
  add({"ClusterQueue -> missing flavor", "POST", "/api/v1/clusterqueues", Sub(kCq, R"("name":"h100")", R"("name":"h200")"),
       400, kBad, "ResourceFlavor h200 does not exist", "spec.resourceGroups[0].flavors[0].name"});
  add({"Cohort that is its own parent", "POST", "/api/v1/cohorts", Sub(kCohort, R"("parentName":"research")", R"("parentName":"fresh-co")"),
       400, kBad, "cohort cycle", "spec.parentName"});
  add({"Workload -> missing LocalQueue", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":"nope")"),
       400, kBad, "LocalQueue team-a/nope does not exist", "spec.queueName"});
  add({"Workload -> missing priority class", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":"q","priorityClassName":"urgent")"),
       400, kBad, "WorkloadPriorityClass urgent does not exist", "spec.priorityClassName"});
  add({"Workload -> missing tenant", "POST", W, Sub(kWl, R"("namespace":"team-a")", R"("namespace":"ghost")"),
       404, "NotFound", "tenant ghost does not exist", "metadata.namespace"});
  // The tenant default always exists (as Kubernetes' namespace default).
  add({"Workload without namespace (-> default, which has no LocalQueue q)", "POST", W, Sub(kWl, R"(,"namespace":"team-a")", ""),
       400, kBad, "LocalQueue default/q does not exist", "spec.queueName"});
  add({"priorityClassName and priority both", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":"q","priorityClassName":"high","priority":5)"),
       400, kBad, "not both", "spec.priority"});
  add({"malformed creationTimestamp", "POST", W, Sub(kWl, R"("name":"fresh-wl")", R"("name":"fresh-wl","creationTimestamp":"yesterday")"),
       400, kBad, "malformed timestamp", "metadata.creationTimestamp"});
  add({"node declaring a GPU of another node", "POST", "/api/v1/nodes", Sub(kNode, "FRESH-G0", "GPU-3"), 400, kBad, "declared twice", {}});

  // ---- Conflicts ---------------------------------------------------------------
  add({"duplicate Workload create", "POST", W, Sub(kWl, "fresh-wl", "train-1"), 409, "AlreadyExists", "already exists", {}});
  add({"duplicate flavor create", "POST", "/api/v1/resourceflavors", Sub(kFlavor, "fresh-f", "h100"), 409, "AlreadyExists", "already exists", {}});
  add({"duplicate tenant create", "POST", "/api/v1/tenants", Sub(kNs, "fresh-t", "team-b"), 409, "AlreadyExists", "already exists", {}});
  add({"duplicate LocalQueue create", "POST", "/api/v1/localqueues", Sub(kLq, "fresh-q", "q"), 409, "AlreadyExists", "already exists", {}});
  add({"stale metadata.resourceVersion on PUT", "PUT", "/api/v1/resourceflavors/h100",
       Sub(Sub(kFlavor, "fresh-f", "h100"), R"("name":"h100")", R"("name":"h100","resourceVersion":"999999")"),
       409, "Conflict", "changed since you read it", "metadata.resourceVersion"});
  add({"non-numeric metadata.resourceVersion", "PUT", "/api/v1/resourceflavors/h100",
       Sub(Sub(kFlavor, "fresh-f", "h100"), R"("name":"h100")", R"("name":"h100","resourceVersion":"abc")"),
       400, kBad, "non-negative integer", "metadata.resourceVersion"});
  add({"URL name != body name on PUT", "PUT", "/api/v1/resourceflavors/h100", Sub(kFlavor, "fresh-f", "a100"), 400, kBad, "the URL names h100", "metadata.name"});
  add({"URL tenant != body namespace on PUT", "PUT", "/api/v1/localqueues/team-a/q",
       Sub(Sub(kLq, "fresh-q", "q"), R"("namespace":"team-a")", R"("namespace":"team-b")"), 400, kBad, "the URL names team-a/q", {}});
  add({"PUT of a missing object", "PUT", "/api/v1/resourceflavors/fresh-f", kFlavor, 404, "NotFound", "does not exist", {}});
  add({"PUT changing a submitted Workload", "PUT", W + "/team-a/train-1",
       Sub(Sub(kWl, "fresh-wl", "train-1"), R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":2)"), 409, "Conflict", "cannot change once submitted", "spec"});
  add({"PUT removing a flavor that admitted workloads use", "PUT", "/api/v1/clusterqueues/cq-a",
       Sub(Sub(kCq, "fresh-cq", "cq-a"), R"("name":"h100")", R"("name":"a100")"), 409, "Conflict", "drain", {}});
  add({"PUT removing GPUs that admitted workloads hold", "PUT", "/api/v1/nodes/n1",
       R"({"apiVersion":"allot.dev/v1","kind":"Node","metadata":{"name":"n1","labels":{"gpu":"h100"}},)"
       R"("status":{"capacity":{"cpu":"64","memory":"512Gi"},"gpus":[{"uuid":"GPU-6"},{"uuid":"GPU-7"}]}})",
       409, "Conflict", "is not on node n1", {}});
  add({"apply changing a submitted Workload", "POST", A,
       Sub(Sub(kWl, "fresh-wl", "train-1"), R"("nvidia.com/gpu":1)", R"("nvidia.com/gpu":3)"), 409, "AlreadyExists", "cannot change once submitted", "spec"});
  add({"delete a flavor used by a ClusterQueue", "DELETE", "/api/v1/resourceflavors/h100", "", 409, "Conflict", "in use by ClusterQueue cq-a", {}});
  add({"delete a ClusterQueue referenced by a LocalQueue", "DELETE", "/api/v1/clusterqueues/cq-a", "", 409, "Conflict", "in use by LocalQueue team-a/q", {}});
  add({"delete a tenant that has queues and workloads", "DELETE", "/api/v1/tenants/team-a", "", 409, "Conflict", "in use by LocalQueue team-a/q", {}});
  add({"delete a priority class a workload uses", "DELETE", "/api/v1/workloadpriorityclasses/high", "", 409, "Conflict", "in use by Workload team-a/train-1", {}});
  add({"delete a node with admitted workloads (no drain)", "DELETE", "/api/v1/nodes/n1", "", 409, "Conflict", "drain=true", {}});
  add({"delete a missing workload", "DELETE", W + "/team-a/nope", "", 404, "NotFound", "does not exist", {}});

  // ---- Kinds and document counts --------------------------------------------------
  add({"ClusterQueue body to /resourceflavors", "POST", "/api/v1/resourceflavors", kCq, 400, kBad, "of another kind", "kind"});
  add({"Workload body to /tenants", "POST", "/api/v1/tenants", kWl, 400, kBad, "of another kind", "kind"});
  add({"Workload body to /localqueues", "POST", "/api/v1/localqueues", kWl, 400, kBad, "of another kind", "kind"});
  add({"flavor body on a ClusterQueue PUT", "PUT", "/api/v1/clusterqueues/cq-a", Sub(kFlavor, "fresh-f", "cq-a"), 400, kBad, "exactly one ClusterQueue", "kind"});
  add({"two documents to a single-object create", "POST", "/api/v1/resourceflavors", kFlavor + "\n---\n" + Sub(kFlavor, "fresh-f", "fresh-f2"),
       400, kBad, "found 2 object(s)", "kind"});
  add({"SchedulerConfig to a single-object create", "POST", "/api/v1/resourceflavors",
       R"({"apiVersion":"allot.dev/v1","kind":"SchedulerConfig","fairSharing":{"enable":true}})", 400, kBad, "found 0 object(s)", "kind"});
  add({"status.admission from a client", "POST", W,
       Sub(kWl, "}}]}}", R"(}}]},"status":{"admission":{"clusterQueue":"cq-a","podSetAssignments":[{"name":"main","flavors":{"nvidia.com/gpu":"h100"}}]}}})"),
       400, kBad, "set by the scheduler", "status.admission"});
  add({"status.admission through apply", "POST", A,
       Sub(kWl, "}}]}}", R"(}}]},"status":{"admission":{"clusterQueue":"cq-a","podSetAssignments":[{"name":"main","flavors":{"nvidia.com/gpu":"h100"}}]}}})"),
       400, kBad, "set by the scheduler", "status.admission"});
  add({"kind Allot does not run in apply", "POST", A, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", 400, kBad, "document 0 (Pod p, v1): Allot does not run this kind; it runs", "kind"});
  add({"unknown apiVersion in apply", "POST", A, Sub(kFlavor, "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta9"), 400, kBad, "unknown apiVersion kueue.x-k8s.io/v1beta9 for kind ResourceFlavor", "apiVersion"});
  add({"two SchedulerConfigs in apply", "POST", A,
       "apiVersion: allot.dev/v1\nkind: SchedulerConfig\n---\napiVersion: allot.dev/v1\nkind: SchedulerConfig\n", 400, kBad, "a second SchedulerConfig", {}});

  // ---- Apply is all or nothing --------------------------------------------------
  add({"apply: the same flavor twice (found by the fuzzer)", "POST", A,
       kNs + "\n---\n" + kFlavor + "\n---\n" + kFlavor,
       400, kBad, "duplicate ResourceFlavor name", "metadata.name",
       Tok::kAdmin, {"/api/v1/tenants/fresh-t", "/api/v1/resourceflavors/fresh-f"}});
  add({"apply: unknown field in the middle", "POST", A,
       kNs + "\n---\n" + kFlavor + "\n---\n" + Sub(kCq, R"("name":"h100")", R"("name":"fresh-f")") + "\n---\n" +
           Sub(kPc, R"("value":5)", R"("value":5,"globalDefault":true)") + "\n---\n" + Sub(kLq, "team-a", "fresh-t"),
       400, kBad, "document 3", "globalDefault",
       Tok::kAdmin, {"/api/v1/tenants/fresh-t", "/api/v1/resourceflavors/fresh-f", "/api/v1/clusterqueues/fresh-cq"}});
  add({"apply: a LocalQueue -> missing ClusterQueue in the middle", "POST", A,
       kFlavor + "\n---\n" + kNs + "\n---\n" + Sub(kLq, R"("cq-a")", R"("cq-nope")") + "\n---\n" + kPc,
       400, kBad, "ClusterQueue cq-nope does not exist", "spec.clusterQueue",
       Tok::kAdmin, {"/api/v1/resourceflavors/fresh-f", "/api/v1/tenants/fresh-t", "/api/v1/workloadpriorityclasses/fresh-pc"}});
  add({"apply: good workload then one -> missing LocalQueue", "POST", A,
       kFlavor + "\n---\n" + kWl + "\n---\n" + Sub(Sub(kWl, "fresh-wl", "fresh-wl2"), R"("queueName":"q")", R"("queueName":"nope")"),
       400, kBad, "LocalQueue team-a/nope does not exist", "spec.queueName",
       Tok::kAdmin, {"/api/v1/resourceflavors/fresh-f", W + "/team-a/fresh-wl"}});
  add({"apply: a workload for a tenant created in the same apply but a bad node", "POST", A,
       kNs + "\n---\n" + Sub(kLq, "team-a", "fresh-t") + "\n---\n" + Sub(Sub(kWl, "team-a", "fresh-t"), R"("queueName":"q")", R"("queueName":"fresh-q")") + "\n---\n" +
           Sub(kNode, "FRESH-G0", "GPU-0"),
       400, kBad, "declared twice", {},
       Tok::kAdmin, {"/api/v1/tenants/fresh-t", "/api/v1/localqueues/fresh-t/fresh-q", W + "/fresh-t/fresh-wl"}});
  add({"apply: the same workload twice", "POST", A, kWl + "\n---\n" + kWl, 400, kBad, "appears twice", "metadata.name",
       Tok::kAdmin, {W + "/team-a/fresh-wl"}});
  add({"apply by a member: a workload then a flavor", "POST", A, kWl + "\n---\n" + kFlavor, 403, "Forbidden", "may not change ResourceFlavor fresh-f", {},
       Tok::kMember, {W + "/team-a/fresh-wl", "/api/v1/resourceflavors/fresh-f"}});
  add({"apply by a member: a SchedulerConfig", "POST", A,
       kWl + "\n---\n" + R"({"apiVersion":"allot.dev/v1","kind":"SchedulerConfig","fairSharing":{"enable":true}})",
       403, "Forbidden", "SchedulerConfig", {}, Tok::kMember, {W + "/team-a/fresh-wl"}});

  // ---- Routes and methods ---------------------------------------------------------
  add({"unknown resource type", "GET", "/api/v1/pods", "", 404, "NotFound", "no route", {}});
  add({"unknown API version", "GET", "/api/v2/workloads", "", 404, "NotFound", "no route", {}});
  add({"unknown top-level path", "GET", "/metricz", "", 404, "NotFound", "no route", {}});
  add({"namespaced kind without a name", "GET", W + "/team-a", "", 404, "NotFound", "/api/v1/workloads/TENANT/NAME", {}});
  add({"cluster-scoped kind with a tenant segment", "GET", "/api/v1/resourceflavors/team-a/h100", "", 404, "NotFound", "/api/v1/resourceflavors/NAME", {}});
  add({"GET of a missing object", "GET", "/api/v1/clusterqueues/nope", "", 404, "NotFound", "does not exist", {}});
  add({"unknown audit sub-resource", "GET", "/api/v1/audit/bogus", "", 404, "NotFound", "no route", {}});
  add({"unknown node action", "POST", "/api/v1/nodes/n1/reboot", "", 404, "NotFound", "no node action", {}});
  // Acknowledging an audit log break (docs/server.md, "Audit log").
  add({"audit acknowledge without a reason", "POST", "/api/v1/audit/acknowledge", "{}", 400, kBad, "{\"reason\": TEXT}", "reason"});
  add({"audit acknowledge with an empty reason", "POST", "/api/v1/audit/acknowledge", R"({"reason":""})", 400, kBad, "TEXT", "reason"});
  add({"audit acknowledge with another field", "POST", "/api/v1/audit/acknowledge", R"({"reason":"x","force":true})", 400, kBad, "TEXT", "reason"});
  add({"audit acknowledge of an intact log", "POST", "/api/v1/audit/acknowledge", R"({"reason":"x"})", 409, "Conflict", "the audit log is not broken", {}});
  add({"member acknowledges the audit log", "POST", "/api/v1/audit/acknowledge", R"({"reason":"x"})", 403, "Forbidden", "only a cluster-admin", "", Tok::kMember});
  add({"GET of audit acknowledge", "GET", "/api/v1/audit/acknowledge", "", 405, "", "", {}});
  add({"node action on a missing node", "POST", "/api/v1/nodes/ghost/cordon", "", 404, "NotFound", "does not exist", {}});
  // Wrong methods: HTTP (RFC 9110) and the Kubernetes API server answer
  // 405 Method Not Allowed for a method a route does not take.
  add({"PATCH on an object", "PATCH", W + "/team-a/train-1", kWl, 405, "", "", {}});
  add({"POST on an object URL", "POST", "/api/v1/resourceflavors/h100", kFlavor, 405, "", "", {}});
  add({"DELETE on a collection", "DELETE", W, "", 405, "", "", {}});
  add({"GET on /apply", "GET", A, "", 405, "", "", {}});
  add({"PUT on /tokens", "PUT", T, "", 405, "", "", {}});

  // ---- Authentication -------------------------------------------------------------
  add({"no token", "POST", W, kWl, 401, "Unauthorized", "no bearer token", "", Tok::kNone});
  add({"garbage token", "POST", W, kWl, 401, "Unauthorized", "unknown or revoked token", "", Tok::kGarbage});
  add({"revoked token", "DELETE", W + "/team-a/train-1", "", 401, "Unauthorized", "unknown or revoked token", "", Tok::kRevoked});
  add({"Basic instead of Bearer", "GET", W, "", 401, "Unauthorized", "no bearer token", "", Tok::kBasic});
  add({"no token on a read", "GET", "/api/v1/whoami", "", 401, "Unauthorized", "no bearer token", "", Tok::kNone});

  // ---- Query parameters ---------------------------------------------------------------
  add({"state=Bogus", "GET", W + "?state=Bogus", "", 400, kBad, "unknown workload state 'Bogus'", "state"});
  add({"limit=-1", "GET", W + "?limit=-1", "", 400, kBad, "non-negative integer", "limit"});
  add({"limit=ten", "GET", "/api/v1/nodes?limit=ten", "", 400, kBad, "non-negative integer", "limit"});
  add({"limit past int64", "GET", W + "?limit=99999999999999999999", "", 400, kBad, "non-negative integer", "limit"});
  add({"label=nokey", "GET", W + "?label=nokey", "", 400, kBad, "k=v", "label"});
  add({"label==v", "GET", W + "?label=%3Dv", "", 400, kBad, "k=v", "label"});
  add({"watch with resourceVersion=abc", "GET", W + "?watch=1&resourceVersion=abc", "", 400, kBad, "non-negative integer", "resourceVersion"});
  add({"audit limit=-1", "GET", "/api/v1/audit?limit=-1", "", 400, kBad, "non-negative integer", "limit"});
  add({"audit after=x", "GET", "/api/v1/audit?after=x", "", 400, kBad, "non-negative integer", "after"});
  add({"watch=maybe", "GET", W + "?watch=maybe", "", 400, kBad, "watch must be true or false, not 'maybe'", "watch"});
  add({"drain=maybe", "DELETE", "/api/v1/nodes/n1?drain=maybe", "", 400, kBad, "drain must be true or false", "drain"});
  add({"unknown list parameter", "GET", W + "?namespace=team-a", "", 400, kBad, "unknown query parameter 'namespace' for GET /api/v1/workloads, which takes tenant, queue", "namespace"});
  add({"state on a list of nodes", "GET", "/api/v1/nodes?state=Running", "", 400, kBad, "unknown query parameter 'state'", "state"});
  add({"parameter on a route that takes none", "GET", "/api/v1/whoami?verbose=1", "", 400, kBad, "GET /api/v1/whoami, which takes none", "verbose"});
  add({"parameter on a create (member)", "POST", W + "?dryRun=All", kWl, 400, kBad, "unknown query parameter 'dryRun'", "dryRun", Tok::kMember, {W + "/team-a/fresh-wl"}});
  add({"log attempt=0", "GET", W + "/team-a/train-1/log?attempt=0", "", 400, kBad, "attempt must be 1 to 1000000", "attempt"});
  add({"log follow=1", "GET", W + "/team-a/train-1/log?follow=1", "", 400, kBad, "unknown query parameter 'follow'", "follow"});
  add({"agent sync timeout=5", "POST", "/api/v1/agents/sync?timeout=5", "{}", 400, kBad, "takes wait", "timeout"});
  add({"audit verify with a filter", "GET", "/api/v1/audit/verify?limit=5", "", 400, kBad, "which takes none", "limit"});

  // ---- Tokens --------------------------------------------------------------------------
  add({"token: unknown role", "POST", T, R"({"user":"eve","role":"superuser","tenant":"team-a"})", 400, kBad, "unknown role 'superuser'", "role"});
  add({"token: member without a tenant", "POST", T, R"({"user":"eve","role":"member"})", 400, kBad, "needs a tenant", "tenant"});
  add({"token: member of a missing tenant", "POST", T, R"({"user":"eve","role":"member","tenant":"ghost"})", 404, "NotFound", "tenant ghost does not exist", "tenant"});
  add({"token: cluster-admin with a tenant", "POST", T, R"({"user":"eve","role":"cluster-admin","tenant":"team-a"})", 400, kBad, "has no tenant", "tenant"});
  add({"token: unknown field", "POST", T, R"({"user":"eve","role":"viewer","tenant":"team-a","expires":"never"})", 400, kBad, "unknown field expires", "expires"});
  add({"token: user with a space", "POST", T, R"({"user":"eve smith","role":"viewer","tenant":"team-a"})", 400, kBad, "may hold only", "user"});
  add({"token: no user", "POST", T, R"({"role":"viewer","tenant":"team-a"})", 400, kBad, "1 to 128", "user"});
  add({"token: user over 128 characters", "POST", T, R"({"user":")" + std::string(129, 'u') + R"(","role":"viewer","tenant":"team-a"})", 400, kBad, "1 to 128", "user"});
  add({"token: body is not JSON", "POST", T, "user: eve", 400, kBad, "JSON object", "body"});
  add({"token: body is a JSON array", "POST", T, R"(["eve","viewer"])", 400, kBad, "JSON object", "body"});
  add({"token: no body", "POST", T, "", 400, kBad, "JSON object", "body"});
  add({"token: role given twice", "POST", T, R"({"user":"eve","role":"viewer","tenant":"team-a","role":"tenant-admin"})", 400, kBad, "", "role"});
  add({"token: role is a number", "POST", T, R"({"user":"eve","role":3,"tenant":"team-a"})", 400, kBad, "must be a string", "role"});
  add({"token: a member may not grant", "POST", T, R"({"user":"eve","role":"viewer","tenant":"team-a"})", 403, "Forbidden", "may not create", "", Tok::kMember});
  add({"token: a viewer granting in another tenant", "POST", T, R"({"user":"eve","role":"viewer","tenant":"team-b"})", 404, "NotFound", "does not exist", "tenant", Tok::kViewer});
  add({"revoke a missing token", "DELETE", T + "/0123456789ab", "", 404, "NotFound", "does not exist", "id"});

  // ---- Authorization odds and ends ---------------------------------------------------------
  add({"viewer cordons a node", "POST", "/api/v1/nodes/n1/cordon", "", 403, "Forbidden", "only a cluster-admin", "", Tok::kViewer});
  add({"member reads the audit log", "GET", "/api/v1/audit", "", 403, "Forbidden", "only a cluster-admin", "", Tok::kMember});
  add({"member creates a LocalQueue", "POST", "/api/v1/localqueues", kLq, 403, "Forbidden", "may not change LocalQueue", "", Tok::kMember});
  // The priority policy (docs/server.md, "Priority policy").
  add({"member gives a literal priority", "POST", W, Sub(kWl, R"("queueName":"q")", R"("queueName":"q","priority":5)"), 403, "Forbidden",
       "a literal spec.priority is for cluster-admins only", "spec.priority", Tok::kMember});
  add({"priority policy: allow-literal-priority not a boolean", "POST", "/api/v1/tenants",
       Sub(kNs, R"("name":"fresh-t")", R"("name":"fresh-t","annotations":{"allot.dev/allow-literal-priority":"yes"})"), 400, kBad,
       "must be \"true\" or \"false\"", "metadata.annotations.allot.dev/allow-literal-priority"});
  add({"priority policy: a class list with a bad name", "POST", "/api/v1/localqueues",
       Sub(kLq, R"("namespace":"team-a")", R"("namespace":"team-a","annotations":{"allot.dev/priority-classes":"low,Not_A_Name"})"), 400, kBad,
       "is not a WorkloadPriorityClass name", "metadata.annotations.allot.dev/priority-classes"});
  add({"viewer submits a workload", "POST", W, kWl, 403, "Forbidden", "may not submit", "", Tok::kViewer});
  add({"member submits into another tenant", "POST", W, Sub(kWl, R"("namespace":"team-a")", R"("namespace":"team-b")"), 404, "NotFound", "does not exist", "metadata.namespace", Tok::kMember});
  add({"member deletes another tenant's workload", "DELETE", W + "/team-b/infer-1", "", 404, "NotFound", "does not exist", "", Tok::kMember});

  // ---- Size ----------------------------------------------------------------------------------
  // ---- The reader's budget and the bounds on an object (core::ParseLimits) --
  // Each was a memory blow-up reachable with any token, a viewer's too.
  std::string laughs = "a0: &a0 [lol]\n";
  for (int i = 1; i < 10; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ",*a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  add({"billion laughs (viewer)", "POST", A, laughs, 400, kBad, "aliases expand to more than 100000 nodes", "", Tok::kViewer});
  add({"billion laughs to create", "POST", W, laughs, 400, kBad, "aliases expand to more than", ""});
  add({"alias inside its own anchor", "POST", A, "a: &x [1, *x]\n", 400, kBad, "an alias refers to a node that contains it", ""});
  add({"stray comma after a comment ending in |", "POST", W, "{} # |\n ,\n\n", 400, kBad, "where a document or value should start", ""});
  add({"stray comma after a comment ending in >", "POST", A, "{} # >\n ,\n\n", 400, kBad, "where a document or value should start", ""});
  add({"nesting deeper than 64", "POST", A, std::string(100, '[') + std::string(100, ']'), 400, kBad, "nested deeper than 64 levels", ""});
  add({"JSON nesting deeper than 64", "POST", W, "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", 400, kBad, "nested deeper than 64 levels", ""});
  add({"a million pods", "POST", W, Sub(kWl, R"("count":1)", R"("count":1000000)"), 400, kBad, "at most 10000 pods per workload", "spec.podSets[0].count"});
  add({"a million CPU-only pods (member)", "POST", W, Sub(Sub(kWl, R"("count":1)", R"("count":1000000)"), R"("nvidia.com/gpu":1)", R"("cpu":"1m")"), 400, kBad, "at most 10000 pods", "spec.podSets[0].count", Tok::kMember});
  add({"nine pod sets", "POST", W, Sub(kWl, R"("podSets":[)", R"("podSets":[{"name":"p1","count":1,"template":{}},{"name":"p2","count":1,"template":{}},{"name":"p3","count":1,"template":{}},{"name":"p4","count":1,"template":{}},{"name":"p5","count":1,"template":{}},{"name":"p6","count":1,"template":{}},{"name":"p7","count":1,"template":{}},{"name":"p8","count":1,"template":{}},)"), 400, kBad, "at most 8 are allowed", "spec.podSets"});
  std::string env = R"("env":[)";
  for (int i = 0; i < 1025; ++i) env += (i ? R"(,{"name":"V)" : R"({"name":"V)") + std::to_string(i) + R"(","value":"x"})";
  env += "],";
  add({"1,025 env entries", "POST", W, Sub(kWl, R"("template":{)", R"("template":{)" + env), 400, kBad, "at most 1024", "spec.podSets[0].env"});
  std::string labels = R"("labels":{)";
  for (int i = 0; i < 257; ++i) labels += (i ? R"(,"l)" : R"("l)") + std::to_string(i) + R"(":"v")";
  labels += "},";
  add({"257 labels", "POST", W, Sub(kWl, R"("metadata":{)", R"("metadata":{)" + labels), 400, kBad, "at most 256", "metadata.labels"});
  // Aliases let a body under 1 MiB decode to much more; the decoded object
  // is bounded too: annotations to 256 KiB, a whole object to 1.5 MiB.
  const std::string x200k = "\"" + std::string(200000, 'x') + "\"";
  add({"annotations over 256 KiB through aliases", "POST", W,
       "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: fresh-wl, namespace: team-a, annotations: {a: &x " + x200k +
           ", b: *x}}\nspec: {queueName: q, podSets: [{count: 1, template: {resources: {requests: {nvidia.com/gpu: 1}}}}]}\n",
       400, kBad, "at most 262144 bytes", "metadata.annotations"});
  add({"an object over 1.5 MiB through aliases", "POST", W,
       "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: fresh-wl, namespace: team-a}\n"
       "spec: {queueName: q, podSets: [{count: 1, template: {args: [&x " + x200k +
           ", *x, *x, *x, *x, *x, *x, *x, *x], resources: {requests: {nvidia.com/gpu: 1}}}}]}\n",
       400, kBad, "bytes are allowed for one stored object", ""});

  // Label keys and values, annotation keys and resource names follow
  // Kubernetes' syntax.
  add({"label key with a space", "POST", W, Sub(kWl, R"("metadata":{)", R"("metadata":{"labels":{"bad key!":"v"},)"), 400, kBad, "label key 'bad key!' is not valid", "metadata.labels"});
  add({"label key with two slashes", "POST", "/api/v1/tenants", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fresh-t","labels":{"a/b/c":"v"}}})", 400, kBad, "one '/' at most", "metadata.labels", Tok::kAdmin, {"/api/v1/tenants/fresh-t"}});
  add({"label key with an upper-case prefix", "POST", W, Sub(kWl, R"("metadata":{)", R"("metadata":{"labels":{"Example.com/x":"v"},)"), 400, kBad, "prefix 'Example.com' is not a DNS-1123 subdomain", "metadata.labels"});
  add({"label value too long", "POST", W, Sub(kWl, R"("metadata":{)", R"("metadata":{"labels":{"k":")" + std::string(64, 'v') + R"("},)"), 400, kBad, "a label value is at most 63 characters", "metadata.labels[k]"});
  add({"label value with a space", "POST", W, Sub(kWl, R"("metadata":{)", R"("metadata":{"labels":{"k":"a b"},)"), 400, kBad, "the value 'a b' of label k is not valid", "metadata.labels[k]"});
  add({"annotation key with a space", "POST", W, Sub(kWl, R"("metadata":{)", R"("metadata":{"annotations":{"my note":"v"},)"), 400, kBad, "annotation key 'my note'", "metadata.annotations"});
  add({"resource name with a path", "POST", W, Sub(kWl, R"("nvidia.com/gpu":1)", R"("nvidia.com/mig-../../x":1)"), 400, kBad, "resource name 'nvidia.com/mig-../../x' is not valid", kReq});
  add({"covered resource with a space", "POST", "/api/v1/clusterqueues", Sub(Sub(kCq, R"("coveredResources":["nvidia.com/gpu"])", R"("coveredResources":["nvidia.com/gpu x"])"), R"("name":"nvidia.com/gpu")", R"("name":"nvidia.com/gpu x")"), 400, kBad, "resource name 'nvidia.com/gpu x'", "spec.resourceGroups[0].coveredResources", Tok::kAdmin, {"/api/v1/clusterqueues/fresh-cq"}});
  add({"flavor node label value with a slash", "POST", "/api/v1/resourceflavors", Sub(kFlavor, R"("gpu":"l4")", R"("gpu":"l4/x")"), 400, kBad, "the value 'l4/x' of label gpu", "spec.nodeLabels[gpu]", Tok::kAdmin, {"/api/v1/resourceflavors/fresh-f"}});

  add({"body over 1 MiB", "POST", A, kNs + "\n#" + std::string((1 << 20) + 16, 'x') + "\n", 413, "PayloadTooLarge", "", {}});
  add({"token body over 1 MiB", "POST", T, R"({"user":")" + std::string((1 << 20) + 16, 'u') + R"("})", 413, "PayloadTooLarge", "", {}});
  return r;
}

// Every list an admin sees, and the tokens: what "state" means here
// (not the time a list says it was read).
std::string Fingerprint(TestServer& srv) {
  static const std::regex kReadAt(",\"serverTimeUnixMs\":[0-9]+");
  std::string fp;
  for (const char* p : kPlurals) {
    net::Response r = srv.Admin("GET", std::string("/api/v1/") + p);
    fp += std::string(p) + " " + std::to_string(r.status) + " " +
          std::regex_replace(r.body, kReadAt, "");
  }
  net::Response t = srv.Admin("GET", "/api/v1/tokens");
  fp += "tokens " + std::to_string(t.status) + " " + t.body;
  return fp;
}

std::string FirstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i > 120 ? i - 120 : 0;
  return "before: ..." + a.substr(from, 300) + "\nafter:  ..." + b.substr(from, 300);
}

TEST(ApiBadRequest, EveryRowIsRejectedAndChangesNothing) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  // The cluster is as intended: train-1 admitted on n1, big and infer-1
  // pending.
  net::Response r = srv->Admin("GET", "/api/v1/workloads/team-a/train-1");
  ASSERT_NE(r.body.find("\"state\":\"Admitted\""), std::string::npos) << r.body;
  r = srv->Admin("GET", "/api/v1/workloads/team-a/big");
  ASSERT_NE(r.body.find("\"state\":\"Pending\""), std::string::npos) << r.body;

  const std::string viewer = srv->NewToken("vera", "viewer", "team-a");
  const std::string member = srv->NewToken("max", "member", "team-a");
  std::string revoked_id;
  const std::string revoked = srv->NewToken("rex", "tenant-admin", "team-a", &revoked_id);
  r = srv->Admin("DELETE", "/api/v1/tokens/" + revoked_id);
  ASSERT_EQ(r.status, 200) << r.body;

  const std::vector<Row> rows = Rows();
  ASSERT_GE(rows.size(), 60u);
  std::printf("[ bad-request ] %zu rows\n", rows.size());
  std::string before = Fingerprint(*srv);
  for (const Row& row : rows) {
    SCOPED_TRACE("row: " + row.desc + " (" + row.method + " " + row.target + ")");
    std::string auth;
    switch (row.tok) {
      case Tok::kAdmin: auth = "Bearer " + srv->admin_token(); break;
      case Tok::kNone: break;
      case Tok::kGarbage: auth = "Bearer allot_" + std::string(64, '0'); break;
      case Tok::kRevoked: auth = "Bearer " + revoked; break;
      case Tok::kBasic: auth = "Basic YWRtaW46YWRtaW4="; break;
      case Tok::kViewer: auth = "Bearer " + viewer; break;
      case Tok::kMember: auth = "Bearer " + member; break;
    }
    net::Response res = srv->Send(auth, row.method, row.target, row.body);
    std::string shown = res.body.size() > 600 ? res.body.substr(0, 600) + "..." : res.body;
    EXPECT_EQ(res.status, row.status) << shown;
    boost::system::error_code ec;
    json::value v = json::parse(res.body, ec);
    const json::object* err = nullptr;
    if (!ec && v.is_object() && v.as_object().contains("error") &&
        v.at("error").is_object()) {
      err = &v.at("error").as_object();
    }
    if (err == nullptr) {
      ADD_FAILURE() << "no {\"error\":{...}} body: " << shown;
    } else {
      auto str = [&](const char* k) -> std::string {
        const json::value* x = err->if_contains(k);
        return x && x->is_string() ? std::string(x->as_string()) : "<missing>";
      };
      EXPECT_NE(str("code"), "<missing>") << shown;
      EXPECT_NE(str("message"), "<missing>") << shown;
      EXPECT_NE(str("field"), "<missing>") << shown;
      if (!row.code.empty()) {
        EXPECT_EQ(str("code"), row.code) << shown;
      }
      if (!row.message.empty()) {
        EXPECT_NE(str("message").find(row.message), std::string::npos)
            << "message lacks '" << row.message << "': " << shown;
      }
      if (row.field) {
        EXPECT_EQ(str("field"), *row.field) << shown;
      }
    }
    if (row.status == 401) {
      bool challenge = false;
      for (const auto& [k, val] : res.headers) {
        challenge = challenge || (k == "www-authenticate" && val.find("Bearer") == 0);
      }
      EXPECT_TRUE(challenge) << "401 without WWW-Authenticate: Bearer";
    }
    for (const std::string& target : row.absent) {
      net::Response g = srv->Admin("GET", target);
      EXPECT_EQ(g.status, 404) << target << " exists after a failed request: " << g.body;
    }
    std::string after = Fingerprint(*srv);
    if (after != before) {
      ADD_FAILURE() << "the state changed:\n" << FirstDifference(before, after);
      before = after;
    }
  }

  // The valid bases the rows break are themselves accepted: every row failed
  // for the reason it names, not because its base was already wrong.
  struct Base {
    const char* plural;
    const std::string* body;
  };
  for (Base b : {Base{"resourceflavors", &kFlavor}, Base{"cohorts", &kCohort},
                 Base{"clusterqueues", &kCq}, Base{"localqueues", &kLq},
                 Base{"workloadpriorityclasses", &kPc}, Base{"tenants", &kNs},
                 Base{"nodes", &kNode}, Base{"workloads", &kWl}}) {
    net::Response c = srv->Admin("POST", std::string("/api/v1/") + b.plural, *b.body);
    EXPECT_EQ(c.status, 201) << b.plural << ": " << c.body;
  }
  net::Response t = srv->Admin("POST", "/api/v1/tokens", R"({"user":"eve","role":"viewer","tenant":"team-a"})");
  EXPECT_EQ(t.status, 201) << t.body;
  // The server is still healthy after all of that.
  EXPECT_EQ(srv->Admin("GET", "/healthz").status, 200);
}

// A watch resumed from a resourceVersion the server no longer holds events
// for must be told to list again: Kubernetes answers 410 Gone (and
// server/owner.h says so too).
TEST(ApiBadRequest, WatchFromAForgottenResourceVersionIsGone) {
  auto srv = TestServer::StartWith(Cluster());
  ASSERT_NE(srv, nullptr);
  // A restart empties the event ring: resourceVersion 1 is history now.
  ASSERT_TRUE(srv->Restart()) << srv->Log();
  net::Response r = srv->Admin("GET", "/api/v1/workloads?watch=1&resourceVersion=1");
  EXPECT_EQ(r.status, 410) << r.body;
  EXPECT_NE(r.body.find("too old"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace allot::server
