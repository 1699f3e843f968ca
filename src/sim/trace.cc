// Trace readers: CSV splitting, the three formats, the synthetic generator.
#include "sim/trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <string_view>

namespace allot::sim {
namespace {

// Splits one CSV line on commas (no quoting: none of the formats needs it),
// trimming spaces and a trailing '\r'.
std::vector<std::string_view> Split(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    std::string_view f = line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos
                                               : comma - start);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
    out.push_back(f);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool Blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(*out);
}

// Seconds with a fraction -> milliseconds, rounded.
bool ParseSecondsMs(std::string_view s, int64_t* out) {
  double d = 0;
  if (!ParseDouble(s, &d) || std::fabs(d) > 1e13) return false;
  *out = std::llround(d * 1000.0);
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "YYYY-MM-DD HH:MM:SS" (no zone) -> seconds since the epoch.
bool ParseTimestamp(std::string_view s, int64_t* out) {
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' ||
      s[13] != ':' || s[16] != ':') {
    return false;
  }
  int64_t y, mo, d, h, mi, se;
  if (!ParseInt(s.substr(0, 4), &y) || !ParseInt(s.substr(5, 2), &mo) ||
      !ParseInt(s.substr(8, 2), &d) || !ParseInt(s.substr(11, 2), &h) ||
      !ParseInt(s.substr(14, 2), &mi) || !ParseInt(s.substr(17, 2), &se)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 ||
      h < 0 || mi < 0 || se < 0) {
    return false;
  }
  *out = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
  return true;
}

// Reads lines; calls row(line_no, fields) for every non-blank line after the
// header, which header(fields) checks first.
template <typename H, typename R>
Status ForEachRow(std::istream& in, const std::string& source, Trace* t,
                  H header, R row) {
  std::string line;
  int64_t n = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++n;
    if (Blank(line) || line[0] == '#') continue;
    std::vector<std::string_view> f = Split(line);
    if (!have_header) {
      ALLOT_RETURN_IF_ERROR(header(f));
      have_header = true;
      continue;
    }
    ++t->rows;
    row(n, f);
  }
  if (in.bad()) return Status::NotFound("cannot read trace file " + source);
  if (!have_header) {
    return Status::InvalidArgument(source + ": empty trace (no header line)");
  }
  return Status::Ok();
}

void Issue(Trace* t, int64_t line, std::string msg) {
  t->issues.push_back({line, std::move(msg)});
}

void SortJobs(Trace* t) {
  std::stable_sort(t->jobs.begin(), t->jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) {
                     return a.submit_ms != b.submit_ms
                                ? a.submit_ms < b.submit_ms
                                : a.line < b.line;
                   });
  // Times start at 0: the first submission.
  if (!t->jobs.empty()) {
    int64_t origin = t->jobs.front().submit_ms;
    for (TraceJob& j : t->jobs) j.submit_ms -= origin;
  }
}

