// Store: the durable state of an Allot server, behind one interface.
//
// The server's state owner keeps everything in memory and writes every
// change through a Store before it tells anyone. A Store holds opaque
// objects (kind, key -> resource version and a JSON body the server owns),
// API tokens (only their hashes), small metadata values and the
// hash-chained audit log. It knows nothing about Kueue or scheduling, so a
// PostgreSQL backend can follow without touching the rest.
//
// Guarantees:
//  - Commit applies a whole Batch in one transaction and returns only once
//    it is durable (synced); a crash (kill -9) loses no committed batch and
//    never shows half of one. A failed Commit changes nothing.
//  - Load returns exactly what the committed batches left.
//  - Thread-compatible: one caller at a time (the state owner). ListAudit
//    may be called from the same thread between commits.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace allot::store {

// One stored object. `key` is "name" (cluster-scoped) or "namespace/name".
struct ObjectRow {
  std::string kind;  // "Workload", "ClusterQueue", ...
  std::string key;
  int64_t resource_version = 0;
  std::string body;  // Opaque to the store (JSON written by the server).
};

struct TokenRow {
  std::string id;    // Public, short: names the token in lists and revoke.
  std::string hash;  // Hex SHA-256 of the secret; the secret is never stored.
  std::string user;
  std::string role;    // "cluster-admin", "tenant-admin", "member", "viewer".
  std::string tenant;  // Empty for cluster-admin.
  int64_t created_unix_ms = 0;
  bool revoked = false;
  // A node token bound to one node name ("gpu-07") or to names with a
  // prefix ("sim-*"); empty: any node (and every other role).
  std::string node;
};

// One audit record. `seq` starts at 1 and has no gaps; `hash` is the
// chain hash the server computes over prev_hash and the other fields.
struct AuditRow {
  int64_t seq = 0;
  int64_t time_unix_ms = 0;
  std::string principal;  // User name, or "-" when authentication failed.
  std::string tenant;
  std::string verb;     // "create", "replace", "delete", "apply", "login", ...
  std::string object;   // "Workload team-a/train", a route, ...
  std::string outcome;  // "ok", or an HTTP status and a short reason.
  std::string prev_hash;
  std::string hash;
};

struct AuditFilter {
  std::optional<int64_t> since_unix_ms;  // Inclusive.
  std::optional<int64_t> until_unix_ms;  // Exclusive.
  std::string principal;                 // Empty: any. Exact match.
  std::string tenant;                    // Empty: any.
  std::string verb;                      // Empty: any.
  int64_t after_seq = 0;                 // Only records with seq > after_seq.
  int64_t limit = 0;  // 0: no limit. Ordered by seq ascending.
};

// What a usage row's stretch was: pods running on the workload's own
// quota, parked (quota reserved, no device held, nothing charged), or
// running on capacity lent by parked workloads (charged to the borrower).
enum class UsageKind : int32_t { kRun = 0, kParked = 1, kOnParked = 2 };

// One closed stretch of a workload holding one resource of one flavor:
// from its admission to its eviction, end or deletion, or a parked stretch
// from its park to its resume. Accounting sums these (server/usage.h);
// rows are appended, never changed.
struct UsageRow {
  std::string tenant;
  std::string workload;  // Its name in `tenant`.
  int32_t attempt = 0;
  std::string local_queue;
  std::string cluster_queue;
  std::string user;  // Who submitted it.
  std::string flavor;
  std::string resource;       // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb".
  int64_t quantity_milli = 0;  // Held over all its pods (2 GPUs: 2000).
  int64_t start_unix_ms = 0;
  int64_t end_unix_ms = 0;
  // Quantity-milliseconds weighted by the measured utilization of the
  // devices (0..quantity_milli x duration), in milli-units.
  int64_t util_milli_ms = 0;
  int64_t price_micros_per_hour = 0;  // The flavor's price when it closed.
  UsageKind kind = UsageKind::kRun;
};

