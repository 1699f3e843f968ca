// Summaries, the compare table and JSON text (the HTML page is in
// report_html.cc).
#include "sim/report.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "sim/policy.h"

namespace allot::sim {
namespace json = boost::json;

namespace {

double Round4(double v) { return std::round(v * 1e4) / 1e4; }

json::object Stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  json::object o;
  o["count"] = int64_t(v.size());
  o["mean"] = Round4(v.empty() ? 0 : sum / double(v.size()));
  o["p50"] = Round4(Percentile(v, 50));
  o["p95"] = Round4(Percentile(v, 95));
  o["p99"] = Round4(Percentile(v, 99));
  o["max"] = Round4(v.empty() ? 0 : v.back());
  return o;
}

// Stats of durations in milliseconds, in seconds.
json::object SecondsStats(const std::vector<int64_t>& ms) {
  std::vector<double> v;
  v.reserve(ms.size());
  for (int64_t x : ms) v.push_back(double(x) / 1000);
  return Stats(std::move(v));
}

double Hours(int64_t gpu_milli_ms) { return double(gpu_milli_ms) / 1000 / 3.6e6; }

void WriteNumber(double d, std::string* out) {
  if (!std::isfinite(d)) {
    *out += "null";
    return;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", d);
  std::string s(buf);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  *out += s;
}

void Write(const json::value& v, std::string* out) {
  switch (v.kind()) {
    case json::kind::object: {
      *out += '{';
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) *out += ',';
        first = false;
        *out += json::serialize(json::string(kv.key()));
        *out += ':';
        Write(kv.value(), out);
      }
      *out += '}';
      break;
    }
    case json::kind::array: {
      *out += '[';
      bool first = true;
      for (const auto& x : v.get_array()) {
        if (!first) *out += ',';
        first = false;
        Write(x, out);
      }
      *out += ']';
      break;
    }
    case json::kind::double_:
      WriteNumber(v.get_double(), out);
      break;
    default:
      *out += json::serialize(v);
  }
}

}  // namespace

double JainIndex(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) {
    s += v;
    s2 += v * v;
  }
  if (x.empty() || s2 == 0) return 1.0;
  return s * s / (double(x.size()) * s2);
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::string ToJson(const json::value& v) {
  std::string out;
  Write(v, &out);
  return out;
}

