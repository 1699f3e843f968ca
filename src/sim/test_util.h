// Helpers of the simulator's tests: a validated config from YAML, a trace
// from Allot's CSV (both must be free of errors).
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/manifest.h"
#include "sim/trace.h"

namespace allot::sim {

inline core::Config ParseConfig(const std::string& yaml) {
  core::Config c;
  Status s = core::ParseManifests(yaml, "cluster.yaml", &c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = core::ValidateConfig(&c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return c;
}

inline Trace Csv(const std::string& text) {
  std::istringstream in(text);
  auto t = ReadAllotTrace(in, "t.csv");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->issues.empty());
  return *t;
}

}  // namespace allot::sim
