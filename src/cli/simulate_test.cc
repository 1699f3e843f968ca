// RunSimulate end to end on temporary files: generated configs, compare
// mode, exit codes, --strict, and byte-identical output.
#include "cli/simulate.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/dry_run.h"
#include "testing/temp_dir.h"

namespace allot::cli {
namespace {


class SimulateTest : public allot::testing::TempDirTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(TempDirTest::SetUp());
    // 4 nodes of 8 GPUs, two tenants with 16 each.
    SimulateFlags g;
    g.synthetic_config = "32:2";
    ASSERT_EQ(Run(g), kExitOk) << err_.str();
    config_ = Write("cluster.yaml", out_.str());
  }
  std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int Run(const SimulateFlags& f) {
    out_.str("");
    err_.str("");
    return RunSimulate(f, ClientFlags{}, out_, err_);
  }
  SimulateFlags Flags(const std::string& trace) {
    SimulateFlags f;
    f.files = {config_};
    f.trace = trace;
    return f;
  }

  std::string config_;
  std::ostringstream out_;
  std::ostringstream err_;
};

constexpr char kTrace[] =
    "submit,tenant,gpus_per_pod,pods,duration\n"
    "0,t00,8,3,2h\n"
    "60,t01,8,2,1h\n"
    "120,t00,1,1,10m\n"
    "130,t01,4,1,30m\n";