json::object Summarize(const SimResult& r, const Trace& trace,
                       size_t max_issues) {
  const size_t nt = r.tenants.size();
  std::vector<double> jct, wait;
  std::vector<std::vector<double>> t_jct(nt), t_wait(nt);
  std::vector<int64_t> t_jobs(nt, 0), t_done(nt, 0);
  int64_t done = 0, never = 0;
  for (const JobOutcome& o : r.jobs) {
    ++t_jobs[size_t(o.tenant)];
    if (o.first_admit_ms < 0) ++never;
    if (o.finish_ms < 0) continue;
    ++done;
    ++t_done[size_t(o.tenant)];
    double c = double(o.finish_ms - o.submit_ms) / 1000;
    double w = double(o.waited_ms) / 1000;
    jct.push_back(c);
    wait.push_back(w);
    t_jct[size_t(o.tenant)].push_back(c);
    t_wait[size_t(o.tenant)].push_back(w);
  }

  // Windows: integrals -> rates.
  size_t nw = size_t((r.end_ms - r.start_ms + r.window_ms - 1) / r.window_ms);
  auto at = [](const std::vector<int64_t>& v, size_t w) {
    return w < v.size() ? v[w] : 0;
  };
  json::array util_series, jain_series;
  std::vector<json::array> pending_series(nt);
  int64_t alloc_total = 0, cap_total = 0;
  std::vector<int64_t> t_alloc(nt, 0);
  double jain_sum = 0, jain_min = 1;
  int64_t contended = 0;
  for (size_t w = 0; w < nw; ++w) {
    int64_t len = std::min(r.window_ms, r.end_ms - int64_t(w) * r.window_ms);
    int64_t alloc = 0, cap = at(r.capacity_series, w);
    bool busy = false;
    std::vector<double> x;
    for (size_t t = 0; t < nt; ++t) {
      const TenantSeries& s = r.series[t];
      int64_t a = at(s.alloc, w), d = at(s.demand, w), p = at(s.pending, w);
      alloc += a;
      t_alloc[t] += a;
      busy = busy || p > 0;
      pending_series[t].emplace_back(Round4(len > 0 ? double(p) / 1000 / double(len) : 0));
      int64_t e = r.entitlement_milli[t] * len;
      // Parked GPUs count as received here: their quota is reserved for
      // the tenant (utilization counts only devices held).
      const int64_t got = a + at(s.parked, w);
      if (d > 0 && e > 0) {
        x.push_back(std::min(1.0, double(got) / double(std::min(d, e))));
      }
    }
    alloc_total += alloc;
    cap_total += cap;
    util_series.emplace_back(Round4(cap > 0 ? double(alloc) / double(cap) : 0));
    if (busy && !x.empty()) {
      double j = JainIndex(x);
      jain_series.emplace_back(Round4(j));
      jain_sum += j;
      jain_min = std::min(jain_min, j);
      ++contended;
    } else {
      jain_series.emplace_back(nullptr);
    }
  }

  json::object o;
  o["policy"] = r.policy;
  json::object tr;
  tr["format"] = trace.format;
  tr["source"] = trace.source;
  tr["rows"] = trace.rows;
  tr["jobs"] = int64_t(trace.jobs.size());
  json::array notes;
  for (const auto& n : trace.notes) notes.emplace_back(json::string(n));
  tr["notes"] = std::move(notes);
  tr["malformedRows"] = int64_t(trace.issues.size());
  json::array tissues;
  for (size_t i = 0; i < trace.issues.size() && i < max_issues; ++i) {
    json::object e;
    e["line"] = trace.issues[i].line;
    e["message"] = trace.issues[i].message;
    tissues.push_back(std::move(e));
  }
  tr["malformed"] = std::move(tissues);
  o["trace"] = std::move(tr);
  o["description"] = PolicyDescription(r.policy);

  json::object cl;
  cl["gpus"] = Round4(double(r.capacity_milli) / 1000);
  cl["tenants"] = int64_t(nt);
  o["cluster"] = std::move(cl);

  json::object jobs;
  jobs["submitted"] = int64_t(r.jobs.size());
  jobs["completed"] = done;
  jobs["unfinished"] = int64_t(r.jobs.size()) - done;
  jobs["neverAdmitted"] = never;
  jobs["rejected"] = int64_t(r.issues.size());
  jobs["infeasible"] = int64_t(r.infeasible.size());
  auto list = [&](const std::vector<TraceIssue>& v) {
    json::array a;
    for (size_t i = 0; i < v.size() && i < max_issues; ++i) {
      json::object e;
      e["line"] = v[i].line;
      e["message"] = v[i].message;
      a.push_back(std::move(e));
    }
    return a;
  };
  jobs["rejectedJobs"] = list(r.issues);
  jobs["infeasibleJobs"] = list(r.infeasible);
  o["jobs"] = std::move(jobs);

  o["jctSeconds"] = Stats(jct);
  o["queueingDelaySeconds"] = Stats(wait);
  o["makespanSeconds"] = Round4(double(r.end_ms - r.start_ms) / 1000);

  json::object util;
  util["overall"] = Round4(cap_total > 0 ? double(alloc_total) / double(cap_total) : 0);
  util["allocatedGpuHours"] = Round4(Hours(alloc_total));
  util["capacityGpuHours"] = Round4(Hours(cap_total));
  o["utilization"] = std::move(util);

  json::object fair;
  fair["jainMean"] = Round4(contended ? jain_sum / double(contended) : 1.0);
  fair["jainMin"] = Round4(contended ? jain_min : 1.0);
  fair["contendedWindows"] = contended;
  fair["windows"] = int64_t(nw);
  o["fairness"] = std::move(fair);

  json::object pre;
  pre["count"] = r.preemption_events;
  pre["gpuHoursLost"] = Round4(Hours(r.lost_preemption_gpu_ms));
  o["preemptions"] = std::move(pre);
  json::object fail;
  fail["nodeFailures"] = r.failure_events;
  fail["jobsKilled"] = r.failure_kills;
  fail["gpuHoursLost"] = Round4(Hours(r.lost_failure_gpu_ms));
  o["failures"] = std::move(fail);
  if (r.deadline_kills > 0) {
    // Only where a ClusterQueue sets allot.dev/max-run-duration and a job
    // ran into it: such jobs are among the unfinished.
    json::object dl;
    dl["jobsKilled"] = r.deadline_kills;
    dl["gpuHoursUsed"] = Round4(Hours(r.deadline_gpu_ms));
    o["deadlines"] = std::move(dl);
  }

  if (r.idle_model) {
    // The what-if of parking (docs/simulate.md, "Parking").
    const ParkingResult& pk = r.park;
    json::object p;
    p["parking"] = r.parking;
    p["longRunningJobs"] = pk.long_running_jobs;
    p["preemptibleJobs"] = pk.preemptible_jobs;
    p["idleHeldGpuHours"] = Round4(Hours(pk.idle_held_gpu_ms));
    p["gpuHoursGivenBack"] = Round4(Hours(pk.parked_gpu_ms));
    p["gpuHoursLent"] = Round4(Hours(pk.lent_gpu_ms));
    p["parks"] = pk.parks;
    p["parkRefusals"] = pk.park_refusals;
    p["resumes"] = pk.resumes;
    p["resumesThatWaited"] = pk.resumes_waited;
    p["resumesUnserved"] = pk.resumes_unserved;
    p["resumeLatencySeconds"] = SecondsStats(pk.resume_latency_ms);
    p["reclaims"] = pk.reclaims;
    p["reclaimGpuHoursLost"] = Round4(Hours(pk.reclaim_lost_gpu_ms));
    o["parking"] = std::move(p);
  }

  if (!r.pools.empty() || !r.autoscale.empty()) {
    // Autoscaled pools (docs/autoscaling.md): node time and its cost.
    json::object a;
    a["mode"] = r.autoscale.empty() ? "as-given" : r.autoscale;
    int64_t node_ms = 0, cost = 0;
    json::array pools;
    for (const PoolResult& p : r.pools) {
      json::object e;
      e["name"] = p.name;
      e["nodeHours"] = Round4(double(p.node_ms) / 3600000.0);
      e["meanNodes"] = Round4(r.end_ms > r.start_ms ? double(p.node_ms) / double(r.end_ms - r.start_ms) : 0);
      e["peakNodes"] = p.peak_nodes;
      const double c = double(p.node_ms) / 3600000.0 * double(p.price_micros_per_node_hour) / 1e6;
      e["cost"] = Round4(c);
      e["boots"] = p.boots;
      e["bootFailures"] = p.boot_failures;
      e["scaleUps"] = p.scale_ups;
      e["suspends"] = p.suspends;
      e["bootSeconds"] = SecondsStats(p.boot_ms);
      node_ms += p.node_ms;
      cost += int64_t(c * 1e4);
      pools.push_back(std::move(e));
    }
    a["nodeHours"] = Round4(double(node_ms) / 3600000.0);
    a["cost"] = Round4(double(cost) / 1e4);
    a["pools"] = std::move(pools);
    o["autoscale"] = std::move(a);
    o["policy"] = r.policy + (r.autoscale.empty() ? "" : "/" + r.autoscale);
  }

  json::object tenants;
  for (size_t t = 0; t < nt; ++t) {
    json::object e;
    e["jobs"] = t_jobs[t];
    e["completed"] = t_done[t];
    e["entitledGpus"] = Round4(double(r.entitlement_milli[t]) / 1000);
    e["gpuHours"] = Round4(Hours(t_alloc[t]));
    e["jctSeconds"] = Stats(t_jct[t]);
    e["queueingDelaySeconds"] = Stats(t_wait[t]);
    tenants[r.tenants[t]] = std::move(e);
  }
  o["tenants"] = std::move(tenants);

  json::object ts;
  ts["windowSeconds"] = Round4(double(r.window_ms) / 1000);
  ts["utilization"] = std::move(util_series);
  ts["jain"] = std::move(jain_series);
  json::object pend;
  for (size_t t = 0; t < nt; ++t) pend[r.tenants[t]] = std::move(pending_series[t]);
  ts["pendingJobs"] = std::move(pend);
  o["timeseries"] = std::move(ts);

  json::object sim;
  sim["events"] = r.events;
  sim["cycles"] = r.cycles;
  o["sim"] = std::move(sim);
  return o;
}

