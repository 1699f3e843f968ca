// Tests of reading pod logs back (TailFile, ReadLog) and of the simulated
// executor: no real processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "agent/exec.h"
#include "agent/test_util.h"

namespace allot::agent {
namespace {

using std::chrono::milliseconds;
using testing::WaitFor;

TEST(TailFileTest, LastLinesWithinLimits) {
  char tmpl[] = "/tmp/allot_tail_test.XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string path = tmpl;
  auto put = [&](const std::string& text) { std::ofstream(path) << text; };
  put("");
  EXPECT_EQ(TailFile(path), "");
  put("a\nb\nc\n");
  EXPECT_EQ(TailFile(path), "a\nb\nc");
  EXPECT_EQ(TailFile(path, 2), "b\nc");
  put("a\nb\nc");  // No final newline.
  EXPECT_EQ(TailFile(path, 2), "b\nc");
  put("first line\nsecond\n");
  EXPECT_EQ(TailFile(path, 20, 10), "second");  // Partial line dropped.
  put("0123456789abcdef");
  EXPECT_EQ(TailFile(path, 20, 4), "cdef");  // One long line: its tail.
  std::string many;
  for (int i = 0; i < 100; ++i) many += "l" + std::to_string(i) + "\n";
  put(many);
  std::string last20;
  for (int i = 80; i < 100; ++i) {
    last20 += "l" + std::to_string(i) + (i < 99 ? "\n" : "");
  }
  EXPECT_EQ(TailFile(path), last20);
  put("ok \xff\n");  // It goes into JSON: valid UTF-8 only.
  EXPECT_EQ(TailFile(path), "ok ?");
  unlink(path.c_str());
  EXPECT_EQ(TailFile(path), "");  // Missing file.
}

TEST(SimulatedExecTest, RunsForItsDurationAndStops) {
  std::unique_ptr<Executor> exec = NewSimulatedExecutor();
  PodSpec quick;
  quick.id = "quick";
  quick.command = {"train.py"};
  PodSpec slow = quick;
  slow.id = "slow";
  slow.simulated_runtime = milliseconds(3600 * 1000);
  PodSpec soon = quick;
  soon.id = "soon";
  soon.simulated_runtime = milliseconds(20);
  for (const PodSpec* s : {&quick, &slow, &soon}) {
    Result<int> r = exec->Start(*s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, 0);
  }
  EXPECT_FALSE(exec->Start(quick).ok());  // Id in use until polled.
  // Nothing runs, so no command is needed (load tests submit none).
  PodSpec empty = quick;
  empty.id = "empty";
  empty.command.clear();
  EXPECT_TRUE(exec->Start(empty).ok());
  PodSpec no_id = quick;
  no_id.id.clear();
  EXPECT_EQ(exec->Start(no_id).status().code(), StatusCode::kInvalidArgument);

  std::map<std::string, PodExit> exits;
  ASSERT_TRUE(WaitFor([&] {
    for (PodExit& e : exec->Poll()) exits[e.id] = std::move(e);
    return exits.size() == 3;
  }));
  EXPECT_EQ(exits["empty"].exit_code, 0);
  EXPECT_EQ(exits["quick"].exit_code, 0);
  EXPECT_EQ(exits["soon"].exit_code, 0);
  EXPECT_FALSE(exits["soon"].stopped);
  EXPECT_EQ(exec->Running(), std::vector<std::string>{"slow"});

  exec->Stop("slow", milliseconds(1000));
  exec->Stop("nope", milliseconds(0));
  std::vector<PodExit> stopped = exec->Poll();
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].id, "slow");
  EXPECT_TRUE(stopped[0].stopped);
  EXPECT_EQ(stopped[0].exit_code, 143);
  EXPECT_EQ(stopped[0].signal, SIGTERM);
  EXPECT_TRUE(exec->Running().empty());

  ASSERT_TRUE(exec->Start(slow).ok());
  exec->StopAll(milliseconds(0));
  std::vector<PodExit> all = exec->Poll();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].stopped);
}

TEST(ReadLogTest, TailOffsetsRotationAndUtf8) {
  char tmpl[] = "/tmp/allot_readlog_test.XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string path = tmpl;
  auto put = [](const std::string& p, const std::string& text) { std::ofstream(p) << text; };
  put(path, "0123456789");
  LogChunk c = ReadLog(path, -1, 4);  // The tail.
  EXPECT_TRUE(c.exists);
  EXPECT_EQ(c.data, "6789");
  EXPECT_EQ(c.offset, 6);
  EXPECT_EQ(c.next_offset, 10);
  c = ReadLog(path, 2, 3);
  EXPECT_EQ(c.data, "234");
  EXPECT_EQ(c.next_offset, 5);
  c = ReadLog(path, 10, 100);  // At the end: nothing yet.
  EXPECT_EQ(c.data, "");
  EXPECT_EQ(c.next_offset, 10);

  // Rotated since: the rest of path.1, then the new file from 0.
  put(path + ".1", "0123456789ab");
  put(path, "new");
  c = ReadLog(path, 11, 100);
  EXPECT_EQ(c.data, "b");
  EXPECT_EQ(c.next_offset, 0);
  c = ReadLog(path, c.next_offset, 100);
  EXPECT_EQ(c.data, "new");

  // UTF-8: a character cut by the limit waits for the next read; invalid
  // bytes become '?'.
  put(path, "a\xc3\xa9z\xff\xc3(");
  c = ReadLog(path, 0, 2);
  EXPECT_EQ(c.data, "a");
  EXPECT_EQ(c.next_offset, 1);
  c = ReadLog(path, 1, 100);
  EXPECT_EQ(c.data, "\xc3\xa9z?" "?(");
  EXPECT_EQ(c.next_offset, 7);
  put(path, "\xed\xa0\x80");  // A surrogate: not UTF-8.
  EXPECT_EQ(ReadLog(path, 0, 100).data, "???");

  unlink(path.c_str());
  unlink((path + ".1").c_str());
  EXPECT_FALSE(ReadLog(path, 0, 100).exists);
}

}  // namespace
}  // namespace allot::agent