TEST_F(SimulateTest, CompareRunsOneRowPerPolicy) {
  SimulateFlags f = Flags("csv:" + Write("t.csv", kTrace));
  f.compare = true;
  f.output = Path("all.json");
  f.html = Path("report.html");
  ASSERT_EQ(Run(f), kExitOk) << err_.str();
  std::vector<std::string> lines;
  std::istringstream table(out_.str());
  for (std::string l; std::getline(table, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 6u) << out_.str();  // Header + 5 policies.
  EXPECT_EQ(lines[0].rfind("policy", 0), 0u);
  const char* names[] = {"fifo", "strict", "kueue", "fair", "allot"};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(lines[i + 1].rfind(names[i], 0), 0u) << lines[i + 1];
  std::string json = Read(f.output);
  EXPECT_EQ(json.front(), '[');
  EXPECT_NE(json.find("\"policy\":\"allot\""), std::string::npos);
  std::string html = Read(f.html);
  EXPECT_NE(html.find("<!DOCTYPE html>"), std::string::npos);

  f.policies = {"kueue", "strict"};
  ASSERT_EQ(Run(f), kExitOk) << err_.str();
  const std::string two = out_.str();
  EXPECT_EQ(std::count(two.begin(), two.end(), '\n'), 3) << two;
}

TEST_F(SimulateTest, OutputIsByteIdentical) {
  SimulateFlags f = Flags("synthetic:400:3:32:2");
  f.mtbf = "100h";
  f.checkpoint_interval = "15m";
  ASSERT_EQ(Run(f), kExitOk) << err_.str();
  std::string first = out_.str();
  ASSERT_EQ(Run(f), kExitOk);
  EXPECT_EQ(first, out_.str());
  EXPECT_NE(first.find("\"nodeFailures\""), std::string::npos);
}

TEST_F(SimulateTest, MalformedRowsAreReportedOrFatalWithStrict) {
  std::string trace = Write("bad.csv",
                            "submit,tenant,gpus_per_pod,pods,duration\n"
                            "0,t00,1,1,10\n"
                            "0,t00,1,1,-10\n"  // line 3: negative
                            "0,t00,1\n"        // line 4: missing fields
                            "0,t00,16,1,10\n"  // line 5: no node has 16
                            "0,t01,1,1,10\n");
  SimulateFlags f = Flags("csv:" + trace);
  ASSERT_EQ(Run(f), kExitOk) << err_.str();
  EXPECT_NE(err_.str().find("line 3: negative duration"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("line 4: expected 5 fields"), std::string::npos);
  EXPECT_NE(err_.str().find("line 5: a pod needs 16"), std::string::npos);
  EXPECT_NE(out_.str().find("\"malformedRows\":2"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\"rejected\":1"), std::string::npos);
  EXPECT_NE(out_.str().find("\"completed\":2"), std::string::npos);

  f.strict = true;
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_TRUE(out_.str().empty());
  // Only the row the cluster cannot run: still fatal.
  f.trace = "csv:" + Write("big.csv",
                           "submit,tenant,gpus_per_pod,pods,duration\n"
                           "0,t00,16,1,10\n");
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_NE(err_.str().find("line 2"), std::string::npos);
}

TEST_F(SimulateTest, BadFlagsAndFiles) {
  SimulateFlags f = Flags("csv:" + Path("missing.csv"));
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_NE(err_.str().find("cannot open trace file"), std::string::npos);
  f = Flags("nope:x");
  EXPECT_EQ(Run(f), kExitUsage);
  f = Flags("csv:" + Write("t.csv", kTrace));
  f.policy = "random";
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_NE(err_.str().find("unknown policy"), std::string::npos);
  f.policy = "kueue";
  f.checkpoint_interval = "often";
  EXPECT_EQ(Run(f), kExitUsage);
  f = Flags("csv:" + Write("t.csv", kTrace));
  f.files = {Write("broken.yaml", "apiVersion: allot.dev/v1\nkind: NodePool\n"
                                  "metadata: {name: x}\nspec: {count: 0}\n")};
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_NE(err_.str().find("broken.yaml: document 0 (NodePool x): spec.count"),
            std::string::npos)
      << err_.str();
}

// With an idle model --compare adds the parking policy and its columns;
// parking without one, or a bad model, is refused saying what to give.
TEST_F(SimulateTest, IdleModelAddsTheParkingPolicy) {
  SimulateFlags f = Flags("csv:" + Write("t.csv", kTrace));
  f.policy = "park";
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_NE(err_.str().find("give --idle-model"), std::string::npos) << err_.str();
  f.idle_model = "busy=1h";
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_NE(err_.str().find("busy and idle must both be given"), std::string::npos) << err_.str();
  f.idle_model = "busy=10m,idle=30m,long=1m";
  f.preemptible = 1.5;
  EXPECT_EQ(Run(f), kExitUsage);
  EXPECT_NE(err_.str().find("--preemptible"), std::string::npos) << err_.str();
  f.preemptible = 0.5;
  f.park_after = "0";
  EXPECT_EQ(Run(f), kExitUsage);
  f.park_after = "5m";
  f.compare = true;
  f.output = Path("all.json");
  ASSERT_EQ(Run(f), kExitOk) << err_.str();
  std::vector<std::string> lines;
  std::istringstream table(out_.str());
  for (std::string l; std::getline(table, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 7u) << out_.str();  // Header + 5 policies + park.
  EXPECT_EQ(lines[6].rfind("park", 0), 0u) << lines[6];
  EXPECT_NE(lines[0].find("given back"), std::string::npos) << lines[0];
  const std::string json = Read(f.output);
  EXPECT_NE(json.find("\"policy\":\"park\""), std::string::npos);
  EXPECT_NE(json.find("\"parking\":{\"parking\":true"), std::string::npos) << json;
}

TEST_F(SimulateTest, PhillyConfigGenerator) {
  // Two VCs with nodes, one VC of the trace without: it gets quota 0.
  std::string nodes = Write("vc.csv", "vc,node num\nv1,2\nv2,1\n");
  std::string trace = Write("p.csv",
                            "timestamp,duration,num_gpus,gpu_time,cluster\n"
                            "2017-10-09 07:01:55,60.0,16,960.0,v1\n"
                            "2017-10-09 07:02:55,60.0,1,60.0,v3\n");
  SimulateFlags f;
  f.trace = "philly:" + trace;
  f.philly_config = nodes;
  ASSERT_EQ(Run(f), kExitOk) << err_.str();
  std::string yaml = out_.str();
  EXPECT_NE(yaml.find("count: 3\n"), std::string::npos);
  EXPECT_NE(yaml.find("nominalQuota: 16}"), std::string::npos);
  EXPECT_NE(yaml.find("nominalQuota: 0}"), std::string::npos);
  // The generated config runs the trace: 16 GPUs as 2 pods of 8.
  SimulateFlags s;
  s.files = {Write("philly.yaml", yaml)};
  s.trace = f.trace;
  ASSERT_EQ(Run(s), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("\"completed\":2"), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace allot::cli
