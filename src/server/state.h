// State: everything the control plane knows, owned by one thread.
//
// The state owner (server/owner.h) calls State from its single thread, so
// State has no locks. Every mutating call validates first and changes
// nothing on error; on success it changes memory and records what to write
// (Txn::batch) and what to tell watchers (Txn::events). The owner commits
// the batch before anyone is told (group commit), so memory runs ahead of
// the store only for the length of one turn; a failed commit aborts the
// process and a restart reloads the store.
//
// Who may call: the owner thread only (server/owner.h), with the API's
// decisions already made (server/access.h: State checks no principal in
// its mutators; its reads take the reader to answer with what it may see).
// Network threads read only token_index() and metrics(), which are
// thread-safe.
//
// Its parts, one job each:
//   state.cc             loading, and configuration changes (objects and
//                        their store records, all or nothing);
//   state_workloads.cc   the workload lifecycle: submission checks,
//                        evictions (Reschedule), a workload's end
//                        (Finish), the scheduling turn (FinishTurn, Flush);
//   state_api.cc         the request verbs and reads; state_json.cc the JSON
//                        they show;
//   state_agents.cc      an agent's sync: its node joins or changes, what
//                        its pod reports do to workloads;
//   state_metrics.cc     the scrape's gauges and the dashboard's overview;
//   state_controllers.cc the controllers' view and their actions;
//   classes of their own: Agents (agents.h: agent liveness, pods and where
//   they run, logs), Accounting (accounting.h: accounting of held devices
//   and GPU telemetry), Tokens (tokens.h) and AuditTrail (audit_trail.h);
//   the records the parts share (WorkloadRecord, Objects) are in records.h.
//
// Scheduling: workload arrivals and deletions go to the scheduler
// incrementally, and so do a node's replacement or removal, its readiness
// and evictions (Scheduler::UpdateNode, RemoveNode, EvictWorkload; an
// agent's node joins with AddNode); any other change to flavors, cohorts,
// ClusterQueues, LocalQueues, priority classes, tenants, nodes (one added
// through the API) or the scheduler config rebuilds the scheduler from the
// whole state (admitted workloads keep their placements; pending ones keep
// their arrival order). A rebuild numbers admissions in arrival order, an
// incremental change keeps the order they were admitted in: victims of
// equal priority are chosen by it (sched/scheduler.h). Schedule()
// then runs cycles until nothing changes and records every decision.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/priority_policy.h"
#include "core/status.h"
#include "ctrl/controller.h"
#include "ctrl/runner.h"
#include "metrics/metrics.h"
#include "sched/scheduler.h"
#include "server/accounting.h"
#include "server/agents.h"
#include "server/audit_trail.h"
#include "server/authz.h"
#include "server/pools.h"
#include "server/provider.h"
#include "server/records.h"
#include "server/secrets.h"
#include "server/tokens.h"
#include "store/store.h"

namespace allot::server {

// The tenant that always exists, as Kubernetes' namespace "default" does
// (State::Load adds it when the store has none; it cannot be deleted).
inline constexpr char kDefaultTenant[] = "default";

// One change for watchers: a line of newline-delimited JSON.
struct Event {
  int64_t resource_version = 0;
  Kind kind = Kind::kWorkload;
  std::string tenant;  // The object's tenant ("" for cluster-scoped kinds).
  std::string line;    // {"type":"ADDED|MODIFIED|DELETED","object":{...}}\n
  // The line for readers other than cluster-admins when it differs (a
  // workload whose conditions carry a detail naming another tenant's
  // workload); empty: `line` is for everyone.
  std::string tenant_line;
  const std::string& LineFor(const Principal& p) const {
    return tenant_line.empty() || p.role == Role::kClusterAdmin ? line : tenant_line;
  }
};

// What one owner turn writes and publishes.
struct Txn {
  int64_t now_unix_ms = 0;
  store::Batch batch;
  std::vector<Event> events;
  // Workload key -> its entry in batch.puts (set by State::FinishTurn), so
  // a reply can send the JSON just written instead of encoding it again.
  std::unordered_map<std::string, size_t> workload_puts;
  const std::string* WrittenWorkload(const std::string& key) const {
    auto it = workload_puts.find(key);
    return it == workload_puts.end() ? nullptr : &batch.puts[it->second].body;
  }
};

struct ListOptions {
  std::string tenant;  // Namespaced kinds: only this tenant.
  std::string queue;   // Workloads: only this LocalQueue.
  std::optional<WorkloadState> state;
  core::Labels labels;  // Every pair must match.
  int64_t limit = 0;    // 0: all.
  std::string after;    // Continue after this key.
};

// The result of applying one document.
struct ApplyResult {
  Kind kind;
  std::string key;
  std::string action;  // "created", "configured", "unchanged".
};

class State {
 public:
  // Rebuilds the state from the store's snapshot; an unreadable row is an
  // error that names it.
  static Result<std::unique_ptr<State>> Load(const store::Snapshot& snap);
  ~State();

