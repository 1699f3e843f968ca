// Which device nodes, files and env a container gets for its GPUs
// (gpu_devices.h), on a driver root made here: this machine has no NVIDIA
// driver, so /dev/nvidiaN are character devices standing in for GPUs (the
// null and zero devices' numbers), made with mknod (root only; skipped
// otherwise), and the "driver libraries" are small text files.
#include "agent/gpu_devices.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <string>

namespace allot::agent {
namespace {

namespace fs = std::filesystem;

constexpr char kGpu0[] = "GPU-00000000-1111-2222-3333-444444444444";
constexpr char kGpu1[] = "GPU-55555555-6666-7777-8888-999999999999";
constexpr char kMig[] = "MIG-aaaaaaaa-0000-0000-0000-000000000001";

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// ROOT/dev/nvidia{0,1}, nvidiactl, nvidia-uvm, nvidia-caps/nvidia-cap{12,13},
// ROOT/proc/driver/nvidia-caps/mig-minors, libcuda (a file and its links),
// a library that is not the driver's, and nvidia-smi.
class FakeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
    char tmpl[] = "/tmp/allot_gpu_devices.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/dev/nvidia-caps");
    for (const auto& [name, min] : std::map<std::string, int>{{"nvidia0", 5},
                                                             {"nvidia1", 5},
                                                             {"nvidiactl", 3},
                                                             {"nvidia-uvm", 3},
                                                             {"nvidia-caps/nvidia-cap12", 3},
                                                             {"nvidia-caps/nvidia-cap13", 3}}) {
      ASSERT_EQ(mknod((root_ + "/dev/" + name).c_str(), S_IFCHR | 0666, makedev(1, min)), 0)
          << name;
    }
    Write(root_ + "/proc/driver/nvidia-caps/mig-minors",
          "config 1\nmonitor 2\ngpu0/gi9/access 12\ngpu0/gi9/ci0/access 13\n"
          "gpu1/gi1/access 30\n");
    const std::string lib = root_ + "/usr/lib/x86_64-linux-gnu/";
    Write(lib + "libcuda.so.550.54.15", "fake libcuda\n");
    fs::create_symlink("libcuda.so.550.54.15", lib + "libcuda.so.1");
    fs::create_symlink("libcuda.so.1", lib + "libcuda.so");  // No ".so." in it: skipped.
    fs::create_symlink("libnvidia-ml.so.550.54.15", lib + "libnvidia-ml.so.1");  // Dangling.
    Write(lib + "libnvidia-mlx.so.1", "not the driver's\n");
    Write(root_ + "/usr/bin/nvidia-smi", "#!/bin/sh\necho fake nvidia-smi\n");
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  std::vector<std::string> Paths(const GpuEdits& e) {
    std::vector<std::string> out;
    for (const GpuDeviceNode& d : e.devices) out.push_back(d.path);
    return out;
  }
  std::string root_;
};