// Column name -> index, from a header; every `required` must be there and
// every column must be `known`.
Status Columns(const std::vector<std::string_view>& header,
               std::initializer_list<std::string_view> known,
               std::initializer_list<std::string_view> required,
               const std::string& source, std::map<std::string, size_t>* out) {
  for (size_t i = 0; i < header.size(); ++i) {
    std::string name(header[i]);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return Status::InvalidArgument(source + ": line 1: unknown column \"" +
                                     name + "\" (expected: " + list + ")");
    }
    if (!out->emplace(name, i).second) {
      return Status::InvalidArgument(source + ": line 1: column \"" + name +
                                     "\" given twice");
    }
  }
  for (auto r : required) {
    if (!out->count(std::string(r))) {
      return Status::InvalidArgument(source + ": line 1: missing column \"" +
                                     std::string(r) + "\"");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> ParseDurationMs(const std::string& text) {
  std::string_view s(text);
  double mult = 1000;
  auto strip = [&](std::string_view suffix, double m) {
    if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
      s.remove_suffix(suffix.size());
      mult = m;
      return true;
    }
    return false;
  };
  strip("ms", 1) || strip("s", 1000) || strip("m", 60e3) ||
      strip("h", 3600e3) || strip("d", 86400e3);
  double v = 0;
  if (!ParseDouble(s, &v) || v < 0 || v * mult > 9e15) {
    return Status::InvalidArgument("malformed duration \"" + text +
                                   "\" (expected e.g. 90, 45s, 30m, 1.5h, 2d)");
  }
  return int64_t(std::llround(v * mult));
}

Result<Trace> ReadPhillyTrace(std::istream& in, const std::string& source) {
  Trace t;
  t.format = "philly";
  t.source = source;
  std::map<std::string, size_t> col;
  Status s = ForEachRow(
      in, source, &t,
      [&](const std::vector<std::string_view>& h) {
        return Columns(h, {"timestamp", "duration", "num_gpus", "gpu_time",
                           "cluster"},
                       {"timestamp", "duration", "num_gpus", "cluster"},
                       source, &col);
      },
      [&](int64_t n, const std::vector<std::string_view>& f) {
        if (f.size() != col.size()) {
          return Issue(&t, n, "expected " + std::to_string(col.size()) +
                                  " fields, got " + std::to_string(f.size()));
        }
        TraceJob j;
        j.line = n;
        int64_t submit_s = 0, gpus = 0;
        if (!ParseTimestamp(f[col["timestamp"]], &submit_s)) {
          return Issue(&t, n, "malformed timestamp \"" +
                                  std::string(f[col["timestamp"]]) +
                                  "\" (expected YYYY-MM-DD HH:MM:SS)");
        }
        j.submit_ms = submit_s * 1000;
        if (!ParseSecondsMs(f[col["duration"]], &j.duration_ms)) {
          return Issue(&t, n, "malformed duration \"" +
                                  std::string(f[col["duration"]]) + "\"");
        }
        if (j.duration_ms < 0) {
          return Issue(&t, n, "negative duration " +
                                  std::string(f[col["duration"]]));
        }
        if (!ParseInt(f[col["num_gpus"]], &gpus) || gpus < 1 ||
            gpus > 1000000) {
          return Issue(&t, n, "malformed num_gpus \"" +
                                  std::string(f[col["num_gpus"]]) +
                                  "\" (expected a whole number >= 1)");
        }
        j.tenant = std::string(f[col["cluster"]]);
        if (j.tenant.empty()) return Issue(&t, n, "empty cluster (VC)");
        j.pods = 0;  // Split over nodes by the simulator.
        j.gpus = int32_t(gpus);
        t.jobs.push_back(std::move(j));
      });
  if (!s.ok()) return s;
  SortJobs(&t);
  return t;
}

Result<Trace> ReadAlibabaTrace(std::istream& in, const std::string& source,
                               AlibabaTenants tenants) {
  Trace t;
  t.format = tenants == AlibabaTenants::kQos ? "alibaba" : "alibaba-single";
  t.source = source;
  std::map<std::string, size_t> col;
  int64_t cpu_only = 0, unscheduled = 0, rounded = 0;
  Status s = ForEachRow(
      in, source, &t,
      [&](const std::vector<std::string_view>& h) {
        return Columns(h,
                       {"name", "cpu_milli", "memory_mib", "num_gpu",
                        "gpu_milli", "gpu_spec", "qos", "pod_phase",
                        "creation_time", "deletion_time", "scheduled_time"},
                       {"num_gpu", "gpu_milli", "qos", "creation_time",
                        "deletion_time", "scheduled_time"},
                       source, &col);
      },
      [&](int64_t n, const std::vector<std::string_view>& f) {
        if (f.size() != col.size()) {
          return Issue(&t, n, "expected " + std::to_string(col.size()) +
                                  " fields, got " + std::to_string(f.size()));
        }
        int64_t gpus = 0, milli = 0, created = 0, deleted = 0, scheduled = 0;
        if (!ParseInt(f[col["num_gpu"]], &gpus) || gpus < 0) {
          return Issue(&t, n, "malformed num_gpu \"" +
                                  std::string(f[col["num_gpu"]]) + "\"");
        }
        if (!ParseInt(f[col["gpu_milli"]], &milli) || milli < 0) {
          return Issue(&t, n, "malformed gpu_milli \"" +
                                  std::string(f[col["gpu_milli"]]) + "\"");
        }
        if (!ParseInt(f[col["creation_time"]], &created) ||
            !ParseInt(f[col["deletion_time"]], &deleted)) {
          return Issue(&t, n, "malformed creation_time or deletion_time");
        }
        if (gpus == 0) return void(++cpu_only);
        if (f[col["scheduled_time"]].empty()) return void(++unscheduled);
        if (!ParseInt(f[col["scheduled_time"]], &scheduled)) {
          return Issue(&t, n, "malformed scheduled_time \"" +
                                  std::string(f[col["scheduled_time"]]) +
                                  "\"");
        }
        if (deleted < scheduled) {
          return Issue(&t, n, "negative duration (deletion_time " +
                                  std::to_string(deleted) +
                                  " before scheduled_time " +
                                  std::to_string(scheduled) + ")");
        }
        TraceJob j;
        j.line = n;
        j.submit_ms = created * 1000;
        j.duration_ms = (deleted - scheduled) * 1000;
        j.tenant = tenants == AlibabaTenants::kQos
                       ? std::string(f[col["qos"]])
                       : std::string("default");
        if (j.tenant.empty()) return Issue(&t, n, "empty qos");
        // One pod; a fractional GPU takes a whole one.
        if (gpus == 1 && milli < 1000) ++rounded;
        j.pods = 1;
        j.gpus = int32_t(std::min<int64_t>(gpus, 1 << 20));
        if (col.count("name")) j.name = std::string(f[col["name"]]);
        t.jobs.push_back(std::move(j));
      });
  if (!s.ok()) return s;
  if (cpu_only) {
    t.notes.push_back(std::to_string(cpu_only) +
                      " pods without GPUs (num_gpu 0) left out");
  }
  if (unscheduled) {
    t.notes.push_back(std::to_string(unscheduled) +
                      " pods never scheduled in the trace (no "
                      "scheduled_time) left out");
  }
  if (rounded) {
    t.notes.push_back(std::to_string(rounded) +
                      " pods with a fraction of a GPU (gpu_milli < 1000) "
                      "given a whole GPU");
  }
  SortJobs(&t);
  return t;
}

Result<Trace> ReadAllotTrace(std::istream& in, const std::string& source) {
  Trace t;
  t.format = "allot";
  t.source = source;
  std::map<std::string, size_t> col;
  Status s = ForEachRow(
      in, source, &t,
      [&](const std::vector<std::string_view>& h) {
        return Columns(h,
                       {"submit", "tenant", "queue", "priority", "pods",
                        "gpus_per_pod", "duration", "type", "name", "preemptible"},
                       {"submit", "tenant", "gpus_per_pod", "duration"}, source,
                       &col);
      },
      [&](int64_t n, const std::vector<std::string_view>& f) {
        if (f.size() != col.size()) {
          return Issue(&t, n, "expected " + std::to_string(col.size()) +
                                  " fields, got " + std::to_string(f.size()));
        }
        auto get = [&](const char* c) -> std::string {
          auto it = col.find(c);
          return it == col.end() ? std::string() : std::string(f[it->second]);
        };
        TraceJob j;
        j.line = n;
        std::string submit = get("submit"), duration = get("duration");
        if (!submit.empty() && submit[0] == '-') {
          return Issue(&t, n, "negative submit time " + submit);
        }
        if (!duration.empty() && duration[0] == '-') {
          return Issue(&t, n, "negative duration " + duration);
        }
        Result<int64_t> sub = ParseDurationMs(submit);
        if (!sub.ok()) return Issue(&t, n, "submit: " + sub.status().message());
        Result<int64_t> dur = ParseDurationMs(duration);
        if (!dur.ok()) {
          return Issue(&t, n, "duration: " + dur.status().message());
        }
        j.submit_ms = *sub;
        j.duration_ms = *dur;
        j.tenant = get("tenant");
        if (j.tenant.empty()) return Issue(&t, n, "empty tenant");
        j.queue = get("queue");
        j.priority = get("priority");
        j.name = get("name");
        std::string type = get("type");
        if (!type.empty()) j.type = type;
        if (type != "" && type != "batch" && type != "training" &&
            type != "inference" && type != "notebook") {
          return Issue(&t, n, "unknown type \"" + type +
                                  "\" (batch, training, inference, notebook)");
        }
        const std::string pre = get("preemptible");
        if (pre != "" && pre != "true" && pre != "false") {
          return Issue(&t, n, "malformed preemptible \"" + pre + "\" (true or false)");
        }
        j.preemptible = pre == "true";
        int64_t pods = 1;
        std::string ps = get("pods");
        if (!ps.empty() && (!ParseInt(ps, &pods) || pods < 1 ||
                            pods > 100000)) {
          return Issue(&t, n, "malformed pods \"" + ps +
                                  "\" (expected a whole number >= 1)");
        }
        j.pods = int32_t(pods);
        // gpus_per_pod: N, mig-PROFILE, or NxPROFILE with a mig- profile.
        std::string g = get("gpus_per_pod");
        int64_t count = 0;
        size_t mig = g.find("mig-");
        if (mig != std::string::npos) {
          j.mig_profile = g.substr(mig + 4);
          std::string n_text = g.substr(0, mig);
          count = 1;
          if (!n_text.empty()) {
            if (n_text.back() != 'x' ||
                !ParseInt(std::string_view(n_text).substr(0, n_text.size() - 1),
                          &count)) {
              count = -1;
            }
          }
          if (j.mig_profile.empty()) count = -1;
        } else if (!ParseInt(g, &count)) {
          count = -1;
        }
        if (count < 0 || count > 4096) {
          return Issue(&t, n, "malformed gpus_per_pod \"" + g +
                                  "\" (expected N, mig-PROFILE or "
                                  "Nxmig-PROFILE)");
        }
        j.gpus = int32_t(count);
        t.jobs.push_back(std::move(j));
      });
  if (!s.ok()) return s;
  SortJobs(&t);
  return t;
}

Trace SyntheticTrace(int64_t jobs, uint64_t seed, int64_t gpus,
                     int32_t tenants) {
  Trace t;
  t.format = "synthetic";
  t.source = "synthetic";
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return double(rng() >> 11) * 0x1.0p-53; };
  struct Size {
    double p;
    int32_t pods, gpus;
  };
  const Size sizes[] = {{0.85, 1, 1},  {0.04, 1, 2},  {0.05, 1, 4},
                        {0.04, 1, 8},  {0.015, 2, 8}, {0.005, 8, 8}};
  double mean_gpus = 0;
  for (const Size& s : sizes) mean_gpus += s.p * s.pods * s.gpus;
  const double lo = 60, hi = 86400;
  const double mean_dur = (hi - lo) / std::log(hi / lo);
  // Arrivals keep the cluster ~90% busy on average.
  const double rate = 0.9 * double(gpus) / (mean_gpus * mean_dur);  // jobs/s
  std::vector<double> weight(size_t(std::max(tenants, 1)));
  double wsum = 0;
  for (size_t i = 0; i < weight.size(); ++i) wsum += weight[i] = 1.0 / (i + 1);
  double now = 0;
  t.jobs.reserve(size_t(jobs));
  for (int64_t i = 0; i < jobs; ++i) {
    now += -std::log(1 - uniform()) / rate;
    TraceJob j;
    j.line = i + 2;  // As if a header came first.
    j.submit_ms = std::llround(now * 1000);
    j.duration_ms = std::llround(lo * std::exp(uniform() * std::log(hi / lo)) * 1000);
    double u = uniform() * wsum;
    size_t k = 0;
    while (k + 1 < weight.size() && u >= weight[k]) u -= weight[k++];
    char buf[16];
    std::snprintf(buf, sizeof buf, "t%02zu", k);
    j.tenant = buf;
    double p = uniform();
    const Size* size = &sizes[0];
    for (const Size& s : sizes) {
      size = &s;
      if (p < s.p) break;
      p -= s.p;
    }
    j.pods = size->pods;
    j.gpus = size->gpus;
    t.jobs.push_back(std::move(j));
  }
  t.rows = jobs;
  SortJobs(&t);
  return t;
}

