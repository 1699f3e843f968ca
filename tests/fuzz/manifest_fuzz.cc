// libFuzzer target: the manifest reader and its JSON round trip.
//
// Input: the text of a manifest file (YAML, one or more documents).
//
// Checks, for every input ParseManifests accepts:
//  - nothing crashes, leaks or hits undefined behaviour (ASan + UBSan) in
//    ParseManifests, ValidateConfig or the encoders;
//  - the round trip of core/manifest_encode.h: every object encoded with
//    its Encode function, serialized, and read back by ParseManifests,
//    equals the original (operator== of core/model.h), with the exceptions
//    manifest_encode.h lists (a Workload naming a priority class reads back
//    with priority 0 until ValidateConfig resolves it; an empty list of
//    fair-sharing preemption strategies reads back as the default list);
//  - encoding is a fixed point: the re-read object encodes to the same bytes;
//  - every encoding is valid JSON (what the server stores and serves);
//  - when ValidateConfig accepts the original, it accepts the read-back
//    configuration too, with the same result.
// A violation prints the input's encoding and aborts (a libFuzzer crash).
//
//   build-fuzz/allot_manifest_fuzz tests/fuzz/corpus/manifest
#include <boost/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_encode.h"
#include "core/model.h"
#include "fuzz_common.h"

namespace {

using allot::Status;
using allot::core::Config;
namespace json = boost::json;

[[noreturn]] void Fail(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "manifest_fuzz: %s\n%s\n", what.c_str(),
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// Every object of `c` as one manifest text ("---"-separated JSON documents)
// and, in the same order, each document alone.
std::vector<std::string> EncodeAll(const Config& c) {
  using namespace allot::core;
  std::vector<std::string> docs;
  for (const auto& x : c.flavors) docs.push_back(json::serialize(EncodeFlavor(x)));
  for (const auto& x : c.cohorts) docs.push_back(json::serialize(EncodeCohort(x)));
  for (const auto& x : c.cluster_queues)
    docs.push_back(json::serialize(EncodeClusterQueue(x)));
  for (const auto& x : c.local_queues)
    docs.push_back(json::serialize(EncodeLocalQueue(x)));
  for (const auto& x : c.priority_classes)
    docs.push_back(json::serialize(EncodePriorityClass(x)));
  for (const auto& x : c.namespaces)
    docs.push_back(json::serialize(EncodeNamespace(x)));
  for (const auto& x : c.nodes) docs.push_back(json::serialize(EncodeNode(x)));
  for (const auto& x : c.workloads)
    docs.push_back(json::serialize(EncodeWorkload(x)));
  docs.push_back(json::serialize(EncodeSchedulerConfig(c.scheduler)));
  return docs;
}

std::string Join(const std::vector<std::string>& docs) {
  std::string text;
  for (const std::string& d : docs) {
    text += "---\n";
    text += d;
    text += "\n";
  }
  return text;
}

// What the round trip promises to keep: `c` with the documented exceptions
// applied (see manifest_encode.h).
Config Expected(Config c, bool validated) {
  if (!validated) {
    for (auto& w : c.workloads) {
      if (!w.priority_class_name.empty()) w.priority = 0;
    }
  }
  // EncodeAll always writes a SchedulerConfig document.
  c.scheduler_declared = true;
  if (c.scheduler.preemption_strategies.empty()) {
    c.scheduler.preemption_strategies =
        allot::core::SchedulerConfig{}.preemption_strategies;
  }
  return c;
}

// Names the first object that differs, for the report.
std::string FirstDifference(const Config& want, const Config& got) {
  std::vector<std::string> a = EncodeAll(want), b = EncodeAll(got);
  if (a.size() != b.size()) {
    return "object count " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return "want: " + a[i] + "\n got: " + b[i];
  }
  return "the encodings agree; a field the encoder does not write differs "
         "(compare with operator== by field)";
}

// Every encoded document must be valid JSON: the store and the API's
// clients read it with a strict JSON parser (invalid UTF-8 once bricked the
// store: corpus/request/regress-invalid-utf8-*).
void CheckEncodingsAreJson(const std::vector<std::string>& docs) {
  for (const std::string& d : docs) {
    boost::system::error_code ec;
    json::parse(d, ec);
    if (ec) {
      Fail("an accepted object encodes to invalid JSON (" + ec.message() +
               "): the server would store and serve it",
           d);
    }
  }
}

void RoundTrip(const Config& original, bool validated) {
  std::vector<std::string> docs = EncodeAll(original);
  CheckEncodingsAreJson(docs);
  std::string text = Join(docs);
  Config back;
  Status s = allot::core::ParseManifests(text, "encoded", &back);
  if (!s.ok()) {
    Fail("ParseManifests rejects the encoding of what it accepted: " +
             s.ToString(),
         text);
  }
  if (validated) {
    Status v = allot::core::ValidateConfig(&back);
    if (!v.ok()) {
      Fail("ValidateConfig accepted the input but rejects its encoding: " +
               v.ToString(),
           text);
    }
  }
  Config want = Expected(original, validated);
  if (!(back == want)) {
    Fail(std::string("round trip changed an object") +
             (validated ? " (after ValidateConfig)" : ""),
         FirstDifference(want, back) + "\n--- encoding:\n" + text);
  }
  // A fixed point: the read-back objects encode to the same bytes.
  std::vector<std::string> again = EncodeAll(back);
  if (again != EncodeAll(want)) {
    Fail("encoding is not a fixed point", FirstDifference(want, back));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  Config parsed;
  if (!allot::core::ParseManifests(text, "fuzz.yaml", &parsed).ok()) return 0;
  RoundTrip(parsed, /*validated=*/false);
  Config validated = parsed;
  if (allot::core::ValidateConfig(&validated).ok()) {
    RoundTrip(validated, /*validated=*/true);
  }
  return 0;
}
