// `allot simulate`: replay a trace against a cluster config on a virtual
// clock with the real scheduler (src/sim), under one policy or several
// side by side (docs/simulate.md).
//
// Output: without --compare, the JSON summary of the run on --output
// (default stdout); with --compare, a table on stdout and, with --output,
// a JSON array of the summaries. --html writes a self-contained report.
// A line on stderr gives the wall time and events per second (never part
// of the JSON, which is deterministic).
//
// Exit codes: 0; 1 the server (--from-history) refused or could not be
// reached, or its token reads no workloads (a node or metrics token); 2
// bad flags or input: a malformed URL, unreadable files, an invalid config,
// a trace without a header, and with --strict any malformed row or
// rejected job (each listed with its line). The config is read first, so
// a bad one fails before a long read of a trace or a history.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/client.h"
#include "core/status.h"
#include "sim/trace.h"

namespace allot::cli {

struct SimulateFlags {
  std::vector<std::string> files;  // Cluster config manifests.
  std::string trace;               // FORMAT:PATH (sim/trace.h LoadTrace).
  std::string from_history;        // Server URL: replay its workloads.
  std::string policy = "as-given";
  bool compare = false;
  std::vector<std::string> policies;  // --compare subset; empty: all.
  std::string checkpoint_interval;    // Duration; empty: none.
  std::string mtbf;                   // Duration; empty: no failures.
  std::string mttr = "1h";
  uint64_t seed = 1;
  std::string window = "1h";
  std::string idle_model;            // sim/idle_model.h ParseIdleModel; empty: off.
  std::string park_after = "30m";    // Policy park: idle this long parks.
  double preemptible = 0;            // Share of the other jobs marked preemptible.
  // Autoscaling modes (sim/pools.h ApplyAutoscale), each policy run under
  // each; empty: the autoscaled pools as given.
  std::vector<std::string> autoscale;
  bool strict = false;
  std::string output = "-";
  std::string html;
  // Generators: print a config and exit.
  std::string philly_config;     // philly_vc_nodes.csv (needs --trace philly:).
  double philly_scale = 1.0;     // Nodes per VC x this.
  std::string synthetic_config;  // GPUS:TENANTS.
};

// The workload history of the server `client` talks to, as a trace
// (sim/history.h): GET /api/v1/whoami, then every page of GET
// /api/v1/workloads, `page_size` items at a time. A cluster-admin token
// reads every tenant's workloads, a tenant's token only its tenant's (a
// note in the trace says so); a node or metrics token is refused here (the
// server would list nothing). Errors name the server and what to fix.
Result<sim::Trace> FetchHistory(Client& client, int64_t page_size = 1000);

int RunSimulate(const SimulateFlags& flags, const ClientFlags& client,
                std::ostream& out, std::ostream& err);

}  // namespace allot::cli
