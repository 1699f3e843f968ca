// Tests of the executors with real processes (sh, sleep). No timing
// assertions: waits use generous deadlines and only fail when one passes.
#include "agent/exec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "agent/test_util.h"

namespace allot::agent {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using testing::Alive;
using testing::Exists;
using testing::kDeadline;
using testing::ReadAll;
using testing::WaitFor;

// "key=123" lines of `text` → pids.
std::vector<int> PidsTagged(const std::string& text, const std::string& key) {
  std::vector<int> pids;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) {
      pids.push_back(std::atoi(line.c_str() + key.size() + 1));
    }
  }
  return pids;
}

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/allot_exec_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    exec_ = NewProcessExecutor();
  }
  void TearDown() override {
    exec_.reset();
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  PodSpec Sh(const std::string& id, const std::string& script) {
    PodSpec spec;
    spec.id = id;
    spec.command = {"sh", "-c", script};
    spec.log_path = dir_ + "/logs/" + id + ".log";
    return spec;
  }

  // Polls until pod `id` has exited; the exits of other pods are kept.
  PodExit WaitExit(const std::string& id) { return testing::WaitExit(*exec_, &exits_, id); }

  std::string dir_;
  std::unique_ptr<Executor> exec_;
  std::map<std::string, PodExit> exits_;
};

TEST_F(ExecTest, ChildSeesEnvWorkingDirAndNoAgentEnv) {
  // The pod gets PATH/HOME/LANG plus its env, nothing else of ours.
  setenv("ALLOT_EXEC_TEST_LEAK", "leaked", 1);
  ASSERT_EQ(mkdir((dir_ + "/wd").c_str(), 0755), 0);
  PodSpec spec = Sh("env",
                    "echo foo=$FOO; pwd; echo leak=$ALLOT_EXEC_TEST_LEAK;"
                    " echo lang=$LANG; echo err >&2");
  spec.env = {{"FOO", "bar baz"}, {"LANG", "C"}};
  spec.working_dir = dir_ + "/wd";
  Result<int> pid = exec_->Start(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_GT(*pid, 0);
  PodExit e = WaitExit("env");
  unsetenv("ALLOT_EXEC_TEST_LEAK");
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_FALSE(e.stopped);
  std::string want = "foo=bar baz\n" + dir_ + "/wd\nleak=\nlang=C\nerr\n";
  EXPECT_EQ(ReadAll(spec.log_path), want);
  EXPECT_EQ(e.last_lines, want.substr(0, want.size() - 1));

  // No working_dir: the log's directory. Args follow the command.
  PodSpec dflt = Sh("dflt", "pwd; echo \"$0 $1\"");
  dflt.args = {"a0", "a1"};
  ASSERT_TRUE(exec_->Start(dflt).ok());
  EXPECT_EQ(WaitExit("dflt").exit_code, 0);
  EXPECT_EQ(ReadAll(dflt.log_path), dir_ + "/logs\na0 a1\n");
}

TEST_F(ExecTest, ExitCodes) {
  struct Case {
    const char* id;
    const char* script;
    int exit_code;
    int signal;
  };
  const Case cases[] = {
      {"zero", "echo ok", 0, 0},
      {"three", "echo failing; exit 3", 3, 0},
      {"killed", "kill -KILL $$", 137, 9},
      {"segv", "kill -SEGV $$", 139, 11},
  };
  for (const Case& c : cases)
    ASSERT_TRUE(exec_->Start(Sh(c.id, c.script)).ok());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    PodExit e = WaitExit(c.id);
    EXPECT_EQ(e.exit_code, c.exit_code);
    EXPECT_EQ(e.signal, c.signal);
    EXPECT_FALSE(e.stopped);
  }
  EXPECT_EQ(exits_["three"].last_lines, "failing");
  EXPECT_TRUE(exec_->Running().empty());
}