TEST_F(FakeDriver, AWholeGpuGetsItsOwnNodeTheControlNodesAndTheDriversFiles) {
  Result<GpuEdits> e = DriverGpuEdits({{kGpu0, 0, 0, -1, -1}}, root_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  // Not /dev/nvidia1 (another pod's GPU), not nvidia-uvm-tools (absent).
  EXPECT_EQ(Paths(*e), (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl",
                                                  "/dev/nvidia-uvm"}));
  EXPECT_EQ(e->devices[0].host_path, root_ + "/dev/nvidia0");
  EXPECT_EQ(e->devices[0].type, 'c');
  EXPECT_EQ(e->devices[0].major, 1);
  EXPECT_EQ(e->devices[0].minor, 5);
  const std::string lib = root_ + "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15";
  const std::vector<std::string> ro = {"ro", "nosuid", "nodev", "bind"};
  EXPECT_EQ(e->mounts, (std::vector<GpuMount>{
                           {lib, "/usr/local/nvidia/lib64/libcuda.so.1", ro},
                           {lib, "/usr/local/nvidia/lib64/libcuda.so.550.54.15", ro},
                           {root_ + "/usr/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi", ro},
                       }));
  EXPECT_EQ(e->append_env, (std::vector<std::string>{"LD_LIBRARY_PATH=/usr/local/nvidia/lib64",
                                                      "PATH=/usr/local/nvidia/bin"}));
  EXPECT_NE(e->how.find("3 device node(s), 2 libraries, 1 tool(s)"), std::string::npos) << e->how;

  // The other GPU: its own node, never the first one's.
  e = DriverGpuEdits({{kGpu1, 1, 1, -1, -1}}, root_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const std::vector<std::string> paths = Paths(*e);
  EXPECT_EQ(paths[0], "/dev/nvidia1");
  EXPECT_EQ(std::count(paths.begin(), paths.end(), "/dev/nvidia0"), 0);
}

TEST_F(FakeDriver, AMigSliceGetsItsParentAndItsTwoCapabilities) {
  Result<GpuEdits> e = DriverGpuEdits({{kMig, 0, 0, 9, 0}}, root_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(Paths(*e),
            (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12",
                                      "/dev/nvidia-caps/nvidia-cap13", "/dev/nvidiactl",
                                      "/dev/nvidia-uvm"}));
  // A compute instance mig-minors does not list: refused, naming it.
  e = DriverGpuEdits({{kMig, 0, 0, 9, 4}}, root_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("mig-minors lists no gpu0/gi9/ci4/access"),
            std::string::npos)
      << e.status().message();
  // Listed, but its node is missing.
  e = DriverGpuEdits({{kMig, 1, 1, 1, 0}}, root_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("cannot give the pod MIG slice"), std::string::npos);
}

TEST_F(FakeDriver, AMissingNodeOrMinorIsAClearErrorNamingTheGpu) {
  Result<GpuEdits> e = DriverGpuEdits({{kGpu0, 2, 2, -1, -1}}, root_);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(e.status().message().find(std::string("cannot give the pod GPU ") + kGpu0 + ": " +
                                      root_ + "/dev/nvidia2 is missing"),
            std::string::npos)
      << e.status().message();
  e = DriverGpuEdits({{kGpu0, 0, -1, -1, -1}}, root_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("minor number is unknown"), std::string::npos);
  fs::remove(root_ + "/dev/nvidiactl");
  e = DriverGpuEdits({{kGpu0, 0, 0, -1, -1}}, root_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("nvidiactl is missing"), std::string::npos);
}

TEST_F(FakeDriver, CdiSpecsNamingThePodsGpusWin) {
  const std::string etc = root_ + "/etc/cdi", run = root_ + "/var/run/cdi";
  // Names GPU 0 by its UUID and GPU 1 by its index.
  Write(etc + "/nvidia.yaml",
        "cdiVersion: 0.5.0\n"
        "kind: nvidia.com/gpu\n"
        "devices:\n"
        "- name: " + std::string(kGpu0) + "\n"
        "  containerEdits:\n"
        "    deviceNodes:\n"
        "    - path: /dev/nvidia0\n"
        "      hostPath: " + root_ + "/dev/nvidia0\n"
        "- name: \"1\"\n"
        "  containerEdits:\n"
        "    deviceNodes:\n"
        "    - {path: /dev/nvidia1, type: c, major: 195, minor: 1}\n"
        "containerEdits:\n"
        "  env: [NVIDIA_VISIBLE_DEVICES=void]\n"
        "  mounts:\n"
        "  - hostPath: " + root_ + "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n"
        "    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
        "  hooks:\n"
        "  - hookName: createContainer\n"
        "    path: /usr/bin/nvidia-ctk\n"
        "    args: [nvidia-ctk, hook, update-ldcache]\n");
  Write(etc + "/other.json", R"({"cdiVersion":"0.5.0","kind":"vendor.com/fpga","devices":[]})");
  Result<GpuEdits> e =
      ResolveGpuEdits({{kGpu0, 0, 0, -1, -1}, {kGpu1, 1, 1, -1, -1}}, GpuHost{root_, {etc, run}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_NE(e->how.find(std::string("CDI nvidia.com/gpu=") + kGpu0 + ",1"), std::string::npos)
      << e->how;
  ASSERT_EQ(e->devices.size(), 2u);
  EXPECT_EQ(e->devices[0], (GpuDeviceNode{"/dev/nvidia0", root_ + "/dev/nvidia0", 'c', 1, 5}));
  EXPECT_EQ(e->devices[1], (GpuDeviceNode{"/dev/nvidia1", "/dev/nvidia1", 'c', 195, 1}));
  EXPECT_EQ(e->env, std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"});
  ASSERT_EQ(e->mounts.size(), 1u);
  EXPECT_EQ(e->mounts[0].options, (std::vector<std::string>{"ro", "nosuid", "nodev", "bind"}));
  ASSERT_EQ(e->hooks.size(), 1u);
  EXPECT_EQ(e->hooks[0].stage, "createContainer");
  EXPECT_EQ(e->hooks[0].args, (std::vector<std::string>{"nvidia-ctk", "hook", "update-ldcache"}));
  EXPECT_TRUE(e->append_env.empty());

  // A MIG slice the spec does not name: the driver's files instead.
  e = ResolveGpuEdits({{kMig, 0, 0, 9, 0}}, GpuHost{root_, {etc, run}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_NE(e->how.find("the driver's files"), std::string::npos) << e->how;

  // A spec that cannot be read is an error naming it, not a silent fallback.
  Write(run + "/broken.yaml", "kind: nvidia.com/gpu\ndevices: [\n");
  e = ResolveGpuEdits({{kGpu0, 0, 0, -1, -1}}, GpuHost{root_, {etc, run}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(run + "/broken.yaml"), std::string::npos)
      << e.status().message();
}

TEST(GpuDevicesTest, NoGpusNoEdits) {
  Result<GpuEdits> e = ResolveGpuEdits({}, GpuHost{"/nonexistent", {}});
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->devices.empty());
  EXPECT_TRUE(e->mounts.empty());
}

}  // namespace
}  // namespace allot::agent
