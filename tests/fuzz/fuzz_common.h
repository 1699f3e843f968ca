// Shared by the fuzz targets: skipping inputs of known, reported findings.
//
// With ALLOT_FUZZ_SKIP_KNOWN=1 in the environment the targets skip inputs
// that trigger the open findings of tests/fuzz/crashes/README.md, so that a
// run can look past them (`make fuzz-smoke` and `make fuzz` set it unless
// FUZZ_SKIP_KNOWN=0). Remove a check once its finding is fixed.
#pragma once

#include <cctype>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include "core/model.h"

namespace allot::fuzz {

inline bool SkipKnown() {
  static const bool skip = [] {
    const char* v = std::getenv("ALLOT_FUZZ_SKIP_KNOWN");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return skip;
}

// Finding 2: yaml-cpp 0.7's LoadAll never returns (and allocates without
// bound) on a ',' outside any flow collection after a node, e.g. "{},",
// "\"x\"," or ",". A rough
// scan: quotes and comments are skipped, brackets counted; any ',' at depth
// 0 counts (over-approximating is fine here).
inline bool MayHangYamlCpp(const std::string& text) {
  int depth = 0;
  char quote = 0;
  char prev = '\n';
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      prev = c;
      continue;
    }
    // A quote opens a quoted scalar unless it is inside a word (don't); a
    // '#' after a space starts a comment.
    bool in_word = std::isalnum(static_cast<unsigned char>(prev)) ||
                   prev == '-' || prev == '_' || prev == '.' || prev == '/' ||
                   prev == '@';
    if ((c == '"' || c == '\'') && !in_word) {
      quote = c;
    } else if (c == '#' && (prev == '\n' || prev == ' ' || prev == '\t')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      return true;
    }
    prev = c;
  }
  return false;
}

// Finding 4: Quantity::Parse overflows __int128 (undefined behaviour; in
// practice it wraps: "295147905179352825856Ei" reads as 0, and "1e-128"
// divides by zero). That needs 18 or more digits in a row, or an exponent
// of two or more digits, so skip inputs with either.
inline bool HasHugeNumber(const std::string& text) {
  int digits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      if (++digits >= 18) return true;
      continue;
    }
    if (c == 'e' || c == 'E') {
      size_t j = i + 1;
      if (j < text.size() && (text[j] == '-' || text[j] == '+')) ++j;
      if (j + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) &&
          std::isdigit(static_cast<unsigned char>(text[j + 1]))) {
        return true;
      }
    }
    if (c != '.') digits = 0;
  }
  return false;
}

// Finding 3: a pod set with count 0 is admitted with no flavor, and the
// scheduler then reads flavors[-1] (sched::Scheduler::Impl::AdmissionOf).
inline bool HasEmptyPodSet(const core::Config& c) {
  for (const core::Workload& w : c.workloads) {
    for (const core::PodSet& ps : w.pod_sets) {
      if (ps.count == 0) return true;
    }
  }
  return false;
}

// Finding 5: POST /api/v1/apply accepts two documents of one kind with the
// same name (the last wins), so applying the same body again reports
// "configured" instead of "unchanged".
inline bool HasDuplicateNames(const core::Config& c) {
  std::set<std::pair<int, std::string>> seen;
  bool dup = false;
  auto add = [&](int kind, const std::string& key) {
    if (!seen.insert({kind, key}).second) dup = true;
  };
  for (const auto& x : c.flavors) add(0, x.name);
  for (const auto& x : c.cohorts) add(1, x.name);
  for (const auto& x : c.cluster_queues) add(2, x.name);
  for (const auto& x : c.local_queues) add(3, x.ns + "/" + x.name);
  for (const auto& x : c.priority_classes) add(4, x.name);
  for (const auto& x : c.namespaces) add(5, x.name);
  for (const auto& x : c.nodes) add(6, x.name);
  return dup;
}

}  // namespace allot::fuzz
