// Trace readers: good rows, and malformed rows counted with their lines.
#include "sim/trace.h"

#include <gtest/gtest.h>

#include <sstream>

namespace allot::sim {
namespace {

TEST(PhillyTraceTest, SortsBySubmitTimeAndStartsAtZero) {
  std::istringstream in(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-10-09 06:13:03,2951.5,16,47224.0,6214e9\n"
      "\n");
  auto t = ReadPhillyTrace(in, "p.csv");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_TRUE(t->issues.empty());
  // 06:13:03 comes first; 07:01:55 is 2,932 s later.
  EXPECT_EQ(t->jobs[0].tenant, "6214e9");
  EXPECT_EQ(t->jobs[0].submit_ms, 0);
  EXPECT_EQ(t->jobs[0].duration_ms, 2951500);
  EXPECT_EQ(t->jobs[0].pods, 0);  // The simulator splits 16 GPUs.
  EXPECT_EQ(t->jobs[0].gpus, 16);
  EXPECT_EQ(t->jobs[0].line, 3);
  EXPECT_EQ(t->jobs[1].submit_ms, 2932000);
}

TEST(PhillyTraceTest, MalformedRowsAreCountedWithLineNumbers) {
  std::istringstream in(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"   // 1
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"         // 2 good
      "2017-10-09 07:01:55,66.0,1,66.0\n"                // 3 missing field
      "2017-10-09 07:01:55,-5.0,1,-5.0,11cb48\n"         // 4 negative
      "2017-13-09 07:01:55,5.0,1,5.0,11cb48\n"           // 5 bad month
      "2017-10-09 07:01:55,5.0,zero,5.0,11cb48\n"        // 6 bad gpus
      "2017-10-09 07:01:55,5.0,0,5.0,11cb48\n"           // 7 zero gpus
      "2017-10-09 07:01:55,5.0,1,5.0,\n");               // 8 no VC
  auto t = ReadPhillyTrace(in, "p.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows, 7);
  ASSERT_EQ(t->jobs.size(), 1u);
  ASSERT_EQ(t->issues.size(), 6u);
  const int64_t lines[] = {3, 4, 5, 6, 7, 8};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(t->issues[i].line, lines[i]);
  EXPECT_NE(t->issues[0].message.find("expected 5 fields, got 4"), std::string::npos);
  EXPECT_NE(t->issues[1].message.find("negative duration"), std::string::npos);
  EXPECT_NE(t->issues[2].message.find("timestamp"), std::string::npos);
}

TEST(PhillyTraceTest, BadHeaderIsAnError) {
  std::istringstream in("when,how_long\n1,2\n");
  auto t = ReadPhillyTrace(in, "p.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("p.csv: line 1: unknown column \"when\""),
            std::string::npos)
      << t.status().message();
  std::istringstream empty("");
  EXPECT_FALSE(ReadPhillyTrace(empty, "e.csv").ok());
}

TEST(AlibabaTraceTest, TenantsFromQosAndWholeGpus) {
  std::istringstream in(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
      "creation_time,deletion_time,scheduled_time\n"
      "p0,12000,16384,1,1000,,LS,Running,0,100,10\n"
      "p1,6000,12288,1,460,,BE,Running,5,50,5\n"
      "p2,6000,12288,0,0,,BE,Running,5,50,5\n"      // CPU only: left out
      "p3,6000,12288,8,1000,,LS,Pending,7,50,\n"    // never scheduled
      "p4,6000,12288,2,1000,,LS,Running,7,5,6\n"    // deleted before start
      "p5,6000,12288,2,1000,,LS,Running,7\n");      // missing fields
  auto t = ReadAlibabaTrace(in, "a.csv", AlibabaTenants::kQos);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].tenant, "LS");
  EXPECT_EQ(t->jobs[0].duration_ms, 90000);  // deletion - scheduled
  EXPECT_EQ(t->jobs[1].tenant, "BE");
  EXPECT_EQ(t->jobs[1].gpus, 1);  // 460 milli-GPU -> one whole GPU
  ASSERT_EQ(t->issues.size(), 2u);
  EXPECT_EQ(t->issues[0].line, 6);
  EXPECT_NE(t->issues[0].message.find("negative duration"), std::string::npos);
  EXPECT_EQ(t->issues[1].line, 7);
  EXPECT_EQ(t->notes.size(), 3u);