std::string CompareTable(const std::vector<json::object>& summaries) {
  struct Col {
    const char* head;
    std::function<std::string(const json::object&)> get;
  };
  auto num = [](const json::value& v, const char* fmt) {
    double d = v.is_int64() ? double(v.get_int64()) : v.to_number<double>();
    char buf[32];
    std::snprintf(buf, sizeof buf, fmt, d);
    return std::string(buf);
  };
  auto hours = [&](const char* stat, const char* key) {
    return [=](const json::object& s) {
      return num(json::value(s.at(stat).at(key).to_number<double>() / 3600),
                 "%.2f");
    };
  };
  std::vector<Col> cols = {
      {"policy", [](const json::object& s) { return std::string(s.at("policy").as_string()); }},
      {"done", [&](const json::object& s) { return num(s.at("jobs").at("completed"), "%.0f"); }},
      {"rejected", [&](const json::object& s) { return num(s.at("jobs").at("rejected"), "%.0f"); }},
      {"infeasible", [&](const json::object& s) { return num(s.at("jobs").at("infeasible"), "%.0f"); }},
      {"JCT mean h", hours("jctSeconds", "mean")},
      {"p50", hours("jctSeconds", "p50")},
      {"p95", hours("jctSeconds", "p95")},
      {"p99", hours("jctSeconds", "p99")},
      {"wait mean h", hours("queueingDelaySeconds", "mean")},
      {"p50", hours("queueingDelaySeconds", "p50")},
      {"p95", hours("queueingDelaySeconds", "p95")},
      {"p99", hours("queueingDelaySeconds", "p99")},
      {"util", [&](const json::object& s) { return num(s.at("utilization").at("overall"), "%.3f"); }},
      {"Jain", [&](const json::object& s) { return num(s.at("fairness").at("jainMean"), "%.3f"); }},
      {"makespan d", [&](const json::object& s) {
         return num(json::value(s.at("makespanSeconds").to_number<double>() / 86400), "%.1f");
       }},
      {"preempt", [&](const json::object& s) { return num(s.at("preemptions").at("count"), "%.0f"); }},
      {"GPU-h lost", [&](const json::object& s) {
         return num(json::value(s.at("preemptions").at("gpuHoursLost").to_number<double>() +
                                s.at("failures").at("gpuHoursLost").to_number<double>()),
                    "%.0f");
       }},
  };
  // With an idle model: what idle long-running jobs held, gave back and lent.
  bool idle = false;
  for (const auto& s : summaries) idle |= s.contains("parking");
  if (idle) {
    // parking.KEY (or parking.KEY.SUB), "-" for a run without one.
    auto park = [&](const char* key, const char* sub = nullptr) {
      return [=](const json::object& s) {
        const json::value* p = s.if_contains("parking");
        if (p == nullptr) return std::string("-");
        const json::value& v = p->at(key);
        return num(sub ? v.at(sub) : v, "%.0f");
      };
    };
    cols.push_back({"idle GPU-h", park("idleHeldGpuHours")});
    cols.push_back({"given back", park("gpuHoursGivenBack")});
    cols.push_back({"lent", park("gpuHoursLent")});
    cols.push_back({"resume p99 s", park("resumeLatencySeconds", "p99")});
  }
  // With autoscaled pools: the node time they cost (a fixed pool, none).
  bool scaled = false;
  for (const auto& s : summaries) scaled |= s.contains("autoscale");
  if (scaled) {
    auto as = [&](const char* key) {
      return [=](const json::object& s) {
        const json::value* a = s.if_contains("autoscale");
        return a == nullptr ? std::string("-") : num(a->at(key), "%.0f");
      };
    };
    cols.push_back({"pool node-h", as("nodeHours")});
    cols.push_back({"pool cost", as("cost")});
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head;
  for (const Col& c : cols) head.push_back(c.head);
  rows.push_back(head);
  for (const auto& s : summaries) {
    std::vector<std::string> row;
    for (const Col& c : cols) row.push_back(c.get(s));
    rows.push_back(row);
  }
  std::vector<size_t> width(cols.size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      std::string cell = row[i];
      if (i == 0) {
        cell += std::string(width[i] - cell.size(), ' ');
      } else {
        cell = std::string(width[i] - cell.size(), ' ') + cell;
      }
      out += (i ? "  " : "") + cell;
    }
    out += "\n";
  }
  return out;
}

}  // namespace allot::sim
