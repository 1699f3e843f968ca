// The container runtime with real runc, skopeo and umoci (make deps
// installs them) on an image built here from busybox-static: no registry,
// no network. Skipped, saying why, where the host cannot run containers
// (not root, a tool missing).
#include "agent/container.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "agent/container_net.h"
#include "agent/test_util.h"
#include "testing/oci_image.h"
#include "testing/process.h"

namespace allot::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::Alive;
using testing::ReadAll;
using testing::WaitFor;

constexpr uint32_t kUsernsBase = 1u << 20;



int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }

class ContainerTest : public ::testing::Test {
 protected:
  // The image oci:DIR/oci:tiny (testing/oci_image.h).
  static void SetUpTestSuite() {
    skip_ = allot::testing::ContainersUnavailable();
    if (!skip_.empty()) return;
    char tmpl[] = "/tmp/allot_container_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    image_dir_ = tmpl;
    ASSERT_TRUE(allot::testing::BuildTinyImage(image_dir_));
  }
  static void TearDownTestSuite() {
    if (!image_dir_.empty()) Sh("rm -rf '" + image_dir_ + "'");
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    char tmpl[] = "/tmp/allot_container_pods.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // Container root (an unprivileged host id) must reach the image roots.
    ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
    ContainerOptions o;
    o.state_dir = dir_ + "/state";
    o.self_exe = std::getenv("ALLOT_BIN");
    o.userns_base = kUsernsBase;
    o.private_network = true;
    exec_ = NewContainerExecutor(o, NewProcessExecutor());
  }
  void TearDown() override {
    exec_.reset();
    if (!dir_.empty()) Sh("rm -rf '" + dir_ + "'");
  }

  PodSpec Pod(const std::string& id, const std::string& script = "") {
    PodSpec spec;
    spec.id = id;
    spec.tenant = id.substr(0, id.find('/'));
    spec.image = "oci:" + image_dir_ + "/oci:tiny";
    if (!script.empty()) spec.command = {"sh", "-c", script};
    spec.log_path = dir_ + "/logs/" + id + ".log";
    return spec;
  }
  PodExit WaitExit(const std::string& id) { return testing::WaitExit(*exec_, &exits_, id); }
  // The host pid of the container's first process (runc's state).
  int ContainerPid(const std::string& id) {
    std::string flat = id;
    for (char& c : flat) c = c == '/' ? '_' : c;
    const std::string out = dir_ + "/state.json";
    if (Sh("runc --root " + dir_ + "/state/runc state " + flat + " > " + out + " 2>/dev/null") != 0) {
      return -1;
    }
    boost::system::error_code ec;
    auto v = boost::json::parse(ReadAll(out), ec);
    return ec ? -1 : static_cast<int>(v.at("pid").as_int64());
  }

  static inline std::string skip_;
  static inline std::string image_dir_;
  std::string dir_;
  std::unique_ptr<Executor> exec_;
  std::map<std::string, PodExit> exits_;
};

TEST_F(ContainerTest, RunsTheImagesCommandThenOursWithItsEnvAndExitCode) {
  PodSpec first = Pod("team-a/first");
  ASSERT_TRUE(exec_->Start(first).ok());
  PodExit e = WaitExit("team-a/first");
  EXPECT_EQ(e.exit_code, 0) << ReadAll(first.log_path);
  const std::string log = ReadAll(first.log_path);
  EXPECT_NE(log.find("allot: pulling image oci:"), std::string::npos) << log;
  EXPECT_NE(log.find("hello from tiny\n"), std::string::npos) << log;

  // Our command, the image's env under ours, a read-only root, a private
  // /tmp, and a user namespace: root inside is kUsernsBase outside.
  PodSpec second = Pod("team-a/second",
                       "echo foo=$FOO image=$FROM_IMAGE; id -u; cat /proc/self/uid_map;"
                       " touch /x 2>/dev/null || echo read-only root;"
                       " touch /tmp/y && echo tmp ok; exit 3");
  second.env = {{"FOO", "bar"}};
  ASSERT_TRUE(exec_->Start(second).ok());
  e = WaitExit("team-a/second");
  EXPECT_EQ(e.exit_code, 3);
  const std::string log2 = ReadAll(second.log_path);
  EXPECT_EQ(log2.find("allot: pulling"), std::string::npos) << "pulled once: " << log2;
  EXPECT_NE(log2.find("foo=bar image=yes\n0\n"), std::string::npos) << log2;
  EXPECT_TRUE(std::regex_search(
      log2, std::regex("\\n\\s*0\\s+" + std::to_string(kUsernsBase) + "\\s+65536\\n")))
      << log2;
  EXPECT_NE(log2.find("read-only root\ntmp ok\n"), std::string::npos) << log2;
  EXPECT_EQ(e.last_lines.substr(e.last_lines.rfind('\n') + 1), "tmp ok");
}

