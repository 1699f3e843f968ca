// What `allot simulate` reports: a JSON summary of one run, a side-by-side
// table of several, and a self-contained HTML report.
//
// Metric definitions (docs/simulate.md says the same for users):
//  - job completion time (JCT): finish - submit; queueing delay: the total
//    time a job spent pending (before its first start and after every
//    preemption or failure). Both over finished jobs only, in seconds:
//    mean and nearest-rank percentiles (p-th = the ceil(p/100 * n)-th
//    smallest).
//  - utilization: allocated GPU-hours / capacity GPU-hours over
//    [first submission, end], capacity counting nodes that are up; per
//    window the same ratio. A MIG slice counts as its share of a GPU.
//  - fairness: per window and tenant, A = GPU-time received (devices held,
//    and the quota parked jobs keep), D = GPU-time demanded (jobs submitted
//    and not finished, running, parked or pending), E =
//    entitlement x window length (the tenant's nominal GPU quota in the
//    config before any policy, split equally between tenants sharing a
//    ClusterQueue). x = min(1, A / min(D, E)) over tenants with D > 0 and
//    E > 0; Jain's index J = (sum x)^2 / (n sum x^2). A window is contended
//    when some tenant had a pending job in it; the summary gives the mean
//    and minimum of J over contended windows.
//  - makespan: end - first submission, where end is the last completion.
//  - preemptions and the GPU-hours they threw away (run time since the
//    last checkpoint x GPUs); node failures likewise.
// Output is deterministic (no wall-clock figures; numbers printed with at
// most 4 decimals).
#pragma once

#include <boost/json/value.hpp>

#include <string>
#include <vector>

#include "sim/simulator.h"
#include "sim/trace.h"

namespace allot::sim {

// Jain's fairness index of `x`: (sum x)^2 / (n * sum x^2); 1 for an empty
// or all-zero vector.
double JainIndex(const std::vector<double>& x);

// Nearest-rank percentile of sorted `v` (p in (0, 100]); 0 when empty.
double Percentile(const std::vector<double>& sorted, double p);

// The JSON summary of one run. `max_issues` bounds the issues listed (all
// are counted).
boost::json::object Summarize(const SimResult& r, const Trace& trace,
                              size_t max_issues = 50);

// JSON text with readable numbers (at most 4 decimals, no exponents),
// keys in insertion order.
std::string ToJson(const boost::json::value& v);

// A fixed-width table, one row per summary (as Summarize builds them).
std::string CompareTable(const std::vector<boost::json::object>& summaries);

// A self-contained HTML page (inline SVG charts drawn by inline script, no
// network) for one or more summaries of the same trace.
std::string HtmlReport(const std::vector<boost::json::object>& summaries,
                       const std::string& title);

}  // namespace allot::sim
