#include "metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <charconv>
#include <cmath>

namespace allot::metrics {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Histogram;

std::vector<double> WaitBuckets() {
  // As Kueue's generateExponentialBuckets(14): 1, then 2.5 doubling.
  std::vector<double> b{1};
  double v = 2.5;
  for (int i = 0; i < 13; ++i, v *= 2) b.push_back(v);
  return b;
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
          0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5, 5, 10};
}

struct Metrics::Families {
  explicit Families(prometheus::Registry& r)
      : attempts(Counters(r, "kueue_admission_attempts_total",
                          "Attempts to admit workloads (scheduling cycles that "
                          "tried a head), by result: success when at least one "
                          "workload was admitted, else inadmissible.")),
        attempt_seconds(Histograms(r, "kueue_admission_attempt_duration_seconds",
                                   "Latency of an admission attempt, by result.")),
        quota_reserved(Counters(r, "kueue_quota_reserved_workloads_total",
                                "Workloads that got quota, per cluster_queue.")),
        admitted(Counters(r, "kueue_admitted_workloads_total",
                          "Admitted workloads, per cluster_queue.")),
        finished(Counters(r, "kueue_finished_workloads_total",
                          "Finished workloads, per cluster_queue.")),
        evicted(Counters(r, "kueue_evicted_workloads_total",
                         "Evicted workloads, per cluster_queue and reason.")),
        preempted(Counters(r, "kueue_preempted_workloads_total",
                           "Workloads preempted, per preempting_cluster_queue "
                           "and reason.")),
        quota_wait(Histograms(r, "kueue_quota_reserved_wait_time_seconds",
                              "Time from creation or last requeue to quota "
                              "reservation, per cluster_queue.")),
        admission_wait(Histograms(r, "kueue_admission_wait_time_seconds",
                                  "Time from creation or last requeue to "
                                  "admission, per cluster_queue.")),
        lq_quota_reserved(Counters(r, "kueue_local_queue_quota_reserved_workloads_total",
                                   "Workloads that got quota, per local_queue.")),
        lq_admitted(Counters(r, "kueue_local_queue_admitted_workloads_total",
                             "Admitted workloads, per local_queue.")),
        lq_finished(Counters(r, "kueue_local_queue_finished_workloads_total",
                             "Finished workloads, per local_queue.")),
        lq_evicted(Counters(r, "kueue_local_queue_evicted_workloads_total",
                            "Evicted workloads, per local_queue and reason.")),
        lq_quota_wait(Histograms(r, "kueue_local_queue_quota_reserved_wait_time_seconds",
                                 "Time from creation or last requeue to quota "
                                 "reservation, per local_queue.")),
        lq_admission_wait(Histograms(r, "kueue_local_queue_admission_wait_time_seconds",
                                     "Time from creation or last requeue to "
                                     "admission, per local_queue.")),
        turn_seconds(Histograms(r, "allot_scheduling_turn_duration_seconds",
                                "Scheduling at the end of one state-owner turn "
                                "(every cycle it ran).")),
        cycles(Counters(r, "allot_scheduling_cycles_total",
                        "Scheduling cycles run.")),
        commit_seconds(Histograms(r, "allot_store_commit_duration_seconds",
                                  "One group commit of the store, synced.")),
        commit_batches(Counters(r, "allot_store_committed_batches_total",
                                "Owner turns committed (several per group).")),
        requests(Counters(r, "allot_http_requests_total",
                          "API requests, by method, route and code.")),
        request_seconds(Histograms(r, "allot_http_request_duration_seconds",
                                   "API request latency, by method and route.")),
        parks(Counters(r, "allot_parks_total",
                       "Workloads parked (pods stopped, devices given back, quota kept), "
                       "per cluster_queue and reason.")),
        resumes(Counters(r, "allot_resumes_total",
                         "Parked workloads placed again, per cluster_queue.")),
        reclaims(Counters(r, "allot_parked_reclaims_total",
                          "Workloads running on capacity that parked workloads lent, "
                          "evicted because it was taken back, per cluster_queue (theirs).")),
        resume_seconds(Histograms(r, "allot_resume_latency_seconds",
                                  "From a resume's request to its workload's new "
                                  "placement, per cluster_queue (its pods start after).")),
        pool_boot_seconds(Histograms(r, "allot_pool_boot_duration_seconds",
                                     "From a pool node's resume to its agent's registration, "
                                     "per pool (docs/autoscaling.md).")) {}

  static Family<Counter>& Counters(prometheus::Registry& r, const char* name,
                                   const char* help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(r);
  }
  static Family<Histogram>& Histograms(prometheus::Registry& r,
                                       const char* name, const char* help) {
    return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
  }