TEST_F(ContainerTest, TenantsAreNotRootOnTheHostAndStopEndsThem) {
  PodSpec a = Pod("team-a/sleeper", "trap 'echo got TERM; exit 7' TERM; echo up; while true; do sleep 0.1; done");
  PodSpec b = Pod("team-b/sleeper", "echo up; exec sleep 1000");
  ASSERT_TRUE(exec_->Start(a).ok());
  ASSERT_TRUE(exec_->Start(b).ok());
  int pa = -1, pb = -1;
  ASSERT_TRUE(WaitFor([&] {
    return ReadAll(a.log_path).find("up\n") != std::string::npos &&
           ReadAll(b.log_path).find("up\n") != std::string::npos;
  })) << ReadAll(a.log_path) << ReadAll(b.log_path);
  pa = ContainerPid("team-a/sleeper");
  pb = ContainerPid("team-b/sleeper");
  ASSERT_GT(pa, 0);
  ASSERT_GT(pb, 0);
  // Seen from the host: each tenant's own range, never root.
  auto uid = [](int pid) {
    std::string s = ReadAll("/proc/" + std::to_string(pid) + "/status");
    size_t at = s.find("\nUid:\t");
    return at == std::string::npos ? -1L : std::atol(s.c_str() + at + 6);
  };
  const long ua = uid(pa), ub = uid(pb);
  EXPECT_GE(ua, static_cast<long>(kUsernsBase));
  EXPECT_GE(ub, static_cast<long>(kUsernsBase));
  EXPECT_EQ(std::labs(ua - ub), 65536) << "one range per tenant";
  // What the pod runs (its env included) is for root's eyes only.
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/state/pods/team-b_sleeper/pod.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);

  // SIGTERM reaches the container through runc; the one that ignores it
  // is killed at the end of its grace, and nothing of it is left.
  exec_->Stop("team-a/sleeper", milliseconds(60000));
  PodExit ea = WaitExit("team-a/sleeper");
  EXPECT_TRUE(ea.stopped);
  EXPECT_EQ(ea.exit_code, 7);
  EXPECT_NE(ReadAll(a.log_path).find("got TERM"), std::string::npos);
  PodSpec c = Pod("team-b/stubborn", "trap '' TERM; echo up; while true; do sleep 0.1; done");
  ASSERT_TRUE(exec_->Start(c).ok());
  ASSERT_TRUE(WaitFor([&] { return ReadAll(c.log_path).find("up\n") != std::string::npos; }));
  const int pc = ContainerPid("team-b/stubborn");
  ASSERT_GT(pc, 0);
  exec_->Stop("team-b/stubborn", milliseconds(300));
  PodExit ec = WaitExit("team-b/stubborn");
  EXPECT_TRUE(ec.stopped);
  EXPECT_EQ(ec.exit_code, 137);
  EXPECT_EQ(ec.signal, SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return !Alive(pc); })) << "container " << pc << " survived";
  exec_->StopAll(milliseconds(0));
  for (const PodExit& e : exec_->Poll()) exits_[e.id] = e;
  EXPECT_TRUE(WaitFor([&] { return !Alive(pb); }));
  EXPECT_TRUE(exec_->Running().empty());
  EXPECT_EQ(Sh("test -z \"$(ls " + dir_ + "/state/pods)\""), 0) << "bundles left behind";
}

