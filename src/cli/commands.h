// The client verbs of the allot command (apply, submit, get, describe,
// delete, cordon, uncordon, drain, token, audit, whoami) and `serve`.
//
// Each returns the process exit code: 0 success, 1 the server refused or
// could not be reached (its message printed as "allot: ..."), 2 bad usage.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/agent.h"
#include "cli/client.h"
#include "cli/dry_run.h"
#include "cli/up.h"

namespace allot::cli {

inline constexpr int kExitFailed = 1;

struct GetFlags {
  std::string kind;  // "workloads", "wl", "clusterqueues", "cq", ...
  std::string name;
  std::string tenant;
  std::string output = "table";  // table | json | yaml
  // The Kueue API version of json and yaml output (cli/kueue_version.h).
  std::string api_version = "kueue.x-k8s.io/v1beta2";
  bool watch = false;
  std::string state;
  std::string queue;
  std::string label;
  int64_t limit = 0;
};

struct SubmitFlags {
  std::string file;
  std::string name;
  std::string tenant;  // Empty: the token's tenant, else default.
  std::string queue;
  std::string priority_class;
  std::string type = "batch";
  int64_t gpus = 0;
  std::string mig;  // A MIG profile: 1g.10gb
  int32_t pods = 1;
  std::string cpu;
  std::string memory;
  std::vector<std::string> env;  // K=V
  std::string image;             // Empty: a process on the host.
  std::string image_pull_policy;
  std::vector<std::string> command;
};

struct LogsFlags {
  std::string workload;  // NAME or TENANT/NAME
  std::string tenant;    // Empty: the token's tenant, else default.
  int32_t pod = 0;       // Rank over the pod sets, 0-based.
  int32_t attempt = 0;   // 0: the current (or last) one.
  bool follow = false;
  int64_t tail_bytes = 64 << 10;
};

struct ServeFlags {
  std::string listen = "127.0.0.1:8470";
  std::string store;
  std::string tls_cert;
  std::string tls_key;
  std::string admin_token_file;
  std::string secret_key_file;
  std::string pool_dir;
  int threads = 2;
  int node_timeout_s = 15;
  int idle_util_pct = 5;
  int telemetry_retention_days = 30;
  std::string notebook_probe = "30s";  // A duration, 1s to 1h.
};

// Shared by the verbs' files: prints "allot: MESSAGE (field F)" to stderr
// and returns kExitFailed; prints rows as columns padded to their widest.
int Fail(const Status& s);
void PrintTable(const std::vector<std::vector<std::string>>& rows);

int CmdServe(const ServeFlags& f);
int CmdAgent(const ClientFlags& c, const AgentFlags& f);
int CmdUp(const UpFlags& f);
int CmdLogs(const ClientFlags& c, const LogsFlags& f);
// Prints one line per object: KIND NAME ACTION (created, configured,
// unchanged; a name the server generated for metadata.generateName is the
// one shown). With `skip_unsupported`, documents of kinds Allot does not
// run are left out and listed as skipped instead of refusing the whole
// apply.
int CmdApply(const ClientFlags& c, const std::vector<std::string>& files,
             bool skip_unsupported);
int CmdSubmit(const ClientFlags& c, const SubmitFlags& f);
int CmdGet(const ClientFlags& c, const GetFlags& f);
int CmdDescribe(const ClientFlags& c, const std::string& kind,
                const std::string& name, const std::string& tenant);
int CmdDelete(const ClientFlags& c, const std::string& kind,
              const std::string& name, const std::string& tenant, bool drain);
// action: park | resume (docs/parking.md).
int CmdPark(const ClientFlags& c, const std::string& action, const std::string& name,
            const std::string& tenant);
// park | resume every workload that the instant vector of PROMQL `query`
// on Prometheus at `prometheus` names (labels namespace and workload), once
// or, with `every` (a duration), again and again until killed;
// park_query.cc.
int CmdParkByQuery(const ClientFlags& c, const std::string& action, const std::string& prometheus,
                   const std::string& query, const std::string& every);
// action: cordon | uncordon | drain
int CmdNode(const ClientFlags& c, const std::string& action,
            const std::string& node);
// `node`: bind a node token to this node name or prefix ("sim-*").
int CmdTokenCreate(const ClientFlags& c, const std::string& user,
                   const std::string& role, const std::string& tenant,
                   const std::string& node);
int CmdTokenRevoke(const ClientFlags& c, const std::string& id);
int CmdTokenList(const ClientFlags& c);
int CmdAuditList(const ClientFlags& c, const std::map<std::string, std::string>& q);
// With `store_url`, verifies the store file itself (no server needed).
int CmdAuditVerify(const ClientFlags& c, const std::string& store_url);
// POST /api/v1/audit/acknowledge: a cluster-admin accepts a broken tail.
int CmdAuditAcknowledge(const ClientFlags& c, const std::string& reason);
int CmdWhoami(const ClientFlags& c);

// `allot usage [--by tenant|queue|clusterqueue|flavor|user|workload]
// [--since WHEN] [--until WHEN] [--tenant T] [-o table|csv|json]` and
// `allot usage idle [--minutes 30]`.
struct UsageFlags {
  std::string by = "tenant";
  std::string since, until, tenant;
  std::string output = "table";
  bool idle = false;
  int minutes = 30;
};
int CmdUsage(const ClientFlags& c, const UsageFlags& f);

}  // namespace allot::cli