  std::istringstream again(
      "num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n"
      "1,1000,LS,0,100,10\n");
  auto single = ReadAlibabaTrace(again, "a.csv", AlibabaTenants::kSingle);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->jobs[0].tenant, "default");
}

TEST(AllotTraceTest, ColumnsByNameWithMigAndUnits) {
  std::istringstream in(
      "# a comment\n"
      "tenant,submit,duration,pods,gpus_per_pod,queue,priority,type\n"
      "team-a,0,1h,2,4,train,high,training\n"
      "team-b,30,90,1,mig-1g.10gb,,,\n"
      "team-b,31,90,1,3xmig-2g.20gb,,5,\n");
  auto t = ReadAllotTrace(in, "t.csv");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 3u) << (t->issues.empty() ? "" : t->issues[0].message);
  EXPECT_EQ(t->jobs[0].duration_ms, 3600000);
  EXPECT_EQ(t->jobs[0].pods, 2);
  EXPECT_EQ(t->jobs[0].gpus, 4);
  EXPECT_EQ(t->jobs[0].queue, "train");
  EXPECT_EQ(t->jobs[0].priority, "high");
  EXPECT_EQ(t->jobs[0].type, "training");
  EXPECT_EQ(t->jobs[1].submit_ms, 30000);
  EXPECT_EQ(t->jobs[1].mig_profile, "1g.10gb");
  EXPECT_EQ(t->jobs[1].gpus, 1);
  EXPECT_EQ(t->jobs[2].mig_profile, "2g.20gb");
  EXPECT_EQ(t->jobs[2].gpus, 3);
  EXPECT_EQ(t->jobs[2].priority, "5");
}

TEST(AllotTraceTest, MalformedRows) {
  std::istringstream in(
      "submit,tenant,gpus_per_pod,duration,pods,type\n"  // 1
      "0,a,1,10,1,batch\n"                               // 2 good
      "0,a,1,-10,1,batch\n"                              // 3 negative duration
      "0,a,1,10,1\n"                                     // 4 missing field
      "0,,1,10,1,batch\n"                                // 5 no tenant
      "0,a,two,10,1,batch\n"                             // 6 bad gpus
      "0,a,1,10,0,batch\n"                               // 7 zero pods
      "0,a,1,10,1,cron\n"                                // 8 bad type
      "-1,a,1,10,1,batch\n"                              // 9 negative submit
      "0,a,1,ten,1,batch\n");                            // 10 bad duration
  auto t = ReadAllotTrace(in, "t.csv");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->jobs.size(), 1u);
  ASSERT_EQ(t->issues.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(t->issues[i].line, int64_t(i) + 3);
  EXPECT_NE(t->issues[0].message.find("negative duration"), std::string::npos);
  EXPECT_NE(t->issues[1].message.find("expected 6 fields, got 5"), std::string::npos);
}

TEST(AllotTraceTest, MissingRequiredColumn) {
  std::istringstream in("submit,tenant,duration\n0,a,1\n");
  auto t = ReadAllotTrace(in, "t.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("missing column \"gpus_per_pod\""),
            std::string::npos);
}

TEST(SyntheticTraceTest, DeterministicInSeed) {
  Trace a = SyntheticTrace(500, 7, 800, 4);
  Trace b = SyntheticTrace(500, 7, 800, 4);
  Trace c = SyntheticTrace(500, 8, 800, 4);
  ASSERT_EQ(a.jobs.size(), 500u);
  bool same = true, differ = false;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    same = same && a.jobs[i].submit_ms == b.jobs[i].submit_ms &&
           a.jobs[i].duration_ms == b.jobs[i].duration_ms &&
           a.jobs[i].tenant == b.jobs[i].tenant && a.jobs[i].gpus == b.jobs[i].gpus;
    differ = differ || a.jobs[i].duration_ms != c.jobs[i].duration_ms;
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differ);
  EXPECT_EQ(a.jobs[0].submit_ms, 0);
}

TEST(DurationTest, Units) {
  EXPECT_EQ(*ParseDurationMs("90"), 90000);
  EXPECT_EQ(*ParseDurationMs("1.5h"), 5400000);
  EXPECT_EQ(*ParseDurationMs("30m"), 1800000);
  EXPECT_EQ(*ParseDurationMs("2d"), 172800000);
  EXPECT_EQ(*ParseDurationMs("250ms"), 250);
  EXPECT_FALSE(ParseDurationMs("-1").ok());
  EXPECT_FALSE(ParseDurationMs("soon").ok());
}

}  // namespace
}  // namespace allot::sim