// An agent killed with -9 leaves runc's record of each container and the
// pods' bundles (its next run kills the processes, node.cc): the next
// executor on the same state starts the server's pods again under their
// same ids, clearing what was left of each.
TEST_F(ContainerTest, ARestartedAgentRunsThePodsAnEarlierRunLeft) {
  PodSpec gone = Pod("team-a/gone", "echo up; exec sleep 1000");
  PodSpec a = Pod("team-a/kept", "echo up; exec sleep 1000");
  Result<int> gone_pid = exec_->Start(gone);
  ASSERT_TRUE(gone_pid.ok());
  Result<int> pid = exec_->Start(a);
  ASSERT_TRUE(pid.ok());
  ASSERT_TRUE(WaitFor([&] { return ReadAll(gone.log_path).find("up\n") != std::string::npos; }));
  ASSERT_TRUE(WaitFor([&] { return ReadAll(a.log_path).find("up\n") != std::string::npos; }));
  const int container = ContainerPid("team-a/kept");
  ASSERT_GT(container, 0);
  // The crash: the pod's process (runc run) and the container die, as
  // KillLeftovers does; the executor is dropped without a word.
  kill(*pid, SIGKILL);
  kill(container, SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return !Alive(container) && !Alive(*pid); }));
  const int gone_container = ContainerPid("team-a/gone");
  ASSERT_GT(gone_container, 0);
  kill(*gone_pid, SIGKILL);  // Its container is left running, as if missed.
  ASSERT_TRUE(WaitFor([&] { return !Alive(*gone_pid); }));
  exec_.reset();  // Its destructor cleans nothing of the pods, as a crash.
  ContainerOptions o;
  o.state_dir = dir_ + "/state";
  o.self_exe = std::getenv("ALLOT_BIN");
  o.userns_base = kUsernsBase;
  o.private_network = true;
  ASSERT_TRUE(fs::exists(dir_ + "/state/runc/team-a_kept")) << "the crash left nothing?";
  ASSERT_TRUE(fs::exists(dir_ + "/state/pods/team-a_gone"));
  exec_ = NewContainerExecutor(o, NewProcessExecutor());
  // What the server no longer wants is gone: its bundle (its environment,
  // Secrets' values included, is in pod.json), runc's record and the
  // container itself.
  EXPECT_FALSE(fs::exists(dir_ + "/state/pods/team-a_gone"));
  EXPECT_FALSE(fs::exists(dir_ + "/state/runc/team-a_gone"));
  EXPECT_TRUE(WaitFor([&] { return !Alive(gone_container); }));
  PodSpec again = Pod("team-a/kept", "echo again");
  again.log_path = dir_ + "/logs/kept-again.log";
  ASSERT_TRUE(exec_->Start(again).ok());
  EXPECT_EQ(WaitExit("team-a/kept").exit_code, 0) << ReadAll(again.log_path);
  EXPECT_NE(ReadAll(again.log_path).find("again\n"), std::string::npos) << ReadAll(again.log_path);
}

TEST_F(ContainerTest, MissingImagesAndPodsWithoutOneAreClearErrors) {
  PodSpec never = Pod("team-a/never", "true");
  never.image = "oci:" + dir_ + "/nowhere:tiny";
  never.image_pull_policy = "Never";
  ASSERT_TRUE(exec_->Start(never).ok());
  PodExit e = WaitExit("team-a/never");
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_NE(e.last_lines.find("is not on this node and its imagePullPolicy is Never"),
            std::string::npos)
      << e.last_lines;
  PodSpec gone = Pod("team-a/gone", "true");
  gone.image = "oci:" + dir_ + "/nowhere:tiny";
  ASSERT_TRUE(exec_->Start(gone).ok());
  e = WaitExit("team-a/gone");
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_NE(e.last_lines.find("cannot pull image oci:"), std::string::npos) << e.last_lines;

  // A command the image does not have: 127 and why, as a shell says it
  // (the process runtime's exit), by name on PATH or by path.
  for (const char* cmd : {"no-such-tool", "/bin/no-such-tool"}) {
    PodSpec missing = Pod(std::string("team-a/missing-") + (cmd[0] == '/' ? "path" : "name"));
    missing.command = {cmd, "--flag"};
    ASSERT_TRUE(exec_->Start(missing).ok());
    e = WaitExit(missing.id);
    EXPECT_EQ(e.exit_code, 127) << cmd << ": " << e.last_lines;
    EXPECT_NE(e.last_lines.find(std::string("executable file not found: ") + cmd),
              std::string::npos)
        << e.last_lines;
  }

  PodSpec bare = Pod("team-a/bare", "true");
  bare.image.clear();
  Result<int> r = exec_->Start(bare);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("has no image"), std::string::npos);
}

// A free TCP port on 127.0.0.1 (bound, read, released).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