// One hour of one GPU's telemetry at one-minute resolution. `minutes` holds
// kRollupMinuteBytes per minute of the hour (60 in all); a minute without
// data is all 0xFF bytes. Layout of a minute: utilization % (u8),
// temperature C (u8), power W (u16 LE), framebuffer used in MiB / 64 (u16
// LE). Written whole each minute; the store keeps, per minute, the newer
// bytes unless they are "no data" (so a restarted server does not erase
// the minutes of the hour it wrote before).
inline constexpr int kRollupMinuteBytes = 6;
struct RollupRow {
  std::string uuid;
  std::string node;
  int64_t hour_unix_ms = 0;  // A multiple of 3,600,000.
  std::string minutes;       // 60 x kRollupMinuteBytes.
};

struct RollupFilter {
  std::string node;  // Empty: any.
  std::string uuid;  // Empty: any.
  int64_t since_unix_ms = 0;  // Hours that overlap [since, until).
  int64_t until_unix_ms = std::numeric_limits<int64_t>::max();
};

struct UsageFilter {
  int64_t since_unix_ms = 0;  // Rows that overlap [since, until).
  int64_t until_unix_ms = std::numeric_limits<int64_t>::max();
  std::string tenant;  // Empty: any.
};

// Everything a Commit writes. Applied in this order: object deletes, object
// puts (insert or replace by kind+key), token upserts (by id), meta
// upserts, audit appends (seq must continue the log: a gap or repeat fails
// the whole batch with FailedPrecondition).
struct Batch {
  std::vector<std::pair<std::string, std::string>> deletes;  // (kind, key)
  std::vector<ObjectRow> puts;
  std::vector<TokenRow> tokens;
  std::map<std::string, std::string> meta;
  std::vector<AuditRow> audit;
  std::vector<UsageRow> usage;  // Appended.
  std::vector<RollupRow> rollups;  // Merged by (uuid, hour), see RollupRow.
  int64_t prune_rollups_before_ms = 0;  // > 0: drop hours that end by then.
  bool empty() const {
    return deletes.empty() && puts.empty() && tokens.empty() && meta.empty() &&
           audit.empty() && usage.empty() && rollups.empty() &&
           prune_rollups_before_ms == 0;
  }
};

struct Snapshot {
  // Ordered by (kind, resource_version): within a kind, oldest change first.
  std::vector<ObjectRow> objects;
  std::vector<TokenRow> tokens;  // Ordered by id.
  std::map<std::string, std::string> meta;
  std::optional<AuditRow> last_audit;  // The newest record, if any.
  int32_t schema_version = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  // Applies the batches in order in one transaction (group commit), synced
  // before it returns. On error nothing of them is applied.
  virtual Status CommitGroup(const std::vector<const Batch*>& batches) = 0;
  Status Commit(const Batch& batch) { return CommitGroup({&batch}); }
  virtual Result<Snapshot> Load() = 0;
  virtual Result<std::vector<AuditRow>> ListAudit(const AuditFilter& f) = 0;
  // The usage rows overlapping the filter's window, oldest end first.
  virtual Result<std::vector<UsageRow>> ListUsage(const UsageFilter& f) = 0;
  // The telemetry hours overlapping the window, by uuid then hour.
  virtual Result<std::vector<RollupRow>> ListRollups(const RollupFilter& f) = 0;
  // "sqlite:/path/to/allot.db", for messages.
  virtual std::string Describe() const = 0;
};

// Opens (creating when missing, with its parent directory) the store named
// by `url`: "sqlite:PATH" (PATH may be relative). Runs schema migrations
// up to the version this binary knows; a store written by a newer binary is
// refused with FailedPrecondition. Any other scheme is InvalidArgument.
Result<std::unique_ptr<Store>> OpenStore(const std::string& url);

// Allot's data directory: $XDG_DATA_HOME/allot, else
// $HOME/.local/share/allot for non-root users, else /var/lib/allot.
std::string DefaultDataDir();
// The default store URL: sqlite:DefaultDataDir()/allot.db.
std::string DefaultStoreUrl();

}  // namespace allot::store