Result<Trace> LoadTrace(const std::string& spec) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument(
        "trace \"" + spec +
        "\": expected FORMAT:PATH (philly:, alibaba:, alibaba-single:, csv:) "
        "or synthetic:JOBS[:SEED[:GPUS[:TENANTS]]]");
  }
  std::string format = spec.substr(0, colon), path = spec.substr(colon + 1);
  if (format == "synthetic") {
    int64_t v[4] = {0, 1, 10000, 20};
    size_t i = 0, start = 0;
    while (i < 4) {
      size_t c = path.find(':', start);
      std::string part = path.substr(start, c == std::string::npos ? c : c - start);
      if (!ParseInt(part, &v[i]) || v[i] < (i == 1 ? 0 : 1) ||
          v[i] > 100000000) {
        return Status::InvalidArgument("trace \"" + spec + "\": malformed \"" +
                                       part + "\"");
      }
      ++i;
      if (c == std::string::npos) break;
      start = c + 1;
    }
    return SyntheticTrace(v[0], uint64_t(v[1]), v[2], int32_t(v[3]));
  }
  if (format != "philly" && format != "alibaba" && format != "alibaba-single" &&
      format != "csv") {
    return Status::InvalidArgument("trace \"" + spec + "\": unknown format \"" +
                                   format +
                                   "\" (philly, alibaba, alibaba-single, csv, "
                                   "synthetic)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open trace file " + path);
  if (format == "philly") return ReadPhillyTrace(in, path);
  if (format == "csv") return ReadAllotTrace(in, path);
  return ReadAlibabaTrace(in, path,
                          format == "alibaba" ? AlibabaTenants::kQos
                                              : AlibabaTenants::kSingle);
}

}  // namespace allot::sim