  // ---- Objects --------------------------------------------------------
  // The mutators check what is asked, not who asks: the API edge decided
  // that (server/access.h) before calling them; `a` is who State records.
  // `doc` holds exactly one object of `kind` (as parsed from a request
  // body). Create fails with AlreadyExists; Replace with NotFound, or
  // FailedPrecondition when `expected_rv` is given and stale.
  Status Create(const Actor& a, Kind kind, core::Config doc, Txn* txn);
  Status Replace(const Actor& a, Kind kind, const std::string& key,
                 core::Config doc, std::optional<int64_t> expected_rv,
                 Txn* txn);
  // Refuses (FailedPrecondition) to delete what admitted workloads use
  // unless `drain`, which evicts them first.
  Status Delete(const Actor& a, Kind kind, const std::string& key,
                bool drain, Txn* txn);
  // cordon (unschedulable), uncordon, or drain (cordon and evict what runs
  // there back to the queues).
  Status NodeAction(const Actor& a, const std::string& node,
                    const std::string& action, Txn* txn);
  // Creates or replaces every object of `docs`, all or nothing.
  Result<std::vector<ApplyResult>> Apply(const Actor& a, core::Config docs,
                                         Txn* txn);
  // Names each object of `doc` that gives metadata.generateName instead of
  // a name: the prefix and 5 random characters, drawn again while an object
  // of its kind (here or in `doc`) has the name (core/generate_name.h).
  // Before Create or Apply, so that they see named objects, and before the
  // API edge decides who may write them.
  Status GenerateNames(core::Config* doc);
  // What the API edge reads to decide who may do what: the configuration,
  // and whether an object exists.
  const Objects& objects() const { return objs_; }
  bool Exists(Kind kind, const std::string& key) const;
  // The reads take the reader: they answer with what `p` may see (another
  // tenant's objects do not exist for it) and, for cluster-admins only,
  // the details that name other tenants' workloads.
  // `explain` adds a pending workload's reason and place in line, which
  // costs a sort of its ClusterQueue's queue: a single GET does it, the
  // replies to writes do not.
  Result<boost::json::object> Get(const Principal& p, Kind kind,
                                  const std::string& key,
                                  bool explain = true) const;
  // The serialized list: {"items":[...], "resourceVersion":"N",
  // "serverTimeUnixMs":now, "continue":"key"?} ("continue" when `limit`
  // cut it short). `now_unix_ms` is the turn's time: every condition in
  // the list is at or before it.
  Result<std::string> List(const Principal& p, Kind kind,
                           const ListOptions& opts, int64_t now_unix_ms) const;
  // The JSON of every object `p` may see of `kind` in `tenant` (all
  // tenants when empty), as ADDED events, for a watch that starts now.
  std::vector<std::string> Snapshot(const Principal& p, Kind kind,
                                    const std::string& tenant) const;