  Family<Counter>& attempts;
  Family<Histogram>& attempt_seconds;
  Family<Counter>& quota_reserved;
  Family<Counter>& admitted;
  Family<Counter>& finished;
  Family<Counter>& evicted;
  Family<Counter>& preempted;
  Family<Histogram>& quota_wait;
  Family<Histogram>& admission_wait;
  Family<Counter>& lq_quota_reserved;
  Family<Counter>& lq_admitted;
  Family<Counter>& lq_finished;
  Family<Counter>& lq_evicted;
  Family<Histogram>& lq_quota_wait;
  Family<Histogram>& lq_admission_wait;
  Family<Histogram>& turn_seconds;
  Family<Counter>& cycles;
  Family<Histogram>& commit_seconds;
  Family<Counter>& commit_batches;
  Family<Counter>& requests;
  Family<Histogram>& request_seconds;
  Family<Counter>& parks;
  Family<Counter>& resumes;
  Family<Counter>& reclaims;
  Family<Histogram>& resume_seconds;
  Family<Histogram>& pool_boot_seconds;
  const std::vector<double> wait_buckets = WaitBuckets();
  const std::vector<double> latency_buckets = LatencyBuckets();
  // A resume takes milliseconds with free devices, minutes waiting for
  // them: the latency buckets, then the wait buckets above them.
  const std::vector<double> resume_buckets = [this] {
    std::vector<double> b = latency_buckets;
    for (double w : wait_buckets) {
      if (w > b.back()) b.push_back(w);
    }
    return b;
  }();
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>(*registry_)) {}

Metrics::~Metrics() = default;

namespace {
prometheus::Labels CqLabels(const QueueLabels& q) {
  return {{"cluster_queue", q.cluster_queue}, {"priority_class", q.priority_class}};
}
prometheus::Labels LqLabels(const QueueLabels& q) {
  return {{"name", q.local_queue},
          {"namespace", q.ns},
          {"priority_class", q.priority_class}};
}
}  // namespace

void Metrics::AdmissionAttempt(bool success, double seconds) {
  const char* result = success ? "success" : "inadmissible";
  f_->attempts.Add({{"result", result}}).Increment();
  f_->attempt_seconds.Add({{"result", result}}, f_->latency_buckets)
      .Observe(seconds);
}

void Metrics::Admitted(const QueueLabels& q, double wait_seconds) {
  prometheus::Labels cq = CqLabels(q);
  prometheus::Labels lq = LqLabels(q);
  f_->quota_reserved.Add(cq).Increment();
  f_->admitted.Add(cq).Increment();
  f_->quota_wait.Add(cq, f_->wait_buckets).Observe(wait_seconds);
  f_->admission_wait.Add(cq, f_->wait_buckets).Observe(wait_seconds);
  f_->lq_quota_reserved.Add(lq).Increment();
  f_->lq_admitted.Add(lq).Increment();
  f_->lq_quota_wait.Add(lq, f_->wait_buckets).Observe(wait_seconds);
  f_->lq_admission_wait.Add(lq, f_->wait_buckets).Observe(wait_seconds);
}

void Metrics::Parked(const std::string& cluster_queue, const std::string& reason) {
  f_->parks.Add({{"cluster_queue", cluster_queue}, {"reason", reason}}).Increment();
}

void Metrics::PoolBooted(const std::string& pool, double seconds) {
  f_->pool_boot_seconds.Add({{"pool", pool}}, f_->wait_buckets).Observe(seconds);
}

void Metrics::Resumed(const std::string& cluster_queue, double latency_seconds) {
  f_->resumes.Add({{"cluster_queue", cluster_queue}}).Increment();
  f_->resume_seconds.Add({{"cluster_queue", cluster_queue}}, f_->resume_buckets)
      .Observe(latency_seconds);
}

void Metrics::Reclaimed(const std::string& cluster_queue) {
  f_->reclaims.Add({{"cluster_queue", cluster_queue}}).Increment();
}

void Metrics::Evicted(const QueueLabels& q, const std::string& reason) {
  prometheus::Labels cq = CqLabels(q);
  cq["reason"] = reason;
  prometheus::Labels lq = LqLabels(q);
  lq["reason"] = reason;
  f_->evicted.Add(cq).Increment();
  f_->lq_evicted.Add(lq).Increment();
}

void Metrics::Preempted(const std::string& preempting_cluster_queue,
                        const std::string& reason) {
  f_->preempted
      .Add({{"preempting_cluster_queue", preempting_cluster_queue},
            {"reason", reason}})
      .Increment();
}

void Metrics::Finished(const QueueLabels& q) {
  f_->finished.Add(CqLabels(q)).Increment();
  f_->lq_finished.Add(LqLabels(q)).Increment();
}

void Metrics::SchedulingTurn(double seconds, int32_t cycles) {
  f_->turn_seconds.Add({}, f_->latency_buckets).Observe(seconds);
  f_->cycles.Add({}).Increment(cycles);
}