bool Listening(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

// A real registry (Debian's docker-registry) on loopback: the image is
// pushed there with skopeo and pulled by the pod over HTTP (loopback
// registries need no TLS); a tag that is not there fails the pod with
// exit 125 and the registry's answer in its log; Always pulls again.
TEST_F(ContainerTest, PullsFromARegistryOnLoopback) {
  if (!std::filesystem::exists("/usr/bin/docker-registry")) GTEST_SKIP() << "docker-registry is not installed (make deps)";
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string reg = dir_ + "/registry";
  std::filesystem::create_directories(reg + "/data");
  std::ofstream(reg + "/config.yml") << "version: 0.1\nlog: {level: error}\n"
                                        "storage: {filesystem: {rootdirectory: " << reg
                                     << "/data}}\nhttp: {addr: 127.0.0.1:" << port << "}\n";
  allot::testing::ChildProcess registry;
  ASSERT_TRUE(registry.Spawn({"/usr/bin/docker-registry", "serve", reg + "/config.yml"}, reg + "/out",
                             /*append=*/false));
  ASSERT_TRUE(WaitFor([&] { return Listening(port); })) << ReadAll(reg + "/out");
  const std::string ref = "127.0.0.1:" + std::to_string(port) + "/tiny:1";
  ASSERT_EQ(Sh("skopeo copy --quiet --dest-tls-verify=false oci:" + image_dir_ +
               "/oci:tiny docker://" + ref + " > " + reg + "/push 2>&1"),
            0)
      << ReadAll(reg + "/push");

  PodSpec pod = Pod("team-a/pulled");
  pod.image = ref;
  ASSERT_TRUE(exec_->Start(pod).ok());
  PodExit e = WaitExit("team-a/pulled");
  EXPECT_EQ(e.exit_code, 0) << ReadAll(pod.log_path);
  // Its size, from the registry's manifest: the pull's progress counts
  // against it.
  std::smatch size;
  const std::string pulled_log = ReadAll(pod.log_path);
  ASSERT_TRUE(std::regex_search(pulled_log, size,
                                std::regex("allot: pulling image " + std::regex_replace(
                                               ref, std::regex("[.]"), "\\.") +
                                           " \\(docker://[^,]+, (\\d+) bytes\\)")))
      << pulled_log;
  EXPECT_GT(std::stoll(size[1]), 1000) << "busybox-static's layer at least";
  EXPECT_NE(ReadAll(pod.log_path).find("hello from tiny\n"), std::string::npos);

  PodSpec missing = Pod("team-a/missing", "true");
  missing.image = "127.0.0.1:" + std::to_string(port) + "/tiny:2";
  ASSERT_TRUE(exec_->Start(missing).ok());
  e = WaitExit("team-a/missing");
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_NE(e.last_lines.find("manifest unknown"), std::string::npos) << e.last_lines;
  EXPECT_NE(e.last_lines.find("allot: cannot pull image " + missing.image), std::string::npos)
      << e.last_lines;
  // The reason reported with the exit says why, in a word.
  EXPECT_EQ(e.reason, "ErrImagePull: cannot pull image " + missing.image +
                          ": not found (no such image or tag in its registry)");

  // Always pulls even when the image is here (IfNotPresent would not).
  PodSpec again = Pod("team-a/again", "true");
  again.image = ref;
  again.image_pull_policy = "Always";
  ASSERT_TRUE(exec_->Start(again).ok());
  EXPECT_EQ(WaitExit("team-a/again").exit_code, 0);
  EXPECT_NE(ReadAll(again.log_path).find("allot: pulled image " + ref), std::string::npos)
      << ReadAll(again.log_path);
  registry.Kill9();
}

// Volumes: scratch on disk and in memory, a Secret's keys as read-only
// files, a tenant's persistent volume kept across its pods and out of
// another tenant's reach; runAsUser; runAsNonRoot refused for a root
// image; a writable root as an overlay that leaves the shared image as it
// was.
TEST_F(ContainerTest, VolumesSecretFilesAndTheSecurityContext) {
  auto vol = [](const std::string& name, core::Volume::Type type) {
    core::Volume v;
    v.name = name;
    v.type = type;
    return v;
  };
  PodSpec a = Pod("team-a/vols",
                  "id -u; echo s > /scratch/f && cat /scratch/f; grep ' /mem ' /proc/mounts;"
                  " cat /creds/token; echo; touch /creds/x 2>/dev/null || echo secret read-only;"
                  " echo kept > /data/f; touch /y 2>/dev/null || echo root read-only;"
                  " unshare -U true 2>/dev/null || echo seccomp denies unshare;"
                  " grep '^Seccomp:' /proc/self/status");
  a.volumes = {vol("scratch", core::Volume::Type::kEmptyDir), vol("mem", core::Volume::Type::kEmptyDir),
               vol("creds", core::Volume::Type::kSecret), vol("data", core::Volume::Type::kClaim)};
  a.volumes[1].medium = "Memory";
  a.volumes[1].size_limit_bytes = 1 << 20;
  a.volumes[2].secret = "hf";
  a.volumes[3].claim = "data";
  a.mounts = {{"scratch", "/scratch", "", false}, {"mem", "/mem", "", false},
              {"creds", "/creds", "", false}, {"data", "/data", "", false}};
  a.files = {{"creds", "token", "hunter2"}};
  a.run_as_user = 1000;
  ASSERT_TRUE(exec_->Start(a).ok());
  PodExit e = WaitExit("team-a/vols");
  const std::string log = ReadAll(a.log_path);
  EXPECT_EQ(e.exit_code, 0) << log;
  EXPECT_NE(log.find("1000\ns\n"), std::string::npos) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex("tmpfs /mem tmpfs \\S*size=1024k"))) << log;
  EXPECT_NE(log.find("hunter2\nsecret read-only\n"), std::string::npos) << log;
  EXPECT_NE(log.find("root read-only\nseccomp denies unshare\nSeccomp:\t2\n"),
            std::string::npos)
      << log;  // 2: a filter.

  // The claim outlives the pod, for the same tenant; the tenant's directory
  // belongs to its user namespace's root, out of other tenants' reach.
  const std::string root = dir_ + "/state/volumes";
  EXPECT_EQ(ReadAll(root + "/team-a/data/f"), "kept\n");
  struct stat st {};
  ASSERT_EQ(stat((root + "/team-a").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUsernsBase);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  PodSpec again = Pod("team-a/again", "cat /data/f");
  again.volumes = {a.volumes[3]};
  again.mounts = {a.mounts[3]};
  ASSERT_TRUE(exec_->Start(again).ok());
  EXPECT_EQ(WaitExit("team-a/again").exit_code, 0);
  EXPECT_NE(ReadAll(again.log_path).find("kept\n"), std::string::npos) << ReadAll(again.log_path);
  PodSpec b = Pod("team-b/other", "ls -A /data | wc -l");
  b.volumes = {a.volumes[3]};
  b.mounts = {a.mounts[3]};
  ASSERT_TRUE(exec_->Start(b).ok());
  EXPECT_EQ(WaitExit("team-b/other").exit_code, 0);
  EXPECT_NE(ReadAll(b.log_path).find("0\n"), std::string::npos) << ReadAll(b.log_path);
  ASSERT_EQ(stat((root + "/team-b").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUsernsBase + 65536);

  // runAsNonRoot with an image that runs as root.
  PodSpec nonroot = Pod("team-a/nonroot", "true");
  nonroot.run_as_non_root = true;
  ASSERT_TRUE(exec_->Start(nonroot).ok());
  e = WaitExit("team-a/nonroot");
  EXPECT_EQ(e.exit_code, 126);
  EXPECT_NE(e.last_lines.find("runAsNonRoot"), std::string::npos) << e.last_lines;

  // readOnlyRootFilesystem: false writes to the pod's own layer.
  PodSpec rw = Pod("team-a/rw", "echo w > /written && cat /written");
  rw.read_only_root = false;
  ASSERT_TRUE(exec_->Start(rw).ok());
  e = WaitExit("team-a/rw");
  EXPECT_EQ(e.exit_code, 0) << ReadAll(rw.log_path);
  EXPECT_NE(ReadAll(rw.log_path).find("w\n"), std::string::npos) << ReadAll(rw.log_path);
  bool in_image = false;
  for (const auto& f : fs::recursive_directory_iterator(dir_ + "/state/images")) {
    in_image |= f.path().filename() == "written";
  }
  EXPECT_FALSE(in_image) << "the shared image root was written to";
}

// A registry that wants a password (htpasswd, bcrypt): the pull fails
// without credentials, saying so, and works with the tenant's.
TEST_F(ContainerTest, PullsWithRegistryCredentials) {
  if (!std::filesystem::exists("/usr/bin/docker-registry") ||
      !std::filesystem::exists("/usr/bin/htpasswd")) {
    GTEST_SKIP() << "docker-registry or htpasswd (apache2-utils) is not installed (make deps)";
  }
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string reg = dir_ + "/registry";
  std::filesystem::create_directories(reg + "/data");
  ASSERT_EQ(Sh("htpasswd -Bbc " + reg + "/htpasswd puller s3cret > /dev/null 2>&1"), 0);
  std::ofstream(reg + "/config.yml")
      << "version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: " << reg
      << "/data}}\nhttp: {addr: 127.0.0.1:" << port << "}\n"
      << "auth: {htpasswd: {realm: allot-test, path: " << reg << "/htpasswd}}\n";
  allot::testing::ChildProcess registry;
  ASSERT_TRUE(registry.Spawn({"/usr/bin/docker-registry", "serve", reg + "/config.yml"},
                             reg + "/out", /*append=*/false));
  ASSERT_TRUE(WaitFor([&] { return Listening(port); })) << ReadAll(reg + "/out");
  const std::string ref = "127.0.0.1:" + std::to_string(port) + "/private:1";
  ASSERT_EQ(Sh("skopeo copy --quiet --dest-tls-verify=false --dest-creds puller:s3cret oci:" +
               image_dir_ + "/oci:tiny docker://" + ref + " > " + reg + "/push 2>&1"),
            0)
      << ReadAll(reg + "/push");

  PodSpec anon = Pod("team-a/anon", "true");
  anon.image = ref;
  ASSERT_TRUE(exec_->Start(anon).ok());
  PodExit e = WaitExit("team-a/anon");
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_NE(e.last_lines.find("authentication required"), std::string::npos) << e.last_lines;
  EXPECT_NE(e.reason.find("the registry refused the credentials"), std::string::npos) << e.reason;

  PodSpec authed = Pod("team-a/authed", "echo in");
  authed.image = ref;
  authed.registry_auth = R"({"auths":{"127.0.0.1:)" + std::to_string(port) +
                         R"(":{"auth":"cHVsbGVyOnMzY3JldA=="}}})";
  ASSERT_TRUE(exec_->Start(authed).ok());
  e = WaitExit("team-a/authed");
  EXPECT_EQ(e.exit_code, 0) << ReadAll(authed.log_path);
  // The credentials file went with the pod.
  EXPECT_FALSE(fs::exists(dir_ + "/state/pods/team-a_authed"));
  registry.Kill9();
}

