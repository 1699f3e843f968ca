// Metrics: what Allot exports at GET /metrics, in Prometheus text format.
//
// Two kinds of families:
// - events (counters and histograms: admissions, evictions, preemptions,
//   wait times, scheduling and commit latency, API requests) live in
//   Metrics, a prometheus-cpp registry; every method is thread-safe, so
//   the state owner, the committer and the network threads record into it
//   directly;
// - levels (gauges: queue lengths, quota and usage, GPU telemetry) are not
//   kept up to date on every change: the state owner builds them when a
//   scrape asks (server/state_metrics.cc) with Gauges, and Render() writes
//   both.
// Names and labels follow Kueue (kueue_*) and the NVIDIA DCGM exporter
// (DCGM_FI_DEV_*), so their dashboards, alerts and KEDA triggers work
// unchanged; Allot's own are allot_*. docs/metrics.md lists them all.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace allot::metrics {

// Where a workload is queued, for the kueue_* and kueue_local_queue_* twins.
struct QueueLabels {
  std::string cluster_queue;
  std::string ns;           // The LocalQueue's namespace (the tenant).
  std::string local_queue;  // The LocalQueue's name.
  std::string priority_class;
};

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // ---- Kueue's --------------------------------------------------------
  // One scheduling cycle that tried heads: success when it admitted any.
  void AdmissionAttempt(bool success, double seconds);
  // A workload got quota (and, with no admission checks, is admitted):
  // `wait_seconds` since it was created or last requeued.
  void Admitted(const QueueLabels& q, double wait_seconds);
  void Evicted(const QueueLabels& q, const std::string& reason);
  void Preempted(const std::string& preempting_cluster_queue,
                 const std::string& reason);
  void Finished(const QueueLabels& q);

  // ---- Allot's ----------------------------------------------------------
  // Parking (docs/parking.md): a workload parked for `reason` (UserRequest,
  // ...), and one placed again `latency_seconds` after its resume was asked.
  void Parked(const std::string& cluster_queue, const std::string& reason);
  void Resumed(const std::string& cluster_queue, double latency_seconds);
  // A workload on parked capacity of `cluster_queue` (its own ClusterQueue)
  // evicted because the capacity was taken back.
  void Reclaimed(const std::string& cluster_queue);
  // An autoscaled pool's node registered `seconds` after its resume.
  void PoolBooted(const std::string& pool, double seconds);
  // One owner turn's scheduling (State::FinishTurn) and its cycles.
  void SchedulingTurn(double seconds, int32_t cycles);
  // One group commit of the store.
  void StoreCommit(double seconds, size_t batches);
  // One API request: `route` is the pattern ("/api/v1/workloads/{ns}/{name}"),
  // never the raw path, so the label set stays small.
  void ApiRequest(const std::string& method, const std::string& route, int code,
                  double seconds);

  // The event families now, followed by `levels`, in the text format.
  std::string Render(const std::vector<prometheus::MetricFamily>& levels) const;

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
};

// Builds gauge families for one scrape: Family(name, help) then Add(labels,
// value) rows. Label names and values are given in the family's order.
class Gauges {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  // Starts a family (gauge unless `counter`); later Adds go to it.
  void Family(std::string name, std::string help, bool counter = false);
  void Add(Labels labels, double value);
  std::vector<prometheus::MetricFamily> Take() { return std::move(families_); }
  size_t size() const { return families_.size(); }

 private:
  std::vector<prometheus::MetricFamily> families_;
};

// Appends `families` to `out` in the Prometheus text format (0.0.4), as
// prometheus::TextSerializer writes them (numbers in their shortest exact
// form): about 5x faster, which a scrape of 10,000 GPUs needs.
void WriteText(const std::vector<prometheus::MetricFamily>& families,
               std::string* out);

// Kueue's histogram buckets for wait times: 1, 2.5, 5, 10, ... seconds
// (14 bounds); and latency buckets for fast paths: 100 us to 10 s.
std::vector<double> WaitBuckets();
std::vector<double> LatencyBuckets();

}  // namespace allot::metrics
