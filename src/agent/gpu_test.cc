// Tests of the GPU sources: the simulated spec parser and telemetry, and the
// NVML source against a missing library and a fake one (allot_fake_nvml,
// whose path the build passes in ALLOT_FAKE_NVML).
#include "agent/gpu.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <set>

namespace allot::agent {

// Readable failure output for EXPECT_EQ on MIG lists.
void PrintTo(const MigInstance& m, std::ostream* os) {
  *os << "{" << m.uuid << ", " << m.profile << "}";
}

namespace {

TEST(SimulatedGpuTest, ParsesSpecIntoStableDevices) {
  Result<std::unique_ptr<GpuSource>> src =
      OpenSimulated("8xH100-80GB, 2xA100-40GB", "node-a");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const GpuSource& s = **src;
  EXPECT_TRUE(s.simulated());
  EXPECT_EQ(s.Describe(), "simulated (8xH100-80GB,2xA100-40GB)");
  ASSERT_EQ(s.Gpus().size(), 10u);
  std::set<std::string> uuids;
  for (const GpuInfo& g : s.Gpus()) {
    EXPECT_TRUE(g.simulated);
    EXPECT_EQ(g.uuid.rfind("GPU-SIM-", 0), 0u) << g.uuid;
    EXPECT_EQ(g.uuid.size(), 44u) << g.uuid;  // GPU-SIM- + 8-4-4-4-12.
    EXPECT_FALSE(g.mig_enabled);
    uuids.insert(g.uuid);
  }
  EXPECT_EQ(uuids.size(), 10u);
  EXPECT_EQ(s.Gpus()[0].product, "H100-80GB");
  EXPECT_EQ(s.Gpus()[0].memory_bytes, int64_t{80} << 30);
  EXPECT_EQ(s.Gpus()[9].index, 9);
  EXPECT_EQ(s.Gpus()[9].product, "A100-40GB");
  EXPECT_EQ(s.Gpus()[9].memory_bytes, int64_t{40} << 30);

  // Same node, same UUIDs (a restart); another node, other UUIDs.
  auto again = OpenSimulated("8xH100-80GB,2xA100-40GB", "node-a");
  auto other = OpenSimulated("8xH100-80GB,2xA100-40GB", "node-b");
  ASSERT_TRUE(again.ok() && other.ok());
  EXPECT_EQ((*again)->Gpus(), s.Gpus());
  EXPECT_NE((*other)->Gpus()[0].uuid, s.Gpus()[0].uuid);
}

TEST(SimulatedGpuTest, LimitsAreInclusive) {
  EXPECT_TRUE(OpenSimulated("64xH100-80GB", "n").ok());
  EXPECT_TRUE(OpenSimulated("64xA-1GB,64xA-1GB,64xA-1GB,64xA-1GB", "n").ok());
  EXPECT_TRUE(OpenSimulated("1xRTX-A6000-48GB", "n").ok());
}

TEST(SimulatedGpuTest, RejectsBadSpecsNamingThePart) {
  struct Case {
    const char* spec;
    const char* in_message;
  };
  const Case cases[] = {
      {"", "empty GPU spec"},
      {"   ", "empty GPU spec"},
      {"0xH100-80GB", "\"0xH100-80GB\""},
      {"65xH100-80GB", "count must be 1..64"},
      {"8xH100", "\"8xH100\""},
      {"x", "\"x\""},
      {"8xH100-0GB", "memory must be"},
      {"8xH100-80", "memory must be <N>GB"},
      {"8xH100-80gb", "memory must be <N>GB"},
      {"8x-80GB", "PRODUCT-<N>GB"},
      {"H100-80GB", "no 'x'"},
      {"-1xH100-80GB", "count is not a number"},
      {"99999999999999999999xH100-80GB", "count must be"},
      {"8xH100-99999999999999999999GB", "memory must be"},
      {"8xH100-80GB,", "\"\": empty"},
      {"8xH100-80GB,,1xA-1GB", "empty"},
      {"8xH1 00-80GB", "product has a character"},
      {"8xH100-80GB,2xA10O-4OGB", "\"2xA10O-4OGB\""},
      {"64xA-1GB,64xA-1GB,64xA-1GB,64xA-1GB,1xA-1GB", "more than 256 GPUs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    auto r = OpenSimulated(c.spec, "n");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.in_message), std::string::npos)
        << r.status().message();
  }
}

TEST(SimulatedGpuTest, BusyGpusLookBusy) {
  auto src = OpenSimulated("4xH100-80GB", "n");
  ASSERT_TRUE(src.ok());
  GpuSource& s = **src;
  (*src)->SetBusy({s.Gpus()[1].uuid, "MIG-unrelated"});
  for (int round = 0; round < 20; ++round) {
    auto samples = s.Sample();
    ASSERT_TRUE(samples.ok());
    ASSERT_EQ(samples->size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      const GpuSample& g = (*samples)[i];
      EXPECT_EQ(g.uuid, s.Gpus()[i].uuid);
      EXPECT_TRUE(g.healthy) << g.health_reason;
      if (i == 1) {
        EXPECT_GE(g.utilization_pct, 85);
        EXPECT_LE(g.utilization_pct, 100);
        EXPECT_GT(g.memory_used_bytes, s.Gpus()[i].memory_bytes / 2);
        EXPECT_LT(g.memory_used_bytes, s.Gpus()[i].memory_bytes);
        EXPECT_GE(g.power_watts, 300);
        EXPECT_GE(g.temperature_c, 60);
      } else {
        EXPECT_LE(g.utilization_pct, 5);
        EXPECT_EQ(g.memory_used_bytes, 0);
        EXPECT_LT(g.power_watts, 100);
        EXPECT_LT(g.temperature_c, 40);
      }
    }
  }
  s.SetBusy({});
  auto idle = s.Sample();
  ASSERT_TRUE(idle.ok());
  EXPECT_LE((*idle)[1].utilization_pct, 5);
}

TEST(SimulatedGpuTest, TemperatureLimitMakesBusyGpusUnhealthy) {
  auto src =
      OpenSimulated("2xH100-80GB", "n", HealthLimits{.max_temperature_c = 50});
  ASSERT_TRUE(src.ok());
  (*src)->SetBusy({(*src)->Gpus()[0].uuid});
  auto samples = (*src)->Sample();
  ASSERT_TRUE(samples.ok());
  EXPECT_FALSE((*samples)[0].healthy);
  EXPECT_NE((*samples)[0].health_reason.find(">= 50 C"), std::string::npos)
      << (*samples)[0].health_reason;
  EXPECT_TRUE((*samples)[1].healthy);
}

TEST(NvmlGpuTest, MissingLibraryIsFailedPrecondition) {
  auto r = OpenNvml("libnvidia-ml-does-not-exist.so.1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("libnvidia-ml-does-not-exist.so.1"), std::string::npos) << m;
  // dlerror() text ("...: cannot open shared object file ...").
  EXPECT_NE(m.find("cannot open shared object file"), std::string::npos) << m;
}

TEST(NvmlGpuTest, DefaultLibraryOnThisMachine) {
  // With a driver this succeeds; without one (CI, laptops) it must fail
  // cleanly with FailedPrecondition naming the library.
  auto r = OpenNvml();
  if (r.ok()) {
    EXPECT_FALSE((*r)->simulated());
  } else {
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find("libnvidia-ml.so.1"),
              std::string::npos);
  }
}

TEST(NvmlGpuTest, LibraryWithoutNvmlSymbols) {
  auto r = OpenNvml("libc.so.6");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("lacks the function nvmlInit_v2"),
            std::string::npos)
      << r.status().message();
}

TEST(NvmlGpuTest, InitFailureCarriesNvmlError) {
  setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  auto r = OpenNvml(ALLOT_FAKE_NVML);
  unsetenv("FAKE_NVML_INIT_FAIL");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("Driver Not Loaded"), std::string::npos)
      << r.status().message();
}

TEST(NvmlGpuTest, FakeLibraryDevicesAndMig) {
  auto r = OpenNvml(ALLOT_FAKE_NVML);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  GpuSource& s = **r;
  EXPECT_FALSE(s.simulated());
  EXPECT_EQ(s.Describe(), "NVML (driver 550.54.15-fake, 2 GPUs)");
  ASSERT_EQ(s.Gpus().size(), 2u);
  const GpuInfo& h100 = s.Gpus()[0];
  EXPECT_EQ(h100.index, 0);
  EXPECT_EQ(h100.uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_EQ(h100.product, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.memory_bytes, int64_t{80} << 30);
  EXPECT_FALSE(h100.simulated);
  EXPECT_TRUE(h100.mig_enabled);
  const std::vector<MigInstance> want = {
      {"MIG-aaaaaaaa-0000-0000-0000-000000000001", "1g.10gb", 9, 0},  // From the name.
      {"MIG-aaaaaaaa-0000-0000-0000-000000000002", "40gb", 2, 1},     // Memory fallback.
  };
  EXPECT_EQ(h100.minor, 3);  // /dev/nvidia3: NVML's minor, not its index.
  EXPECT_EQ(h100.mig, want);
  const GpuInfo& a100 = s.Gpus()[1];
  EXPECT_EQ(a100.index, 1);
  EXPECT_EQ(a100.minor, 7);
  EXPECT_EQ(a100.product, "NVIDIA A100-SXM4-40GB");
  EXPECT_FALSE(a100.mig_enabled);
  EXPECT_TRUE(a100.mig.empty());
}

TEST(NvmlGpuTest, FakeLibraryTelemetryAndHealth) {
  auto r = OpenNvml(ALLOT_FAKE_NVML, HealthLimits{.max_temperature_c = 90});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int round = 0; round < 2; ++round) {  // XID health is sticky.
    SCOPED_TRACE(round);
    auto samples = (*r)->Sample();
    ASSERT_TRUE(samples.ok());
    ASSERT_EQ(samples->size(), 2u);
    const GpuSample& h100 = (*samples)[0];
    EXPECT_EQ(h100.uuid, "GPU-00000000-1111-2222-3333-444444444444");
    EXPECT_EQ(h100.temperature_c, 45);
    EXPECT_DOUBLE_EQ(h100.power_watts, 120.0);
    EXPECT_EQ(h100.utilization_pct, 0);  // NOT_SUPPORTED under MIG.
    EXPECT_EQ(h100.memory_used_bytes, int64_t{20} << 30);
    EXPECT_EQ(h100.ecc_dbe_volatile, 0);
    EXPECT_EQ(h100.last_xid, 0);
    EXPECT_TRUE(h100.healthy) << h100.health_reason;
    const GpuSample& a100 = (*samples)[1];
    EXPECT_EQ(a100.temperature_c, 95);
    EXPECT_DOUBLE_EQ(a100.power_watts, 350.0);
    EXPECT_EQ(a100.utilization_pct, 77);
    EXPECT_EQ(a100.ecc_dbe_volatile, 2);
    EXPECT_EQ(a100.last_xid, 79);
    EXPECT_FALSE(a100.healthy);
    EXPECT_EQ(a100.health_reason, "XID 79");  // The first reason wins.
  }
}

}  // namespace
}  // namespace allot::agent