// --network tenant: the pods of one workload share a namespace (rank 0 on
// 127.0.0.1), a tenant's pods reach each other's addresses, another
// tenant's pods reach neither them nor anything on the host.
TEST_F(ContainerTest, TenantNetworksKeepTenantsApart) {
  ContainerOptions o;
  o.state_dir = dir_ + "/state";
  o.self_exe = std::getenv("ALLOT_BIN");
  o.userns_base = kUsernsBase;
  o.tenant_network = true;
  o.pod_cidr = "10.213.0.0/16";  // Out of the way of this host's networks.
  exec_.reset();
  exec_ = NewContainerExecutor(o, NewProcessExecutor());
  // A host service the pods must not reach (the server's port, say).
  const int host_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  ASSERT_EQ(bind(host_fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  ASSERT_EQ(listen(host_fd, 8), 0);
  socklen_t len = sizeof(any);
  getsockname(host_fd, reinterpret_cast<sockaddr*>(&any), &len);
  const std::string host_port = std::to_string(ntohs(any.sin_port));

  PodSpec server = Pod("team-a/train/a1/main/0",
                       "echo ip=$ALLOT_POD_IP master=$MASTER_ADDR;"
                       " while true; do echo from-rank0 | nc -l -p 7000; done");
  server.env = {{"NNODES", "1"}, {"MASTER_ADDR", "node-1"}};
  ASSERT_TRUE(exec_->Start(server).ok());
  std::smatch m;
  std::string log;  // Outlives the match.
  ASSERT_TRUE(WaitFor([&] {
    log = ReadAll(server.log_path);
    return std::regex_search(log, m, std::regex("ip=(10\\.213\\.\\d+\\.\\d+) master=127.0.0.1"));
  })) << ReadAll(server.log_path);
  const std::string ip = m[1];
  auto run = [&](const std::string& id, const std::string& script) {
    PodSpec p = Pod(id, script);
    EXPECT_TRUE(exec_->Start(p).ok());
    EXPECT_EQ(WaitExit(id).exit_code, 0) << ReadAll(p.log_path);
    return ReadAll(p.log_path);
  };
  // Rank 1 of the same workload: loopback.
  EXPECT_NE(run("team-a/train/a1/main/1", "nc 127.0.0.1 7000").find("from-rank0"),
            std::string::npos);
  // Another workload of team-a: the address.
  EXPECT_NE(run("team-a/eval/a1/main/0", "nc -w 2 " + ip + " 7000").find("from-rank0"),
            std::string::npos);
  // team-b: neither team-a's pod nor the host, by any of its addresses.
  const std::string b = run(
      "team-b/probe/a1/main/0",
      "nc -w 2 " + ip + " 7000 </dev/null 2>/dev/null && echo reached-a || echo a-blocked;"
      " gw=$(ip route 2>/dev/null | awk '/default/ {print $3}'); [ -n \"$gw\" ] || gw=${ALLOT_POD_IP%.*}.1;"
      " nc -w 2 $gw " + host_port + " </dev/null 2>/dev/null && echo reached-host || echo host-blocked;"
      " nc -w 2 " + ip.substr(0, ip.rfind('.')) + ".1 " + host_port +
      " </dev/null 2>/dev/null && echo reached-host-a || echo host-a-blocked");
  EXPECT_NE(b.find("a-blocked\nhost-blocked\nhost-a-blocked\n"), std::string::npos) << b;
  // hostNetwork (the server let the tenant have it): the node's network,
  // its loopback included, on a tenant-network node.
  PodSpec h = Pod("team-b/nccl/a1/main/0",
                  "grep -qi \":$(printf %04X " + host_port +
                      ") \" /proc/net/tcp && echo sees-the-hosts-listener");
  h.host_network = true;
  ASSERT_TRUE(exec_->Start(h).ok());
  EXPECT_EQ(WaitExit(h.id).exit_code, 0) << ReadAll(h.log_path);
  EXPECT_NE(ReadAll(h.log_path).find("sees-the-hosts-listener"), std::string::npos)
      << ReadAll(h.log_path);
  exec_->Stop("team-a/train/a1/main/0", milliseconds(500));
  WaitExit("team-a/train/a1/main/0");
  close(host_fd);
  // The workload's namespace went with its last pod.
  EXPECT_TRUE(WaitFor([] {
    std::error_code ec;
    int left = 0;
    for (const auto& e : fs::directory_iterator("/var/run/netns", ec)) {
      left += e.path().filename().string().rfind(PodNetnsPrefix(""), 0) == 0;
    }
    return left == 0;
  }));
}

// No NVIDIA driver here: character devices made with mknod stand in for
// two GPUs (the zero device's numbers) and the driver's control node, a
// text file for libcuda and a script for nvidia-smi, under a driver root
// of the test's own (--nvidia-driver-root).
TEST_F(ContainerTest, APodGetsOnlyItsOwnGpusNodesAndTheDriversFilesOrWhatCdiSays) {
  const std::string root = dir_ + "/driver";
  fs::create_directories(root + "/dev");
  for (const char* n : {"nvidia0", "nvidia1", "nvidiactl"}) {
    ASSERT_EQ(mknod((root + "/dev/" + n).c_str(), S_IFCHR | 0666, makedev(1, 5)), 0) << n;
  }
  const std::string lib = root + "/usr/lib/x86_64-linux-gnu";
  fs::create_directories(lib);
  fs::create_directories(root + "/usr/bin");
  std::ofstream(lib + "/libcuda.so.550.54.15") << "fake libcuda\n";
  fs::create_symlink("libcuda.so.550.54.15", lib + "/libcuda.so.1");
  std::ofstream(root + "/usr/bin/nvidia-smi") << "#!/bin/sh\necho fake nvidia-smi\n";
  ASSERT_EQ(Sh("chmod -R a+rX '" + root + "' && chmod 755 '" + root + "/usr/bin/nvidia-smi'"), 0);
  ContainerOptions o;
  o.state_dir = dir_ + "/state";
  o.self_exe = std::getenv("ALLOT_BIN");
  o.userns_base = kUsernsBase;
  o.private_network = true;
  GpuInfo g0, g1;
  g0.index = g0.minor = 0;
  g0.uuid = "GPU-test-0";
  g1.index = g1.minor = 1;
  g1.uuid = "GPU-test-1";
  o.gpus = {g0, g1};
  o.gpu_host = GpuHost{root, {dir_ + "/cdi"}};
  exec_.reset();
  exec_ = NewContainerExecutor(o, NewProcessExecutor());

  const std::string probe =
      "for d in nvidia0 nvidia1 nvidiactl; do test -c /dev/$d && echo has-$d; done;"
      " head -c 3 /dev/nvidia0 2>/dev/null | wc -c; cat /usr/local/nvidia/lib64/libcuda.so.1"
      " /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>/dev/null; nvidia-smi 2>/dev/null;"
      " echo LD=$LD_LIBRARY_PATH CDI=$CDI_USED; touch /x 2>/dev/null || echo read-only root";
  PodSpec p = Pod("team-a/gpu", probe);
  p.gpus = {"GPU-test-0"};
  ASSERT_TRUE(exec_->Start(p).ok());
  EXPECT_EQ(WaitExit("team-a/gpu").exit_code, 0) << ReadAll(p.log_path);
  std::string log = ReadAll(p.log_path);
  EXPECT_NE(log.find("allot: GPUs through the driver's files under " + root), std::string::npos)
      << log;
  EXPECT_NE(log.find("has-nvidia0\nhas-nvidiactl\n3\nfake libcuda\nfake nvidia-smi\n"
                     "LD=/usr/local/nvidia/lib64 CDI=\nread-only root\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("has-nvidia1"), std::string::npos) << log;
  // The image was not written to (the files' mount points are in the
  // pod's overlay).
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir_ + "/state/images", ec)) {
    EXPECT_EQ(e.path().string().find("nvidia"), std::string::npos) << e.path();
  }

  // A CDI spec naming the GPU: its edits, not the driver's files.
  fs::create_directories(dir_ + "/cdi");
  std::ofstream(dir_ + "/cdi/nvidia.yaml")
      << "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: GPU-test-1\n"
         "  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia1\n      hostPath: "
      << root << "/dev/nvidia1\ncontainerEdits:\n  env: [CDI_USED=yes]\n  deviceNodes:\n"
      << "  - {path: /dev/nvidiactl, hostPath: " << root << "/dev/nvidiactl}\n  mounts:\n"
      << "  - {hostPath: " << lib << "/libcuda.so.550.54.15, containerPath: "
         "/usr/lib/x86_64-linux-gnu/libcuda.so.1, options: [ro, nosuid, nodev, bind]}\n";
  PodSpec q = Pod("team-a/cdi", probe);
  q.gpus = {"GPU-test-1"};
  ASSERT_TRUE(exec_->Start(q).ok());
  EXPECT_EQ(WaitExit("team-a/cdi").exit_code, 0) << ReadAll(q.log_path);
  log = ReadAll(q.log_path);
  EXPECT_NE(log.find("allot: GPUs through CDI nvidia.com/gpu=GPU-test-1"), std::string::npos)
      << log;
  EXPECT_NE(log.find("has-nvidia1\nhas-nvidiactl\n0\nfake libcuda\nLD= CDI=yes\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("has-nvidia0"), std::string::npos) << log;

  // A GPU this node does not have is refused at start.
  PodSpec r = Pod("team-a/other", "true");
  r.gpus = {"GPU-elsewhere"};
  Result<int> started = exec_->Start(r);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.status().message().find("GPU-elsewhere, which this node does not have"),
            std::string::npos);
}

TEST(ImageSourceTest, PullFailuresSayWhyInAWord) {
  EXPECT_EQ(PullFailure("time=\"...\" level=fatal msg=\"initializing source docker://r/x:2: "
                        "reading manifest 2 in r/x: manifest unknown\"\n"),
            "not found (no such image or tag in its registry)");
  EXPECT_NE(PullFailure("reading manifest 1 in r/p: unauthorized: authentication required")
                .find("refused the credentials"),
            std::string::npos);
  EXPECT_NE(PullFailure("denied: requested access to the resource is denied").find("refused"),
            std::string::npos);
  EXPECT_EQ(PullFailure("writing blob: write /x: no space left on device"),
            "no space left on this node for the image");
  EXPECT_EQ(PullFailure("pinging container registry r: dial tcp 10.0.0.1:443: connect: "
                        "connection refused"),
            "the registry is unreachable");
  // A local "permission denied" is neither the registry's refusal nor a
  // missing image: skopeo's last line.
  EXPECT_EQ(PullFailure("one\nopen /etc/containers/auth.json: permission denied\n"),
            "open /etc/containers/auth.json: permission denied");
  EXPECT_NE(PullFailure("tls: failed to verify certificate: x509: certificate signed by unknown "
                        "authority").find("TLS certificate was not trusted"),
            std::string::npos);
  EXPECT_EQ(PullFailure(""), "skopeo failed");
}

TEST(ImageSourceTest, ManifestSizesAndPlatforms) {
  EXPECT_EQ(ManifestBytes(R"({"schemaVersion":2,"config":{"size":1469},)"
                          R"("layers":[{"size":2000},{"size":30000000}]})"),
            30003469);
  EXPECT_EQ(ManifestBytes("not json"), 0);
  EXPECT_EQ(ManifestBytes(R"({"layers":[{"size":"big"}]})"), 0);
  const std::string index =
      R"({"manifests":[{"digest":"sha256:arm","platform":{"os":"linux","architecture":"arm64"}},)"
      R"({"digest":"sha256:win","platform":{"os":"windows","architecture":"amd64"}},)"
      R"({"digest":"sha256:x86","platform":{"os":"linux","architecture":"amd64"}}]})";
  EXPECT_EQ(ManifestForPlatform(index, "amd64"), "sha256:x86");
  EXPECT_EQ(ManifestForPlatform(index, "arm64"), "sha256:arm");
  EXPECT_EQ(ManifestForPlatform(index, "riscv64"), "");
  EXPECT_EQ(ManifestForPlatform(R"({"layers":[]})", "amd64"), "");
}

TEST(ImageSourceTest, ReferencesAndPullPolicies) {
  EXPECT_EQ(*ImageSource("busybox"), "docker://docker.io/library/busybox");
  EXPECT_EQ(*ImageSource("pytorch/pytorch:2.3"), "docker://docker.io/pytorch/pytorch:2.3");
  EXPECT_EQ(*ImageSource("nvcr.io/nvidia/pytorch:24.01-py3"),
            "docker://nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(*ImageSource("127.0.0.1:5000/tiny:1"), "docker://127.0.0.1:5000/tiny:1");
  EXPECT_EQ(*ImageSource("localhost/tiny"), "docker://localhost/tiny");
  EXPECT_EQ(*ImageSource("oci:/srv/images/x:1"), "oci:/srv/images/x:1");
  EXPECT_FALSE(ImageSource("").ok());
  EXPECT_FALSE(ImageSource("a b").ok());
  EXPECT_FALSE(ImageSource("http://x/y").ok());

  EXPECT_EQ(EffectivePullPolicy("busybox", ""), "Always");
  EXPECT_EQ(EffectivePullPolicy("busybox:latest", ""), "Always");
  EXPECT_EQ(EffectivePullPolicy("127.0.0.1:5000/tiny", ""), "Always");
  EXPECT_EQ(EffectivePullPolicy("127.0.0.1:5000/tiny:1", ""), "IfNotPresent");
  EXPECT_EQ(EffectivePullPolicy("busybox@sha256:abc", ""), "IfNotPresent");
  EXPECT_EQ(EffectivePullPolicy("oci:/x:y", ""), "IfNotPresent");
  EXPECT_EQ(EffectivePullPolicy("busybox", "Never"), "Never");
}

}  // namespace
}  // namespace allot::agent