  // ---- Parking (server/state_parking.cc, docs/parking.md) ----------------
  // Parks admitted workload `key`: its pods stop and its devices go back,
  // its admission and quota stay (state Parked, condition Parked with
  // `reason` and `message`, who or what asked and why). NotFound; Failed-
  // Precondition naming its state when it is not admitted, or parked.
  Status ParkWorkload(const std::string& key, const std::string& reason,
                      const std::string& message, Txn* txn);
  // Resumes parked workload `key`: placed again now on free devices of its
  // flavors, without queueing; when none can take it, at the start of every
  // later turn until some can, before the queues' heads (its condition says
  // why). A Suspended workload (inactive, or preempted while parked) goes
  // back to its queue. FailedPrecondition otherwise. *result: "resumed",
  // "waiting" or "queued".
  Status ResumeWorkload(const Actor& a, const std::string& key, Txn* txn, std::string* result);
  // Activity reported for `key` at `now` (its custom idle signal,
  // allot.dev/idle-signal; kept in memory). NotFound.
  Status ReportActivity(const std::string& key, int64_t now);

  // ---- Node agents (server/state_agents.cc, server/agents.h) --------------
  // Registers or updates the agent's node (hardware changes evict what no
  // longer fits), marks it alive, and applies its pod reports: Running when
  // every pod of a workload runs, Succeeded when all exited 0, Failed when
  // one did not (its quota is released and its other pods are stopped).
  // The node changes as the system actor "agent:NODE"; whether the caller
  // may act as that node was decided at the API edge.
  // *registered: the Node object was created or changed.
  Status AgentSync(AgentReport report, Txn* txn, bool* registered = nullptr);
  // The pods `node` should run now, with their secrets (a pod whose
  // Secret is gone gets its start_error).
  std::vector<DesiredPod> DesiredPods(const std::string& node) const;
  // Nodes whose desired pods changed since the last call.
  std::set<std::string> TakeChangedNodes() { return agents_.TakeChangedNodes(); }
  std::vector<proto::PodNetwork> NetworkPeers(const std::string& node) const {
    return agents_.NetworkPeers(node);
  }
  bool NodeReady(const std::string& node) const { return agents_.Ready(node); }
  // The node's Ready condition for its status.conditions (True with reason
  // NoAgent for a node without an agent).
  boost::json::object NodeReadyCondition(const std::string& node) const {
    return agents_.ReadyCondition(node);
  }
  // Where the log of one pod of a workload lives: pod `rank` (0-based, over
  // its pod sets in admission order) of attempt `attempt` (0: the current
  // or last one). NotFound as for a GET (another tenant's is NotFound too);
  // otherwise as Agents::LogTarget says.
  using PodLogTarget = Agents::PodLogTarget;
  Result<PodLogTarget> LogTarget(const Principal& p, const std::string& key,
                                 int32_t rank, int32_t attempt) const;

  // ---- Controllers (server/state_controllers.cc) -------------------------
  // A turn's controller step, after its commands and before FinishTurn:
  // tells `runner` what changed, runs the controllers due at the turn's
  // time on this state's view (ctrl/controller.h) and applies their
  // actions. The first call's time is when the controllers started
  // (View::StartedMs).
  void RunControllers(ctrl::Runner* runner, Txn* txn);
  // After FinishTurn: tells `runner` what the turn's scheduling changed and
  // returns when the next controller is due (ctrl::kNever: none).
  int64_t ControllersNextWake(ctrl::Runner* runner) {
    runner->Note(std::exchange(ctrl_changes_, 0));
    return runner->NextWakeMs();
  }

  // ---- Usage and cost (server/accounting.h) ------------------------------
  // Rows for what admitted workloads hold now, from their admission to
  // `now` (the store has every closed stretch): all tenants when `tenant`
  // is empty.
  std::vector<store::UsageRow> OpenUsage(const std::string& tenant,
                                         int64_t now) const {
    return Accounting::OpenUsage(workloads_, tenant, now, objs_.flavors);
  }
  // Admitted workloads whose GPUs have all been under the idle threshold
  // for at least `min_ms` (by agents' telemetry), with since when.
  using IdleHolder = Accounting::IdleHolder;
  std::vector<IdleHolder> IdleHolders(const std::string& tenant, int64_t now,
                                      int64_t min_ms) const {
    return Accounting::IdleHolders(workloads_, tenant, now, min_ms, objs_.flavors);
  }
  // The latest sample of each GPU of Ready agent nodes (`node` empty: all),
  // by UUID, with when it came.
  std::map<std::string, std::pair<int64_t, GpuTelemetry>> LatestTelemetry(
      const std::string& node) const {
    return agents_.LatestTelemetry(node);
  }
  // The utilization under which a GPU counts as idle (percent).
  void SetIdleThreshold(int pct) { accounting_.SetIdleThreshold(pct); }
  // How long GPU telemetry rollups are kept (server/telemetry.h).
  void SetTelemetryRetention(int64_t ms) { accounting_.SetTelemetryRetention(ms); }

