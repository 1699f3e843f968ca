// Traces from a server's recorded workloads (see history.h).
#include "sim/history.h"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>

namespace allot::sim {
namespace json = boost::json;
namespace {

bool Num(std::string_view s, int64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

const json::value* Find(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* cur = &v;
  for (const char* k : path) {
    if (!cur->is_object()) return nullptr;
    cur = cur->as_object().if_contains(k);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

std::string Str(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* f = Find(v, path);
  return f && f->is_string() ? std::string(f->as_string()) : std::string();
}

// The time of the last condition of `type` with status True, or -1.
int64_t ConditionMs(const json::value& w, const char* type) {
  const json::value* c = Find(w, {"status", "conditions"});
  int64_t best = -1;
  if (!c || !c->is_array()) return best;
  for (const json::value& e : c->as_array()) {
    if (Str(e, {"type"}) != type || Str(e, {"status"}) != "True") continue;
    const json::value* t = Find(e, {"lastTransitionUnixMs"});
    if (t && t->is_int64()) best = std::max(best, t->as_int64());
  }
  return best;
}

}  // namespace

bool ParseRfc3339Ms(const std::string& s, int64_t* out) {
  // YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM]
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
      s[16] != ':') {
    return false;
  }
  std::string_view v(s);
  int64_t y, mo, d, h, mi, se;
  if (!Num(v.substr(0, 4), &y) || !Num(v.substr(5, 2), &mo) ||
      !Num(v.substr(8, 2), &d) || !Num(v.substr(11, 2), &h) ||
      !Num(v.substr(14, 2), &mi) || !Num(v.substr(17, 2), &se)) {
    return false;
  }
  size_t i = 19;
  int64_t ms = 0;
  if (i < s.size() && s[i] == '.') {
    int64_t scale = 100;
    ++i;
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) {
      ms += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  int64_t offset_min = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
    int64_t oh, om;
    if (!Num(v.substr(i + 1, 2), &oh) || !Num(v.substr(i + 4, 2), &om)) return false;
    offset_min = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
    i += 6;
  } else {
    return false;
  }
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
      mi > 59 || se > 60) {
    return false;
  }
  *out = (DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se -
          offset_min * 60) * 1000 + ms;
  return true;
}

HistoryReader::HistoryReader(std::string source) {
  t_.format = "history";
  t_.source = std::move(source);
}

void HistoryReader::Add(const json::value& w) {
  const int64_t line = ++t_.rows;
  const std::string key =
      Str(w, {"metadata", "namespace"}) + "/" + Str(w, {"metadata", "name"});
  TraceJob j;
  j.line = line;
  j.name = Str(w, {"metadata", "name"});
  j.tenant = Str(w, {"metadata", "namespace"});
  j.queue = Str(w, {"spec", "queueName"});
  std::string type = Str(w, {"spec", "type"});
  if (!type.empty()) j.type = type;
  if (const json::value* p = Find(w, {"status", "priority"}); p && p->is_int64()) {
    j.priority = std::to_string(p->as_int64());
  }
  const json::value* sets = Find(w, {"spec", "podSets"});
  int gpu_sets = 0;
  if (sets && sets->is_array()) {
    for (const json::value& ps : sets->as_array()) {
      const json::value* req = Find(ps, {"template", "resources", "requests"});
      if (!req || !req->is_object()) continue;
      for (const auto& kv : req->as_object()) {
        std::string res(kv.key());
        if (res != "nvidia.com/gpu" && res.rfind("nvidia.com/mig-", 0) != 0) continue;
        std::string q = kv.value().is_string() ? std::string(kv.value().as_string())
                                               : json::serialize(kv.value());
        int64_t n = 0;
        if (!Num(q, &n) || n <= 0) continue;
        if (gpu_sets++ > 0) continue;
        const json::value* c = Find(ps, {"count"});
        j.pods = c && c->is_int64() ? int32_t(c->as_int64()) : 1;
        j.gpus = int32_t(n);
        if (res != "nvidia.com/gpu") j.mig_profile = res.substr(15);
      }
    }
  }
  if (gpu_sets == 0) {
    ++no_gpus_;
    return;
  }
  const int64_t finished = ConditionMs(w, "Finished");
  int64_t admitted = ConditionMs(w, "Admitted");
  if (admitted < 0) admitted = ConditionMs(w, "QuotaReserved");
  if (finished < 0 && admitted < 0) {
    ++pending_;
    return;
  }
  if (!ParseRfc3339Ms(Str(w, {"metadata", "creationTimestamp"}), &j.submit_ms)) {
    t_.issues.push_back({line, key + ": no parsable metadata.creationTimestamp"});
    return;
  }
  if (finished >= 0) {
    if (admitted < 0 || finished < admitted) {
      t_.issues.push_back(
          {line, key + ": finished without an Admitted condition before it"});
      return;
    }
    j.duration_ms = finished - admitted;
  } else {
    running_.push_back({t_.jobs.size(), admitted});
  }
  if (gpu_sets > 1) ++multi_;
  t_.jobs.push_back(std::move(j));
}

Trace HistoryReader::Finish(int64_t read_at_ms) {
  Trace t = std::move(t_);
  int64_t running = int64_t(running_.size());
  if (read_at_ms >= 0) {
    for (const auto& [i, admitted] : running_) {
      t.jobs[i].duration_ms = std::max<int64_t>(0, read_at_ms - admitted);
    }
  } else if (running > 0) {
    // Left out: no end to give them.
    std::vector<bool> drop(t.jobs.size(), false);
    for (const auto& r : running_) drop[r.first] = true;
    std::vector<TraceJob> kept;
    for (size_t i = 0; i < t.jobs.size(); ++i) {
      if (!drop[i]) kept.push_back(std::move(t.jobs[i]));
    }
    t.jobs = std::move(kept);
  }
  running_.clear();
  t.notes = std::move(notes_);
  auto note = [&](int64_t n, const std::string& what) {
    if (n > 0) t.notes.push_back(std::to_string(n) + " workloads " + what);
  };
  if (read_at_ms >= 0) {
    note(running, "still running when the history was read: replayed with "
                  "their run time so far");
  } else {
    note(running, "still running left out (the server did not say its time)");
  }
  note(pending_, "not admitted when the history was read (pending, or "
                 "requeued after an eviction) left out");
  note(no_gpus_, "requesting no GPUs left out");
  note(multi_, "with several GPU requests replayed with the first only");
  std::stable_sort(t.jobs.begin(), t.jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit_ms != b.submit_ms ? a.submit_ms < b.submit_ms : a.line < b.line;
  });
  if (!t.jobs.empty()) {
    int64_t origin = t.jobs.front().submit_ms;
    for (TraceJob& j : t.jobs) j.submit_ms -= origin;
  }
  return t;
}

Trace TraceFromWorkloads(const json::array& items, const std::string& source,
                         int64_t read_at_ms) {
  HistoryReader r(source);
  for (const json::value& w : items) r.Add(w);
  return r.Finish(read_at_ms);
}

}  // namespace allot::sim
