// Pod start latency, process runtime against container runtime (issue 17):
// from Executor::Start to the pod's first line in its log, N pods one after
// another, the image already pulled and unpacked; then the memory of 50
// running containers (the RSS of their runc processes, and of the
// executors: this process).
//
//   build/allot_pod_start [N]      (as root; needs runc, umoci, skopeo,
//                                   busybox-static and ALLOT_BIN)
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "agent/container.h"
#include "agent/exec.h"
#include "testing/oci_image.h"

namespace {

using namespace allot::agent;
using Clock = std::chrono::steady_clock;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int64_t RssKb(int pid) {
  std::string s = Read("/proc/" + std::to_string(pid) + "/status");
  size_t at = s.find("VmRSS:");
  return at == std::string::npos ? 0 : std::atoll(s.c_str() + at + 6);
}

double Pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

std::vector<double> Latencies(Executor& exec, const std::string& dir, const std::string& image,
                              int n, const std::string& tag,
                              const std::vector<std::string>& gpus = {}) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    PodSpec spec;
    spec.id = "bench/p" + std::to_string(i);
    spec.tenant = "bench";
    spec.image = image;
    spec.gpus = gpus;
    spec.command = {"sh", "-c", "echo up"};
    // A log of its own per pod and run (a log found holding "up" would
    // end the wait at once).
    spec.log_path = dir + "/logs/" + std::to_string(i) + "-" + tag + ".log";
    std::filesystem::remove(spec.log_path);
    const auto t0 = Clock::now();
    if (!exec.Start(spec).ok()) {
      std::fprintf(stderr, "start failed\n");
      std::exit(1);
    }
    while (Read(spec.log_path).find("up\n") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    while (!exec.Running().empty()) {
      exec.Poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 30;
  const std::string why = allot::testing::ContainersUnavailable();
  if (!why.empty()) {
    std::fprintf(stderr, "allot_pod_start: %s\n", why.c_str());
    return 77;
  }
  char tmpl[] = "/tmp/allot_pod_start.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  chmod(dir.c_str(), 0711);
  std::filesystem::create_directories(dir + "/image");
  if (!allot::testing::BuildTinyImage(dir + "/image")) return 1;
  const std::string image = "oci:" + dir + "/image/oci:tiny";

  auto processes = NewProcessExecutor();
  ContainerOptions o;
  o.state_dir = dir + "/state";
  o.self_exe = std::getenv("ALLOT_BIN");
  o.userns_base = 1u << 20;
  auto containers = NewContainerExecutor(o, NewProcessExecutor());
  Latencies(*containers, dir, image, 1, "pull");  // Pulls and unpacks the image.

  std::vector<double> p = Latencies(*processes, dir, "", n, "process");
  std::vector<double> c = Latencies(*containers, dir, image, n, "container");
  // --network tenant: each pod a workload of its own, so each start makes
  // a network namespace, a veth pair and an address on the tenant's bridge.
  ContainerOptions on = o;
  on.tenant_network = true;
  on.pod_cidr = "10.213.0.0/16";
  std::vector<double> t;
  {
    auto tenant_net = NewContainerExecutor(on, NewProcessExecutor());
    t = Latencies(*tenant_net, dir, image, n, "tenant");
  }
  // A GPU through the driver's files (gpu_devices.h): no driver here, so
  // a driver root of stand-ins, /dev/nvidia0 and nvidiactl (the zero and
  // null devices' numbers), twelve library files and nvidia-smi: each pod
  // gets an overlay root and fifteen more bind mounts.
  const std::string root = dir + "/driver";
  std::filesystem::create_directories(root + "/dev");
  std::filesystem::create_directories(root + "/usr/lib/x86_64-linux-gnu");
  std::filesystem::create_directories(root + "/usr/bin");
  mknod((root + "/dev/nvidia0").c_str(), S_IFCHR | 0666, makedev(1, 5));
  mknod((root + "/dev/nvidiactl").c_str(), S_IFCHR | 0666, makedev(1, 3));
  for (const char* lib : {"libcuda", "libcudadebugger", "libnvidia-allocator", "libnvidia-cfg",
                          "libnvidia-compiler", "libnvidia-gpucomp", "libnvidia-ml",
                          "libnvidia-nvvm", "libnvidia-opencl", "libnvidia-pkcs11",
                          "libnvidia-ptxjitcompiler", "libnvidia-fatbinaryloader"}) {
    std::ofstream(root + "/usr/lib/x86_64-linux-gnu/" + lib + ".so.550.54.15") << "x";
  }
  std::ofstream(root + "/usr/bin/nvidia-smi") << "#!/bin/sh\n";
  std::filesystem::permissions(root, std::filesystem::perms::others_read |
                                         std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  ContainerOptions og = o;
  GpuInfo g;
  g.index = g.minor = 0;
  g.uuid = "GPU-bench-0";
  og.gpus = {g};
  og.gpu_host = GpuHost{root, {}};
  std::vector<double> gp;
  {
    auto gpu = NewContainerExecutor(og, NewProcessExecutor());
    gp = Latencies(*gpu, dir, image, n, "gpu", {"GPU-bench-0"});
  }
  std::printf("start to first log line, %d pods each, one at a time (ms):\n", n);
  std::printf("  process    p50 %.1f  p99 %.1f\n", Pct(p, 0.5), Pct(p, 0.99));
  std::printf("  container  p50 %.1f  p99 %.1f\n", Pct(c, 0.5), Pct(c, 0.99));
  std::printf("  container, --network tenant  p50 %.1f  p99 %.1f\n", Pct(t, 0.5), Pct(t, 0.99));
  std::printf("  container with a GPU (driver's files)  p50 %.1f  p99 %.1f\n", Pct(gp, 0.5),
              Pct(gp, 0.99));

  // 50 at once, asleep.
  std::vector<int> pids;
  for (int i = 0; i < 50; ++i) {
    PodSpec spec;
    spec.id = "bench/s" + std::to_string(i);
    spec.tenant = "bench";
    spec.image = image;
    spec.command = {"sh", "-c", "echo up; exec sleep 1000"};
    spec.log_path = dir + "/logs/s" + std::to_string(i) + ".log";
    auto pid = containers->Start(spec);
    if (!pid.ok()) return 1;
    pids.push_back(*pid);
  }
  for (int i = 0; i < 50; ++i) {
    while (Read(dir + "/logs/s" + std::to_string(i) + ".log").find("up\n") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // Each pod's own process is `runc run` (the container-run step exec'd
  // it); the containers' processes themselves (busybox sleep) are not
  // counted.
  int64_t runc_kb = 0;
  for (int pid : pids) runc_kb += RssKb(pid);
  std::printf("50 running containers: runc processes RSS %.1f MiB in all (%.2f MiB each); "
              "this process (the executors) %.1f MiB\n",
              runc_kb / 1024.0, runc_kb / 1024.0 / 50, RssKb(getpid()) / 1024.0);
  containers->StopAll(std::chrono::milliseconds(0));
  containers.reset();
  processes.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