  // Autoscaled NodePools (docs/autoscaling.md, state_pools.cc): where the
  // exec provider's calls go (the server runs them off the owner thread;
  // unset, none runs and every resume fails at its boot timeout), and a
  // call's result, back on the owner thread.
  // Calls made before (a pool's first `list`, at load) run now.
  void SetProviderRunner(std::function<void(ProviderCall)> run) {
    run_provider_ = std::move(run);
    for (ProviderCall& c : queued_provider_calls_) run_provider_(std::move(c));
    queued_provider_calls_.clear();
  }
  void PoolCallDone(const ProviderResult& r, Txn* txn);
  // What pending workload `key` waits for beyond its quota and nodes: the
  // autoscaler's words ("waits for 2 nodes of pool p, booting, ..."), or "".
  const std::string& CapacityNote(const std::string& key) const;

  // ---- Secrets (server/secrets.h) -----------------------------------------
  // The key that seals Secrets (kSealKeyBytes); then CheckSecretKey says
  // whether the stored ones open with it.
  void SetSecretKey(std::string key) { secrets_.SetKey(std::move(key)); }
  Status CheckSecretKey() const { return secrets_.CheckKey(); }
  const Secrets& secrets() const { return secrets_; }
  // Creates or (`replace`) replaces a Secret of an existing tenant; returns
  // "created", "configured" or "unchanged". NotFound for no such tenant.
  Result<std::string> PutSecret(const core::Secret& s, bool replace,
                                const Actor& a, Txn* txn);
  Status DeleteSecret(const std::string& ns, const std::string& name, Txn* txn) {
    return secrets_.Delete(ns, name, &txn->batch);
  }

  // ---- Tokens and audit (server/tokens.h, server/audit_trail.h) ---------
  const Tokens& tokens() const { return tokens_; }
  // The principal of the live token whose secret hashes to `hash`.
  std::optional<Principal> Authenticate(const std::string& hash) const {
    return tokens_.Authenticate(hash);
  }
  // The same index, for network threads (see TokenIndex).
  std::shared_ptr<const TokenIndex> token_index() const { return tokens_.index(); }
  std::shared_ptr<TokenIndex> internal_token_index() const { return tokens_.internal_index(); }
  // Whether token `id` exists and is not revoked: what lets an open watch,
  // a held agent poll or a pending log read go on (Owner::Publish,
  // Api::OnTurnEnd end the others at the end of the turn that revoked it).
  bool TokenLive(const std::string& id) const { return tokens_.Live(id); }
  bool HasTokens() const { return !tokens_.empty(); }
  // Tokens::Create with the tenant looked up; returns (id, secret).
  Result<std::pair<std::string, std::string>> CreateToken(const std::string& user, Role role,
                                                          const std::string& tenant,
                                                          const std::string& node, Txn* txn);
  Status RevokeToken(const std::string& id, Txn* txn) {
    return tokens_.Revoke(id, &txn->batch);
  }
  // The tokens `p` may grant (and so see and revoke).
  boost::json::array ListTokens(const Principal& p) const;
  // Registers `secret` as a cluster-admin token (bootstrap).
  Status AddAdminToken(const std::string& secret, const std::string& user, Txn* txn) {
    return tokens_.AddAdmin(secret, user, txn->now_unix_ms, &txn->batch);
  }
  // Appends an audit record to the turn's batch (AuditTrail::Append).
  void Audit(const std::string& principal, const std::string& tenant,
             const std::string& verb, const std::string& object,
             const std::string& outcome, Txn* txn) {
    audit_.Append(principal, tenant, verb, object, outcome, txn->now_unix_ms, &txn->batch);
  }
  // Set at start when the log's tail does not match its head (audit.h,
  // CheckAuditTail): what is wrong. While set, the API refuses changes and
  // `audit verify` fails.
  void SetAuditBroken(std::string why) { audit_.SetBroken(std::move(why)); }
  const std::string& AuditBroken() const { return audit_.broken(); }
  // A cluster-admin's acknowledgement of the break (AuditTrail::Acknowledge).
  Status AcknowledgeAuditBreak(const std::string& user, const std::string& reason, Txn* txn) {
    return audit_.Acknowledge(user, "", reason, txn->now_unix_ms, &txn->batch);
  }
  // The newest audit record (seq, hash) this state wrote or loaded.
  std::pair<int64_t, std::string> AuditHead() const { return audit_.head(); }