void Metrics::StoreCommit(double seconds, size_t batches) {
  f_->commit_seconds.Add({}, f_->latency_buckets).Observe(seconds);
  f_->commit_batches.Add({}).Increment(double(batches));
}

void Metrics::ApiRequest(const std::string& method, const std::string& route,
                         int code, double seconds) {
  f_->requests
      .Add({{"method", method}, {"route", route}, {"code", std::to_string(code)}})
      .Increment();
  f_->request_seconds.Add({{"method", method}, {"route", route}}, f_->latency_buckets)
      .Observe(seconds);
}

std::string Metrics::Render(
    const std::vector<prometheus::MetricFamily>& levels) const {
  std::string out;
  size_t samples = 0;
  for (const prometheus::MetricFamily& f : levels) samples += f.metric.size();
  out.reserve((1 << 20) + samples * 160);
  WriteText(registry_->Collect(), &out);
  WriteText(levels, &out);
  return out;
}

namespace {

void Number(double v, std::string* out) {
  if (std::isnan(v)) {
    *out += "NaN";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, r.ptr);
  }
}

void Escaped(const std::string& s, bool quote_too, std::string* out) {
  if (s.find_first_of(quote_too ? "\\\n\"" : "\\\n") == std::string::npos) {
    out->append(s);  // Nearly always.
    return;
  }
  for (char c : s) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '"' && quote_too) {
      *out += "\\\"";
    } else {
      *out += c;
    }
  }
}

// name{labels[,extra_name="extra_value"]} value
void Sample(const std::string& name, const char* suffix,
            const std::vector<prometheus::ClientMetric::Label>& labels,
            const char* extra_name, double extra_value, double value,
            std::string* out) {
  *out += name;
  *out += suffix;
  if (!labels.empty() || extra_name != nullptr) {
    *out += '{';
    bool first = true;
    for (const auto& l : labels) {
      if (!first) *out += ',';
      first = false;
      *out += l.name;
      *out += "=\"";
      Escaped(l.value, true, out);
      *out += '"';
    }
    if (extra_name != nullptr) {
      if (!first) *out += ',';
      *out += extra_name;
      *out += "=\"";
      Number(extra_value, out);
      *out += '"';
    }
    *out += '}';
  }
  *out += ' ';
  Number(value, out);
  *out += '\n';
}

const char* TypeName(prometheus::MetricType t) {
  switch (t) {
    case prometheus::MetricType::Counter: return "counter";
    case prometheus::MetricType::Gauge: return "gauge";
    case prometheus::MetricType::Summary: return "summary";
    case prometheus::MetricType::Histogram: return "histogram";
    case prometheus::MetricType::Untyped: return "untyped";
  }
  return "untyped";
}

}  // namespace

void WriteText(const std::vector<prometheus::MetricFamily>& families,
               std::string* out) {
  using prometheus::MetricType;
  for (const prometheus::MetricFamily& f : families) {
    if (f.metric.empty()) continue;
    *out += "# HELP ";
    *out += f.name;
    *out += ' ';
    Escaped(f.help, false, out);
    *out += "\n# TYPE ";
    *out += f.name;
    *out += ' ';
    *out += TypeName(f.type);
    *out += '\n';
    for (const prometheus::ClientMetric& m : f.metric) {
      switch (f.type) {
        case MetricType::Counter:
          Sample(f.name, "", m.label, nullptr, 0, m.counter.value, out);
          break;
        case MetricType::Gauge:
          Sample(f.name, "", m.label, nullptr, 0, m.gauge.value, out);
          break;
        case MetricType::Untyped:
          Sample(f.name, "", m.label, nullptr, 0, m.untyped.value, out);
          break;
        case MetricType::Summary:
          for (const auto& q : m.summary.quantile) {
            Sample(f.name, "", m.label, "quantile", q.quantile, q.value, out);
          }
          Sample(f.name, "_sum", m.label, nullptr, 0, m.summary.sample_sum, out);
          Sample(f.name, "_count", m.label, nullptr, 0, double(m.summary.sample_count), out);
          break;
        case MetricType::Histogram:
          for (const auto& b : m.histogram.bucket) {
            Sample(f.name, "_bucket", m.label, "le", b.upper_bound,
                   double(b.cumulative_count), out);
          }
          Sample(f.name, "_sum", m.label, nullptr, 0, m.histogram.sample_sum, out);
          Sample(f.name, "_count", m.label, nullptr, 0, double(m.histogram.sample_count), out);
          break;
      }
    }
  }
}

void Gauges::Family(std::string name, std::string help, bool counter) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
  families_.push_back(std::move(f));
}

void Gauges::Add(Labels labels, double value) {
  prometheus::MetricFamily& f = families_.back();
  prometheus::ClientMetric m;
  m.label.reserve(labels.size());
  for (auto& [k, v] : labels) m.label.push_back({std::move(k), std::move(v)});
  if (f.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

}  // namespace allot::metrics
