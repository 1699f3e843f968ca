// Who may do what, decided at the API edge before State is asked.
//
// Owner thread (the checks that read State); RouteAllows and the table are
// pure and may be used anywhere.
//
// Two layers, in this order:
//   1. The route table (kRouteRules, access.cc): which roles may call a
//      route at all. A node token speaks the agent protocol only, a metrics
//      token reads /metrics only, the audit log is the cluster-admins'.
//      Authed (api_internal.h) checks it for every request once its token
//      is authenticated, before the handler's work runs, as Kubernetes'
//      RBAC does before it looks anything up.
//   2. The object checks below: whether the principal may write this object
//      in this tenant (and act on this node: node actions are the
//      cluster-admins', but a node that does not exist is 404 first). Another
//      tenant's object, for a tenant-bound principal, does not exist: 404,
//      never 403, so names do not leak.
// Then State validates what is asked and records the Actor (authz.h); it
// checks no principal. Reads (State::Get, List, Snapshot, ...) take the
// reader and answer with what it may see (CanSee).
#pragma once

#include <cstdint>
#include <string>

#include "core/model.h"
#include "core/status.h"
#include "server/authz.h"

namespace allot::server {

class State;

// The routes as the table knows them.
enum class Route : uint8_t {
  kWhoami,            // GET /api/v1/whoami
  kObjectRead,        // GET /api/v1/KIND[/...] (list, watch, get)
  kObjectWrite,       // POST/PUT/DELETE /api/v1/KIND[/...], POST /api/v1/apply
  kTokens,            // /api/v1/tokens[/ID]
  kAuditRead,         // GET /api/v1/audit[/verify]
  kAuditAcknowledge,  // POST /api/v1/audit/acknowledge
  kNodeAction,        // POST /api/v1/nodes/NAME/{cordon,uncordon,drain}
  kPodLog,            // GET /api/v1/workloads/TENANT/NAME/log
  kAgentSync,         // POST /api/v1/agents/sync
  kAgentLogs,         // POST /api/v1/agents/logs
  kMetrics,           // GET /metrics
  kReports,           // GET /api/v1/{telemetry,overview,usage[/idle]}
  kSecrets,           // /api/v1/secrets[/TENANT[/NAME]]
};

// OK, or PermissionDenied with the table's message for `p`'s role; `what`
// names what is refused where the message has a place for it (the kind
// read, the node action).
Status RouteAllows(Route r, const Principal& p, const std::string& what = "");

// ---- Object checks (owner thread: they read `st`) ---------------------------

// Creating the objects of `doc` (POST /api/v1/KIND) or applying `docs`
// (POST /api/v1/apply): for each object, in order, then each workload, and
// a SchedulerConfig document: NotFound for a tenant `p` cannot see,
// PermissionDenied for what `p` may not write (a LocalQueue's priority
// policy and the SchedulerConfig are the cluster-admins').
Status MayCreateOrApply(const Principal& p, const core::Config& docs,
                        const State& st);
// Replacing or deleting object (kind, key): NotFound when `p` cannot see it
// or it does not exist, PermissionDenied when `p` may not write it.
// `verb`: "change" or "delete", for the message.
Status MayWriteObject(const Principal& p, Kind kind, const std::string& key,
                      const char* verb, const State& st);
// Creating a token with `role` for `tenant`: NotFound for another tenant
// than `p`'s, PermissionDenied for a role `p` may not grant.
Status MayCreateToken(const Principal& p, Role role, const std::string& tenant);
// Revoking token `id`: NotFound when it does not exist, is revoked, or `p`
// may not grant its role (so may not know of it).
Status MayRevokeToken(const Principal& p, const std::string& id,
                      const State& st);
// Cordoning, uncordoning or draining `node`: NotFound when it does not
// exist, PermissionDenied for anyone but a cluster-admin.
Status MayActOnNode(const Principal& p, const std::string& node,
                    const std::string& action, const State& st);
// Secrets of tenant `ns` (server/secrets.h): listing them and their keys
// (every role of the tenant), writing them (its admins and members), or
// reading their values (its admins only). NotFound for a tenant `p` cannot
// see or that does not exist.
enum class SecretAccess { kList, kWrite, kReveal };
Status MayUseSecrets(const Principal& p, const std::string& ns, SecretAccess a,
                     const State& st);
// Acting as node `name` (agent sync, log answers): PermissionDenied when
// `p`'s node token is bound to another name; `verb` as "act as".
Status MayActAs(const Principal& p, const std::string& name, const char* verb);

}  // namespace allot::server