  int64_t resource_version() const { return rv_; }
  size_t WorkloadCount() const { return workloads_.size(); }
  // Event counters and histograms (thread-safe; shared with the network
  // threads and the committer).
  const std::shared_ptr<metrics::Metrics>& metrics() const { return metrics_; }
  // The gauge families of a scrape (server/state_metrics.cc): Kueue's queue
  // levels, DCGM's GPU telemetry with who holds each GPU, Allot's own.
  void CollectMetrics(metrics::Gauges* g) const;
  // Device UUID -> the admitted, unfinished workload holding it, over every
  // node (a MIG slice's holder also holds its GPU).
  std::unordered_map<std::string, const WorkloadRecord*> GpuHolders() const;
  // The same for one node: (GPU UUID, holder) per device placed there.
  std::vector<std::pair<std::string, const WorkloadRecord*>> HeldGpus(
      const std::string& node) const;
  // The dashboard's overview (GET /api/v1/overview): every GPU of the fleet
  // as free, allocated, held but idle (its holder's GPUs under the idle
  // threshold for `idle_ms`) or unhealthy, in total and by flavor and
  // location, how many are simulated, and the workloads `p` may see by
  // state. GPU counts are the shared infrastructure's (as ClusterQueue
  // usage is): no workload of another tenant is named.
  boost::json::object Overview(const Principal& p, int64_t now, int64_t idle_ms) const;
  const WorkloadRecord* FindWorkload(const std::string& key) const;
  // Where a running pod of a workload serves (PodStatus::endpoint).
  struct PodEndpoint {
    std::string workload;  // ns/name
    std::string pod_id;    // ns/name/aN/podset/index
    std::string endpoint;  // HOST:PORT
  };
  // The first pod of `key`, in pod id order, that runs and reported an
  // endpoint; nullopt: none (not admitted, parked, starting).
  std::optional<PodEndpoint> EndpointOf(const std::string& key) const;
  // Every such first pod of the running workloads of type `type`.
  std::vector<PodEndpoint> Endpoints(const std::string& type) const;
  // Its resume was asked and waits for devices (TryResumes).
  bool ResumeWaits(const std::string& key) const { return resume_wanted_.count(key) > 0; }
  // Ends an owner turn: runs scheduling cycles until nothing changes,
  // records the decisions and writes every workload changed this turn
  // (Txn::batch, Txn::events). Returns the number of cycles.
  int32_t FinishTurn(Txn* txn);

 private:
  struct Change;