TEST_F(ExecTest, StartErrorsLeaveNothingRunning) {
  std::string script = dir_ + "/not-exec.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  std::string no_shebang = dir_ + "/no-shebang";
  std::ofstream(no_shebang) << "\x7f"
                               "ELF garbage\n";
  ASSERT_EQ(chmod(no_shebang.c_str(), 0755), 0);
  struct Case {
    const char* name;
    PodSpec spec;
    StatusCode code;
    const char* in_message;
  };
  PodSpec not_found = Sh("nf", "");
  not_found.command = {"allot-no-such-command"};
  PodSpec not_exec = Sh("ne", "");
  not_exec.command = {script};
  PodSpec bad_format = Sh("bf", "");
  bad_format.command = {no_shebang};
  PodSpec dir_cmd = Sh("dc", "");
  dir_cmd.command = {dir_};
  PodSpec bad_wd = Sh("wd", "true");
  bad_wd.working_dir = dir_ + "/missing";
  PodSpec empty = Sh("empty", "");
  empty.command.clear();
  PodSpec no_id = Sh("", "true");
  PodSpec bad_env = Sh("be", "true");
  bad_env.env = {{"A=B", "c"}};
  PodSpec bad_log = Sh("bl", "true");
  bad_log.log_path = script + "/x.log";  // A file as a directory.
  const Case cases[] = {
      {"not found", not_found, StatusCode::kFailedPrecondition,
       "\"allot-no-such-command\" not found in PATH"},
      {"not executable", not_exec, StatusCode::kFailedPrecondition,
       "not an executable file"},
      {"exec format", bad_format, StatusCode::kFailedPrecondition,
       "Exec format error"},
      {"directory", dir_cmd, StatusCode::kFailedPrecondition,
       "not an executable file"},
      {"working dir", bad_wd, StatusCode::kFailedPrecondition,
       "does not exist"},
      {"empty command", empty, StatusCode::kInvalidArgument, "no command"},
      {"empty id", no_id, StatusCode::kInvalidArgument, "id is empty"},
      {"env name", bad_env, StatusCode::kInvalidArgument, "\"A=B\""},
      {"log", bad_log, StatusCode::kFailedPrecondition, "cannot"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<int> r = exec_->Start(c.spec);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_NE(r.status().message().find(c.in_message), std::string::npos)
        << r.status().message();
  }
  EXPECT_TRUE(exec_->Running().empty());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_TRUE(exec_->Poll().empty());

  // An id in use is refused while the pod runs and until Poll returned it.
  ASSERT_TRUE(exec_->Start(Sh("dup", "true")).ok());
  Result<int> again = exec_->Start(Sh("dup", "true"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
  WaitExit("dup");
  EXPECT_TRUE(exec_->Start(Sh("dup", "true")).ok());
  WaitExit("dup");
}

TEST_F(ExecTest, StopEndsAPodThatHonoursSigterm) {
  PodSpec spec = Sh("term", "echo started; exec sleep 1000");
  ASSERT_TRUE(exec_->Start(spec).ok());
  ASSERT_TRUE(WaitFor([&] { return ReadAll(spec.log_path) == "started\n"; }));
  EXPECT_EQ(exec_->Running(), std::vector<std::string>{"term"});
  // A long grace: it must end through SIGTERM, not wait for the SIGKILL.
  exec_->Stop("term", milliseconds(60000));
  exec_->Stop("unknown-pod", milliseconds(0));  // Ignored.
  PodExit e = WaitExit("term");
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.signal, SIGTERM);
  EXPECT_EQ(e.exit_code, 143);
  EXPECT_EQ(e.last_lines, "started");
  EXPECT_TRUE(exec_->Running().empty());
}

TEST_F(ExecTest, StopKillsAGroupThatIgnoresSigterm) {
  // The leader and its background children ignore SIGTERM (an ignored
  // signal stays ignored across fork and exec): only SIGKILL after the
  // grace ends them, and none of them survives.
  PodSpec spec = Sh("stubborn",
                    "trap '' TERM; sleep 1000 & echo child=$!;"
                    " sleep 1000 >/dev/null 2>&1 & echo child=$!;"
                    " echo leader=$$; wait");
  ASSERT_TRUE(exec_->Start(spec).ok());
  std::vector<int> pids;
  ASSERT_TRUE(WaitFor([&] {
    pids = PidsTagged(ReadAll(spec.log_path), "child");
    return pids.size() == 2;
  }));
  exec_->Stop("stubborn", milliseconds(200));
  PodExit e = WaitExit("stubborn");
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_EQ(e.exit_code, 137);
  for (int pid : pids) {
    EXPECT_TRUE(WaitFor([&] { return !Alive(pid); })) << "orphan " << pid;
  }
}

TEST_F(ExecTest, ChildrenLeftBehindByAnExitedLeaderAreKilled) {
  // One child keeps the pipe open, one does not; the leader exits 0 at
  // once. The pod ends (after a short linger for the pipe) and takes both
  // children with it.
  PodSpec spec = Sh("leaver",
                    "sleep 1000 & echo child=$!;"
                    " sleep 1000 >/dev/null 2>&1 & echo child=$!; echo bye");
  ASSERT_TRUE(exec_->Start(spec).ok());
  PodExit e = WaitExit("leaver");
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_FALSE(e.stopped);
  std::vector<int> pids = PidsTagged(ReadAll(spec.log_path), "child");
  ASSERT_EQ(pids.size(), 2u);
  for (int pid : pids) {
    EXPECT_TRUE(WaitFor([&] { return !Alive(pid); })) << "orphan " << pid;
  }
}

TEST_F(ExecTest, LogRotatesAtTheLimit) {
  // 100 lines of 16 bytes = 1600 bytes through a 500-byte limit, 2 kept:
  // log.2 and log.1 are full, log has the rest, older output is dropped.
  PodSpec spec = Sh("rot",
                    "i=100; while [ $i -lt 200 ]; do"
                    " echo \"line-$i-abcdef\"; i=$((i+1)); done");
  spec.log_max_bytes = 500;
  spec.log_keep = 2;
  std::string all;
  for (int i = 100; i < 200; ++i)
    all += "line-" + std::to_string(i) + "-abcdef\n";
  ASSERT_EQ(all.size(), 1600u);
  ASSERT_TRUE(exec_->Start(spec).ok());
  PodExit e = WaitExit("rot");
  EXPECT_EQ(e.exit_code, 0);
  std::string log = ReadAll(spec.log_path);
  std::string log1 = ReadAll(spec.log_path + ".1");
  std::string log2 = ReadAll(spec.log_path + ".2");
  EXPECT_FALSE(Exists(spec.log_path + ".3"));
  EXPECT_EQ(log2.size(), 500u);
  EXPECT_EQ(log1.size(), 500u);
  EXPECT_EQ(log.size(), 100u);
  EXPECT_EQ(log2 + log1 + log, all.substr(500));
  EXPECT_EQ(e.last_lines, log.substr(0, log.size() - 1));
}

TEST_F(ExecTest, ManyPodsAtOnce) {
  constexpr int kPods = 50;
  for (int i = 0; i < kPods; ++i) {
    std::string id = "many-" + std::to_string(i);
    ASSERT_TRUE(exec_
                    ->Start(Sh(id, "echo hello " + id + "; exit " +
                                       std::to_string(i % 5)))
                    .ok());
  }
  ASSERT_TRUE(WaitFor([&] {
    for (PodExit& e : exec_->Poll()) exits_[e.id] = std::move(e);
    return exits_.size() == kPods;
  }));
  for (int i = 0; i < kPods; ++i) {
    std::string id = "many-" + std::to_string(i);
    SCOPED_TRACE(id);
    EXPECT_EQ(exits_[id].exit_code, i % 5);
    EXPECT_EQ(exits_[id].last_lines, "hello " + id);
  }
  EXPECT_TRUE(exec_->Running().empty());
}

TEST_F(ExecTest, StopAllWaitsForEveryPod) {
  std::vector<std::string> logs;
  for (int i = 0; i < 5; ++i) {
    std::string id = "all-" + std::to_string(i);
    // Pod 0 ignores SIGTERM and needs the SIGKILL.
    PodSpec spec = Sh(id, std::string(i == 0 ? "trap '' TERM; " : "") +
                              "echo up; sleep 1000 & wait");
    ASSERT_TRUE(exec_->Start(spec).ok());
    logs.push_back(spec.log_path);
  }
  for (const std::string& log : logs) {
    ASSERT_TRUE(WaitFor([&] { return ReadAll(log) == "up\n"; }));
  }
  exec_->StopAll(milliseconds(200));
  EXPECT_EQ(exec_->Running().size(), 5u);  // Ended, not yet polled.
  std::vector<PodExit> exits = exec_->Poll();
  ASSERT_EQ(exits.size(), 5u);
  for (const PodExit& e : exits) {
    EXPECT_TRUE(e.stopped) << e.id;
    EXPECT_EQ(e.exit_code, e.id == "all-0" ? 137 : 143) << e.id;
  }
  EXPECT_TRUE(exec_->Running().empty());
}

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