  State();
  // The scheduler's input: the configuration, then admitted workloads
  // (minus `evict`), then pending ones in arrival order.
  core::Config BuildConfig(const Objects& objs,
                           const std::set<std::string>& evict) const;
  // Applies `changes` to a copy of the configuration, validates it with
  // every workload, builds a scheduler for it, calls `check` (if set) on
  // the candidate, and only then commits.
  Status ChangeConfig(
      const Actor& a, std::vector<Change> changes, bool drain, Txn* txn,
      std::vector<ApplyResult>* results,
      const std::function<Status(const Objects&)>& check = nullptr);
  // The priority policy of a submission to `queue` in tenant `ns`
  // (core/priority_policy.h), and whether `a` may give `w` its priority
  // when it is stored with class `cls`.
  static core::PriorityPolicy PriorityPolicyOf(const Objects& o, const std::string& ns,
                                               const std::string& queue);
  static Status CheckPriority(const Actor& a, const core::Workload& w,
                              const std::string& cls, const core::PriorityPolicy& policy);
  // The class `w` is stored with: its own, or, when it names none and
  // gives no literal priority, its queue's (or tenant's) default.
  static std::string EffectiveClass(const core::Workload& w, const core::PriorityPolicy& policy);
  static void ApplyDefaultPriority(const Objects& o, core::Workload* w);
  // Rewrites `w`'s pod set images through the image catalogue of `o` and
  // the tenant's default image, and checks them against the tenant's
  // allowed images (core/image_policy.h). Before CheckWorkload, so that a
  // workload is stored with the exact references it runs.
  static Status ResolveImages(const Objects& o, core::Workload* w);
  // The checks of a submission against configuration `o`.
  Status CheckWorkload(const Actor& a, const core::Workload& w,
                       const Objects& o) const;
  Status InUse(const Objects& objs, Kind kind, const std::string& key,
               bool drain, std::set<std::string>* evict) const;
  Status SubmitWorkload(const Actor& a, core::Workload w, Txn* txn);
  Status DeleteWorkload(const std::string& key, Txn* txn);
  // `detail`: the message naming another tenant's workload, for
  // cluster-admins (Condition::detail).
  void Evicted(WorkloadRecord* rec, const std::string& reason,
               const std::string& message, int64_t now, const std::string& detail = "");
  void MarkDirty(const std::string& key) { dirty_.insert(key); }
  void Flush(Txn* txn);
  // `details`: with the conditions' details (what the store keeps and
  // cluster-admins read); without, for everyone else.
  boost::json::object WorkloadJson(const WorkloadRecord& rec, bool explain,
                                   bool details = true) const;
  // The event of a workload's change: its line, and the line without
  // details when it has any.
  Event WorkloadEvent(const WorkloadRecord& rec, const char* type,
                      const boost::json::object& obj) const;
  // The object's API JSON; `status` adds what is computed now (usage of a
  // ClusterQueue, counts of a LocalQueue), which the store does not keep.
  boost::json::object ConfigJson(Kind kind, const std::string& key,
                                 bool status) const;
  int64_t RvOf(Kind kind, const std::string& key) const;
  void PutObject(Kind kind, const std::string& key, bool added, Txn* txn);

  Objects objs_;
  std::map<std::string, WorkloadRecord> workloads_;
  std::unique_ptr<sched::Scheduler> sched_;
  Tokens tokens_;
  Secrets secrets_;
  AuditTrail audit_;
  std::set<std::string> dirty_;    // Workloads changed this turn.
  std::set<std::string> created_;  // Workloads created this turn.
  int64_t rv_ = 0;
  int64_t seq_ = 0;
  // Draws the suffixes of generated names (GenerateNames).
  std::function<uint64_t()> random_;
  size_t removed_since_rebuild_ = 0;
  std::shared_ptr<metrics::Metrics> metrics_ = std::make_shared<metrics::Metrics>();
  // Accounting of held devices and GPU telemetry; agents' liveness, where
  // pods run and what agents said of them.
  Accounting accounting_;
  Agents agents_;
  // Where `rec` is queued, for the metrics' labels.
  metrics::QueueLabels QueueOf(const WorkloadRecord& rec) const;

  // Controllers: when they first ran, what changed for them since they
  // last looked (ctrl::Change bits), and the failed pod of each workload
  // whose gang the gang-restart controller has yet to restart or fail.
  class ControllerView;
  int64_t controllers_started_ms_ = 0;
  uint32_t ctrl_changes_ = 0;
  std::map<std::string, std::string> pod_failures_;  // Key -> why.
  // Parked workloads whose resume waits for devices: key -> when asked.
  std::map<std::string, int64_t> resume_wanted_;
  // Places what resume_wanted_ holds where devices allow (FinishTurn,
  // before the cycles).
  void TryResumes(int64_t now);
  // The record of a resumed workload (its new placement from the scheduler).
  void Resumed(WorkloadRecord* rec, int64_t asked_ms, int64_t now);
  // Kueue's spec.active changed by an apply of workload `key` (unfinished):
  // false parks an admitted one and holds a pending one out of its queue
  // (Suspended); true resumes (ResumeWorkload).
  Status SetActive(const Actor& a, const std::string& key, bool active, Txn* txn);
  // A parked workload lost its quota (a preemption: reason Preempted; its
  // ClusterQueue's max-parked: MaxParked): out of the scheduler, Suspended
  // until resumed. `message` says why, on its Parked condition.
  void SuspendParked(WorkloadRecord* rec, const std::string& reason, const std::string& message,
                     const std::string& detail, int64_t now);
  // Applies what controllers asked for, each action as the principal
  // "controller:NAME" and audited so. An action whose target no longer
  // qualifies (finished, requeued, already NotReady) is skipped. Nodes
  // marked NotReady by one call evict their workloads together, with one
  // message naming them all.
  void ApplyControllerActions(const std::vector<ctrl::TakenAction>& actions, Txn* txn);
  // The autoscaler's actions (state_pools.cc): provider calls, cordons,
  // failed boots, and its notes for pending workloads.
  void ApplyPoolActions(const std::vector<ctrl::TakenAction>& actions, Txn* txn);
  // The pools' runtime follows the NodePool objects (after a change and
  // at load).
  void SyncPools(int64_t now);
  // What the autoscaler needs of a ready pool node: cordoned, and its
  // workloads (GPUs there, movable) for consolidation.
  void DescribePoolNode(const std::string& node, ctrl::PoolNodeView* nv) const;
  // Runs a provider call, or keeps it until the runner is set.
  void RunProvider(ProviderCall c);
  // A workload arrived: its GPUs count toward its flavors' arrival rate
  // (headroom by arrivals).
  void NoteArrival(const core::Workload& w, int64_t now);
  mutable PoolRuntime pools_;  // ForEachPool keeps idle times as it reads.
  std::function<void(ProviderCall)> run_provider_;
  std::vector<ProviderCall> queued_provider_calls_;
  std::map<std::string, std::string> capacity_notes_;
  // Marks `nodes` NotReady and evicts what runs there, with one message:
  // "node a, b CLAUSE; node c CLAUSE2", clauses and nodes in the order given.
  struct NotReadyNode {
    std::string name;
    std::string message;  // Its Ready condition's.
    std::string clause;
  };
  void MarkNotReady(const std::vector<NotReadyNode>& nodes, int64_t now);
  // Takes `evict` out of the scheduler (they return to their queues,
  // Evicted with `reason` and `message`) and gives it the current state of
  // `nodes` (their readiness included), in place (Scheduler::EvictWorkload,
  // UpdateNode); `rebuild`, or a refusal, rebuilds it from the state instead.
  Status Reschedule(const std::set<std::string>& evict, const std::set<std::string>& nodes,
                    const std::string& reason, const std::string& message, int64_t now,
                    bool rebuild = false);
  // The node as the scheduler sees it: unschedulable while its agent is
  // NotReady.
  core::Node SchedulerNode(const core::Node& n) const;
  // Each node of `touched` that `cand` still has, validated alone (a node
  // change that leaves the rest as it is).
  Status CheckNodes(const Objects& cand,
                    const std::vector<std::pair<Kind, std::string>>& touched) const;
  // Replaces or removes the scheduler's nodes of `touched` as `cand` has
  // them, after evicting `evict` from it; changes nothing on an error
  // (FailedPrecondition, with the drain hint, for a stranded admission).
  Status ChangeNodes(const Objects& cand,
                     const std::vector<std::pair<Kind, std::string>>& touched,
                     const std::set<std::string>& evict);
  void Finish(WorkloadRecord* rec, bool succeeded, const std::string& reason,
              const std::string& message, int64_t now);
};

}  // namespace allot::server
