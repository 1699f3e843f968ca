// The container runtime (see container.h): ContainerExecutor, and
// `allot container-run`, the pod's process until it execs runc.
#include "agent/container.h"
#include "agent/container_net.h"
#include "agent/container_volumes.h"
#include "agent/image_gc.h"
#include "agent/tenant_ids.h"

#include <fcntl.h>
#include <spawn.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <set>
#include <vector>

extern char** environ;

namespace allot::agent {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr int kExitNoImage = 125;  // The image cannot be had.
constexpr int kExitSetup = 126;    // The container cannot be set up.
constexpr int kExitNoCommand = 127;  // Its command is nowhere: a shell's code.

// Pod id "team-a/train/a0/main/3" as a runc id and a directory name.
std::string Flat(const std::string& id) {
  std::string out;
  for (char c : id) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    out += ok ? c : '_';
  }
  return out;
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FailedPrecondition("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<json::value> ReadJson(const std::string& path) {
  Result<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  boost::system::error_code ec;
  json::value v = json::parse(*text, ec);
  if (ec) return Status::FailedPrecondition(path + " is not JSON: " + ec.message());
  return v;
}

// Written whole or not at all; only root may read it (a pod's env may
// hold secrets).
Status WriteFileAtomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FailedPrecondition("cannot write " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  const bool written = off == text.size();
  const bool ok = close(fd) == 0 && written;
  if (!ok) return Status::FailedPrecondition("cannot write " + tmp + ": " + std::strerror(errno));
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FailedPrecondition("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

json::array StringArray(const std::vector<std::string>& v) {
  json::array a;
  for (const std::string& s : v) a.emplace_back(s);
  return a;
}

std::vector<std::string> Strings(const json::value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const json::value& s : v->as_array()) {
    if (s.is_string()) out.emplace_back(s.as_string());
  }
  return out;
}

// ---- The executor ----------------------------------------------------------

class ContainerExecutor : public Executor {
 public:
  ContainerExecutor(ContainerOptions o, std::unique_ptr<Executor> processes)
      : o_(std::move(o)),
        processes_(std::move(processes)),
        tenants_(fs::absolute(o_.state_dir).string() + "/tenants") {
    o_.state_dir = fs::absolute(o_.state_dir).string();
    std::error_code ec;
    for (const char* d : {"", "/images", "/pods", "/runc"}) {
      fs::create_directories(o_.state_dir + d, ec);
      // Traversable by the containers' mapped ids (the image roots are
      // under it); nothing in it is listable by them.
      chmod((o_.state_dir + d).c_str(), 0711);
    }
    RemoveOrphanBundles();
    if (o_.tenant_network) {
      nets_ = std::make_unique<PodNetworks>(o_.pod_cidr, o_.node_name, o_.server);
      if (Status s = nets_->Init(); !s.ok()) {
        unreachable_ = "per-tenant networks cannot be set up on this node: " + s.message();
      }
    }
    // With user namespaces, container root must be able to reach the image
    // roots: every directory above the state directory needs o+x.
    if (o_.userns_base > 0) {
      if (const std::string closed = FirstClosedDir(o_.state_dir); !closed.empty()) {
        unreachable_ = "the container state directory " + o_.state_dir +
                       " is not reachable from the containers' user namespaces: " + closed +
                       " lacks o+x (chmod o+x it, or choose another --container-state)";
      }
    }
  }

  bool RunsImages() const override { return true; }
  proto::PodNetwork PodNetwork() const override {
    return nets_ && unreachable_.empty() ? nets_->Network() : proto::PodNetwork{};
  }
  void SetNetworkPeers(const std::vector<proto::PodNetwork>& peers) override {
    if (nets_ && unreachable_.empty()) nets_->SetPeers(peers);
  }
  bool PrivateNetwork() const override { return o_.private_network && !o_.tenant_network; }
  std::string PodAddress(const std::string& id) const override {
    if (!nets_) return "";
    // Its workload's attempt, "ns/name/aN", names the namespace (Start).
    size_t cut = id.find('/');
    for (int i = 0; i < 2 && cut != std::string::npos; ++i) cut = id.find('/', cut + 1);
    return nets_->AddressOf(id.substr(0, cut));
  }

  Result<int> Start(const PodSpec& spec) override {
    if (spec.image.empty()) {
      return Status::FailedPrecondition(
          "pod " + spec.id + " has no image, and this node runs containers "
          "(allot agent --runtime container): give the pod set an image");
    }
    Result<std::string> source = ImageSource(spec.image);
    if (!source.ok()) return source.status();
    if (!unreachable_.empty()) return Status::FailedPrecondition(unreachable_);
    // Refused as the process executor refuses them, but before the pod's
    // directory is touched: an empty id would name STATE/pods itself, and
    // an id in use the directory of the pod running under it.
    if (spec.id.empty()) return Status::InvalidArgument("pod id is empty", "id");
    for (const std::string& id : Running()) {
      if (id == spec.id) return Status::InvalidArgument("pod id " + spec.id + " is in use", "id");
    }
    for (const auto& [k, v] : spec.env) {
      if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos) {
        return Status::InvalidArgument(
            "bad environment variable name \"" + k + "\" in pod " + spec.id, "env");
      }
    }
    const std::string dir = o_.state_dir + "/pods/" + Flat(spec.id);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) return Status::FailedPrecondition("cannot create " + dir + ": " + ec.message());
    chmod(dir.c_str(), 0711);
    json::object pod;
    pod["id"] = spec.id;
    pod["runtimeId"] = Flat(spec.id);
    pod["image"] = spec.image;
    pod["pullPolicy"] = EffectivePullPolicy(spec.image, spec.image_pull_policy);
    pod["command"] = StringArray(spec.command);
    pod["args"] = StringArray(spec.args);
    json::object env;
    for (const auto& [k, v] : spec.env) env[k] = v;
    pod["env"] = std::move(env);
    pod["workingDir"] = spec.working_dir;
    pod["gpus"] = StringArray(spec.gpus);
    if (!spec.gpus.empty() && o_.gpus_simulated) pod["gpusSimulated"] = true;
    if (!spec.gpus.empty() && !o_.gpus_simulated) {
      Result<json::array> devices = GpuDevices(spec);
      if (!devices.ok()) {
        fs::remove_all(dir, ec);
        return devices.status();
      }
      pod["gpuDevices"] = *std::move(devices);
      pod["gpuRoot"] = o_.gpu_host.root;
      pod["cdiDirs"] = StringArray(o_.gpu_host.cdi_dirs);
    }
    // Its limits again for runc: on cgroups v1 runc puts the container at
    // one path in every hierarchy, which is the pod's own cgroup only in
    // the memory hierarchy where the agent's cpu and memory cgroups differ.
    if (spec.cpu_milli > 0) pod["cpuMilli"] = spec.cpu_milli;
    if (spec.memory_bytes > 0) pod["memoryBytes"] = spec.memory_bytes;
    pod["stateDir"] = o_.state_dir;
    pod["runtime"] = o_.runtime;
    // hostNetwork (the server checked that the tenant may): the node's.
    pod["privateNetwork"] = o_.private_network && !o_.tenant_network && !spec.host_network;
    if (nets_ && !spec.host_network) {
      // The workload's attempt: "ns/name/aN" of "ns/name/aN/podset/index".
      size_t cut = spec.id.find('/');
      for (int i = 0; i < 2 && cut != std::string::npos; ++i) cut = spec.id.find('/', cut + 1);
      const std::string group = spec.id.substr(0, cut);
      // On the node of rank 0 its pods share the namespace with it: rank 0
      // is on loopback there, and at this node's address for its peers.
      auto env = [&spec](const char* k) {
        auto it = spec.env.find(k);
        return it == spec.env.end() ? std::string() : it->second;
      };
      const bool rank0_node = env("NNODES") == "1" || env("NODE_RANK") == "0";
      const int master_port =
          rank0_node && env("NNODES") != "1" ? std::atoi(env("MASTER_PORT").c_str()) : 0;
      Result<size_t> k = tenants_.Index(spec.tenant);
      Result<std::string> netns =
          k.ok() ? nets_->Join(*k, spec.tenant, group, spec.id, master_port)
                 : Result<std::string>(k.status());
      if (!netns.ok()) {
        fs::remove_all(dir, ec);
        return netns.status();
      }
      pod["netns"] = *netns;
      if (rank0_node && !env("NNODES").empty()) {
        pod["env"].as_object()["MASTER_ADDR"] = "127.0.0.1";
      }
      pod["env"].as_object()["ALLOT_POD_IP"] = nets_->AddressOf(group);
    }
    pod["insecureRegistries"] = o_.insecure_registries;
    if (o_.userns_base > 0) {
      Result<int64_t> base = tenants_.HostId(o_.userns_base, spec.tenant);
      if (!base.ok()) {
        fs::remove_all(dir, ec);
        if (nets_) nets_->Leave(spec.id);
        return base.status();
      }
      pod["hostIdBase"] = *base;
    }
    const std::string volume_root =
        o_.volume_root.empty() ? o_.state_dir + "/volumes" : o_.volume_root;
    if (Status s = WritePodVolumes(spec, dir, volume_root, &pod); !s.ok()) {
      fs::remove_all(dir, ec);
      if (nets_) nets_->Leave(spec.id);
      return s;
    }
    const std::string pod_json = dir + "/pod.json";
    ALLOT_RETURN_IF_ERROR(WriteFileAtomic(pod_json, json::serialize(pod)));
    PodSpec run = spec;
    run.command = {o_.self_exe, "container-run", pod_json};
    run.args.clear();
    run.env.clear();
    // So that a later run of the agent finds what this one left (node.cc).
    for (const char* k : {"ALLOT_AGENT_TAG", "ALLOT_POD_ID"}) {
      if (auto it = spec.env.find(k); it != spec.env.end()) run.env[k] = it->second;
    }
    run.working_dir = dir;
    {
      std::lock_guard<std::mutex> lock(mu_);
      image_keys_[spec.id] = ImageKey(spec.image);
    }
    Result<int> pid = processes_->Start(run);
    if (!pid.ok()) {
      fs::remove_all(dir, ec);
      if (nets_) nets_->Leave(spec.id);
      std::lock_guard<std::mutex> lock(mu_);
      image_keys_.erase(spec.id);
    }
    return pid;
  }
  // The pod's GPUs as NVML knows them, for container-run's device nodes.
  Result<json::array> GpuDevices(const PodSpec& spec) const {
    json::array out;
    for (const std::string& uuid : spec.gpus) {
      std::optional<PodGpu> found;
      for (const GpuInfo& g : o_.gpus) {
        if (g.uuid == uuid) found = PodGpu{uuid, g.index, g.minor, -1, -1};
        for (const MigInstance& m : g.mig) {
          if (m.uuid == uuid) {
            found = PodGpu{uuid, g.index, g.minor, m.gpu_instance, m.compute_instance};
          }
        }
      }
      if (!found) {
        return Status::FailedPrecondition("pod " + spec.id + " was given GPU " + uuid +
                                          ", which this node does not have");
      }
      out.push_back(json::object{{"uuid", found->uuid},
                                 {"index", found->index},
                                 {"minor", found->minor},
                                 {"gpuInstance", found->gpu_instance},
                                 {"computeInstance", found->compute_instance}});
    }
    return out;
  }

  void Stop(const std::string& id, std::chrono::milliseconds grace) override {
    processes_->Stop(id, grace);
  }
  std::vector<PodExit> Poll() override {
    MaybeCollectImages();
    std::vector<PodExit> out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out.swap(pending_);
    }
    for (PodExit& e : processes_->Poll()) {
      if (e.exit_code == kExitNoImage && e.reason.empty()) {
        Result<std::string> why = ReadText(o_.state_dir + "/pods/" + Flat(e.id) + "/pull-error");
        if (why.ok()) e.reason = *why;
      }
      CleanUp(e.id);
      // runc exits 128 + N when the container's process died of signal N
      // (Kubernetes reports the same code).
      if (e.signal == 0 && e.exit_code > 128 && e.exit_code < 128 + 65) {
        e.signal = e.exit_code - 128;
      }
      out.push_back(std::move(e));
    }
    return out;
  }
  // Those that ended in StopAll too, until Poll() returned them.
  std::vector<std::string> Running() const override {
    std::vector<std::string> ids = processes_->Running();
    std::lock_guard<std::mutex> lock(mu_);
    for (const PodExit& e : pending_) ids.push_back(e.id);
    return ids;
  }
  // The image's pulls under way on this node (STATE/images/KEY/pull-PID,
  // of live container-runs only): the bytes written so far, and the total
  // container-run read from the image's manifest (pull-PID.total).
  PullProgress Pulled(const std::string& id) const override {
    PullProgress p;
    std::string key;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = image_keys_.find(id);
      if (it == image_keys_.end()) return p;
      key = it->second;
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(o_.state_dir + "/images/" + key, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("pull-", 0) != 0 || !e.is_directory(ec)) continue;
      if (!fs::exists("/proc/" + name.substr(5), ec)) continue;  // A crashed pull's.
      // The pull may remove its layout under us: no throwing iteration.
      for (fs::recursive_directory_iterator f(e.path(), ec), end; !ec && f != end;
           f.increment(ec)) {
        std::error_code fe;
        if (f->is_regular_file(fe)) {
          const uintmax_t size = f->file_size(fe);
          if (!fe) p.bytes += static_cast<int64_t>(size);
        }
      }
      ec.clear();
      std::ifstream total(e.path().string() + ".total");
      int64_t t = 0;
      if (total >> t) p.total += t;
    }
    return p;
  }
  // Until container-run has its image (it then writes image-ready).
  bool Pulling(const std::string& id) const override {
    std::error_code ec;
    const std::string dir = o_.state_dir + "/pods/" + Flat(id);
    return fs::exists(dir + "/pod.json", ec) && !fs::exists(dir + "/image-ready", ec);
  }
  void StopAll(std::chrono::milliseconds grace) override {
    processes_->StopAll(grace);
    std::vector<PodExit> ended = processes_->Poll();
    for (const PodExit& e : ended) CleanUp(e.id);
    std::lock_guard<std::mutex> lock(mu_);
    pending_.insert(pending_.end(), ended.begin(), ended.end());
  }

  ~ContainerExecutor() override {
    if (gc_.joinable()) gc_.join();
  }

 private:
  // What an agent killed with -9 left: bundles no live process works in
  // (a pod's container-run, then its runc, has its bundle as working
  // directory), which hold the pod's environment and Secret files, and
  // runc's records of their containers (killed if they run), which would
  // refuse the pod's id when the server wants it again. Another agent's
  // live pods on a shared state directory are kept.
  void RemoveOrphanBundles() {
    const std::string pods = o_.state_dir + "/pods/";
    std::set<std::string> live;
    std::error_code ec;
    for (const auto& p : fs::directory_iterator("/proc", ec)) {
      std::error_code le;
      const std::string cwd = fs::read_symlink(p.path() / "cwd", le).string();
      if (le || cwd.rfind(pods, 0) != 0) continue;
      live.insert(cwd.substr(pods.size(), cwd.find('/', pods.size()) - pods.size()));
    }
    for (const std::string& dir : {pods, o_.state_dir + "/runc/"}) {
      for (const auto& b : fs::directory_iterator(dir, ec)) {
        const std::string name = b.path().filename().string();
        if (live.count(name) || !b.is_directory()) continue;
        DeleteContainer(name);
        std::error_code re;
        fs::remove_all(pods + name, re);
      }
    }
  }
  // runc's record of container `runc_id` (the pod's Flat id), the
  // container killed first if it still runs.
  void DeleteContainer(const std::string& runc_id) {
    const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    RunTool({o_.runtime, "--root", o_.state_dir + "/runc", "delete", "--force", runc_id},
            devnull);
    if (devnull >= 0) close(devnull);
  }

  // The image cache's collection (image_gc.h), at most once a minute, on a
  // thread of its own so that removing a large image does not hold up the
  // agent's loop.
  void MaybeCollectImages() {
    const auto now = std::chrono::steady_clock::now();
    if (gc_busy_ || now < next_gc_) return;
    next_gc_ = now + std::chrono::minutes(1);
    if (gc_.joinable()) gc_.join();
    gc_busy_ = true;
    gc_ = std::thread([this] {
      const std::string images = o_.state_dir + "/images";
      ImageGcResult r = CollectImages(
          o_.state_dir, o_.image_gc,
          std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::system_clock::now().time_since_epoch())
              .count(),
          [&] { return DiskUsedPercent(images); });
      for (const std::string& what : r.removed) {
        std::fprintf(stderr, "allot agent: image gc removed %s\n", what.c_str());
      }
      gc_busy_ = false;
    });
  }

  // After the pod's process ended: runc's record of the container (when
  // runc itself was killed) and the pod's directory.
  void CleanUp(const std::string& id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      image_keys_.erase(id);
    }
    DeleteContainer(Flat(id));
    std::error_code ec;
    fs::remove_all(o_.state_dir + "/pods/" + Flat(id), ec);
    if (nets_) nets_->Leave(id);
  }
  ContainerOptions o_;
  std::string unreachable_;  // Why the image roots are out of reach, or "".
  std::unique_ptr<Executor> processes_;
  mutable std::mutex mu_;
  TenantIds tenants_;  // Their numbers: user namespaces and networks.
  std::map<std::string, std::string> image_keys_;  // Pod -> ImageKey. Guarded by mu_.
  std::vector<PodExit> pending_;      // Ended in StopAll. Guarded by mu_.
  std::unique_ptr<PodNetworks> nets_;  // --network tenant.
  std::thread gc_;
  std::atomic<bool> gc_busy_{false};
  std::chrono::steady_clock::time_point next_gc_{};
};

// ---- container-run ---------------------------------------------------------

struct ImageConfig {
  std::vector<std::string> entrypoint, cmd, env;
  std::string working_dir, user;
};

// Entrypoint, Cmd, Env, WorkingDir and User of an OCI image config's
// "config" object (or of STATE/images/.../image.json, written in the same
// shape); what is missing or of another type stays empty.
ImageConfig ImageConfigOf(const json::value* c) {
  ImageConfig out;
  if (c == nullptr || !c->is_object()) return out;
  const json::object& o = c->as_object();
  out.entrypoint = Strings(o.if_contains("Entrypoint"));
  out.cmd = Strings(o.if_contains("Cmd"));
  out.env = Strings(o.if_contains("Env"));
  if (const json::value* w = o.if_contains("WorkingDir"); w && w->is_string()) {
    out.working_dir = std::string(w->as_string());
  }
  if (const json::value* u = o.if_contains("User"); u && u->is_string()) {
    out.user = std::string(u->as_string());
  }
  return out;
}

// The image's config from the OCI layout at `layout`: index -> manifest
// -> config.
Result<ImageConfig> ReadImageConfig(const std::string& layout, std::string* digest) {
  auto blob = [&](const json::value& desc) -> Result<json::value> {
    const json::value* d = desc.as_object().if_contains("digest");
    if (d == nullptr || !d->is_string()) return Status::FailedPrecondition("no digest in " + layout);
    std::string s(d->as_string());
    const size_t colon = s.find(':');
    if (colon == std::string::npos) return Status::FailedPrecondition("bad digest " + s);
    return ReadJson(layout + "/blobs/" + s.substr(0, colon) + "/" + s.substr(colon + 1));
  };
  Result<json::value> index = ReadJson(layout + "/index.json");
  if (!index.ok()) return index.status();
  const json::value* manifests = index->as_object().if_contains("manifests");
  if (manifests == nullptr || !manifests->is_array() || manifests->as_array().empty()) {
    return Status::FailedPrecondition("no manifest in " + layout);
  }
  const json::value& mdesc = manifests->as_array().back();
  *digest = std::string(mdesc.at("digest").as_string());
  Result<json::value> manifest = blob(mdesc);
  if (!manifest.ok()) return manifest.status();
  Result<json::value> config = blob(manifest->at("config"));
  if (!config.ok()) return config.status();
  return ImageConfigOf(config->as_object().if_contains("config"));
}

// A directory name for an image reference.

// The root is shared read-only and owned by host root, so the mount points
// runc needs are made here, once: directories for /proc, /dev, /sys and
// /tmp, empty files for /etc/hosts and /etc/resolv.conf. Never through a
// symbolic link of the image (it could point into the host).
void PrepareMountPoints(const std::string& rootfs) {
  auto plain = [](const fs::path& p) {
    std::error_code ec;
    return !fs::is_symlink(fs::symlink_status(p, ec));
  };
  std::error_code ec;
  for (const char* d : {"proc", "dev", "sys", "tmp", "etc"}) {
    const fs::path p = fs::path(rootfs) / d;
    if (plain(p) && !fs::exists(p, ec)) fs::create_directory(p, ec);
  }
  const fs::path etc = fs::path(rootfs) / "etc";
  if (!plain(etc) || !fs::is_directory(etc, ec)) return;
  for (const char* f : {"hosts", "resolv.conf"}) {
    const fs::path p = etc / f;
    if (plain(p) && !fs::exists(p, ec)) std::ofstream(p.string()).flush();
  }
}

bool InsecureRegistry(const std::string& source, const std::string& list) {
  const std::string prefix = "docker://";
  if (source.rfind(prefix, 0) != 0) return false;
  const std::string rest = source.substr(prefix.size());
  const std::string host = rest.substr(0, rest.find('/'));
  const std::string name = host.substr(0, host.find(':'));
  if (name == "127.0.0.1" || name == "localhost") return true;
  std::stringstream ss(list);
  for (std::string h; std::getline(ss, h, ',');) {
    if (!h.empty() && h == host) return true;
  }
  return false;
}

// The bytes a pull of `source` (docker://...) fetches, from its manifest
// (this host's platform's, for a multi-platform image); 0 when it cannot
// be read. `inspect` is skopeo inspect with its TLS and auth options.
int64_t RemoteImageBytes(std::vector<std::string> inspect, const std::string& source,
                         const std::string& tmp) {
  auto raw = [&](const std::string& ref) -> std::string {
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return "";
    std::vector<std::string> argv = inspect;
    argv.push_back(ref);
    const int rc = RunTool(argv, fd);
    close(fd);
    Result<std::string> text = ReadText(tmp);
    unlink(tmp.c_str());
    return rc == 0 && text.ok() ? *text : "";
  };
  std::string manifest = raw(source);
  struct utsname u {};
  uname(&u);
  const std::string machine = u.machine;
  const std::string arch = machine == "x86_64" ? "amd64" : machine == "aarch64" ? "arm64" : machine;
  if (const std::string digest = ManifestForPlatform(manifest, arch); !digest.empty()) {
    // docker://HOST/NAME[:TAG|@DIGEST] -> docker://HOST/NAME@digest.
    std::string repo = source;
    if (size_t at = repo.find('@'); at != std::string::npos) repo.resize(at);
    const size_t slash = repo.rfind('/'), colon = repo.rfind(':');
    if (colon != std::string::npos && slash != std::string::npos && colon > slash) {
      repo.resize(colon);
    }
    manifest = raw(repo + "@" + digest);
  }
  return ManifestBytes(manifest);
}

// Makes sure the image is unpacked here; its root file system directory
// and config. Progress and errors go to `out` (the pod's log).
Result<std::pair<std::string, ImageConfig>> EnsureImage(const json::object& pod,
                                                        std::ostream& out) {
  const std::string image(pod.at("image").as_string());
  const std::string policy(pod.at("pullPolicy").as_string());
  const std::string state(pod.at("stateDir").as_string());
  Result<std::string> source = ImageSource(image);
  if (!source.ok()) return source.status();
  const std::string dir = state + "/images/" + ImageKey(image);
  std::error_code ec;
  fs::create_directories(dir, ec);
  chmod(dir.c_str(), 0711);
  // One pull of an image at a time on this node; the others wait, then
  // find it there.
  int lock = open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    return Status::FailedPrecondition("cannot lock " + dir + "/lock: " + std::strerror(errno));
  }
  struct Unlock {
    int fd;
    ~Unlock() { close(fd); }
  } unlock{lock};
  auto current = [&]() -> std::string {
    std::error_code e;
    fs::path target = fs::read_symlink(dir + "/current", e);
    if (e || !fs::exists(dir + "/" + target.string() + "/rootfs", e)) return "";
    return dir + "/" + target.string();
  };
  std::string have = current();
  if (policy == "Never" && have.empty()) {
    return Status::NotFound("image " + image +
                            " is not on this node and its imagePullPolicy is Never");
  }
  if (policy == "Always" || have.empty()) {
    const auto start = std::chrono::steady_clock::now();
    const std::string layout = dir + "/pull-" + std::to_string(getpid());
    fs::remove_all(layout, ec);
    std::vector<std::string> copy = {"skopeo", "copy", "--quiet"};
    std::vector<std::string> inspect = {"skopeo", "inspect", "--raw"};
    if (InsecureRegistry(*source, std::string(pod.at("insecureRegistries").as_string()))) {
      copy.push_back("--src-tls-verify=false");
      inspect.push_back("--tls-verify=false");
    }
    // The tenant's imagePullSecrets, merged (container auth file format).
    if (const json::value* auth = pod.if_contains("authFile"); auth && auth->is_string()) {
      copy.push_back("--src-authfile=" + std::string(auth->as_string()));
      inspect.push_back("--authfile=" + std::string(auth->as_string()));
    }
    // Its size, for the pull's progress (the agent sums what is written
    // under `layout` against it).
    const int64_t total = source->rfind("docker://", 0) == 0
                              ? RemoteImageBytes(inspect, *source, layout + ".manifest")
                              : 0;
    if (total > 0) (void)WriteFileAtomic(layout + ".total", std::to_string(total));
    out << "allot: pulling image " << image << " (" << *source
        << (total > 0 ? ", " + std::to_string(total) + " bytes" : std::string()) << ")"
        << std::endl;
    copy.push_back(*source);
    copy.push_back("oci:" + layout + ":image");
    // skopeo's own words go to the pod's log, and say why it failed.
    const std::string err_file = layout + ".err";
    const int err_fd = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int rc = RunTool(copy, err_fd);
    if (err_fd >= 0) close(err_fd);
    Result<std::string> said = ReadText(err_file);
    fs::remove(err_file, ec);
    fs::remove(layout + ".total", ec);
    if (said.ok()) out << *said << std::flush;
    if (rc != 0) {
      fs::remove_all(layout, ec);
      const std::string why = rc < 0 ? "skopeo could not be run (is it installed?)"
                                     : PullFailure(said.ok() ? *said : "");
      return Status::NotFound("cannot pull image " + image + ": " + why);
    }
    std::string digest;
    Result<ImageConfig> config = ReadImageConfig(layout, &digest);
    if (!config.ok()) {
      fs::remove_all(layout, ec);
      return config.status();
    }
    const std::string name = Flat(digest);
    const std::string target = dir + "/" + name;
    if (!fs::exists(target + "/rootfs", ec)) {
      const std::string tmp = target + ".unpack";
      fs::remove_all(tmp, ec);
      // As root, umoci keeps the files' owners; the user namespaces map
      // them, and the root is mounted read-only.
      const int urc = RunTool({"umoci", "unpack", "--image", layout + ":image", tmp});
      if (urc != 0) {
        fs::remove_all(layout, ec);
        fs::remove_all(tmp, ec);
        return Status::FailedPrecondition("cannot unpack image " + image + ": umoci " +
                                          (urc < 0 ? std::string("could not be run")
                                                   : "exited " + std::to_string(urc)));
      }
      chmod(tmp.c_str(), 0711);
      PrepareMountPoints(tmp + "/rootfs");
      json::object cfg;
      cfg["Entrypoint"] = StringArray(config->entrypoint);
      cfg["Cmd"] = StringArray(config->cmd);
      cfg["Env"] = StringArray(config->env);
      cfg["WorkingDir"] = config->working_dir;
      cfg["User"] = config->user;
      ALLOT_RETURN_IF_ERROR(WriteFileAtomic(tmp + "/image.json", json::serialize(cfg)));
      fs::rename(tmp, target, ec);
      if (ec) return Status::FailedPrecondition("cannot rename " + tmp + ": " + ec.message());
    }
    fs::remove_all(layout, ec);
    const std::string link = dir + "/current.new";
    fs::remove(link, ec);
    fs::create_symlink(name, link, ec);
    fs::rename(link, dir + "/current", ec);
    have = current();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out << "allot: pulled image " << image << " (" << digest << ") in "
        << static_cast<int64_t>(secs * 1000) / 1000.0 << " s" << std::endl;
  }
  if (have.empty()) return Status::FailedPrecondition("image " + image + " vanished after its pull");
  // When it was last used, for the image GC (image_gc.h).
  if (int fd = open((dir + "/last-used").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600); fd >= 0) {
    futimens(fd, nullptr);
    close(fd);
  }
  Result<json::value> cfg = ReadJson(have + "/image.json");
  if (!cfg.ok()) return cfg.status();
  ImageConfig ic = ImageConfigOf(&*cfg);
  return std::make_pair(have + "/rootfs", ic);
}

// The cgroup process `pid` is in: the memory hierarchy's path on v1, the
// unified path on v2; "" when unknown.
std::string CgroupOf(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/cgroup");
  std::string unified, memory;
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty()) unified = path;
    std::stringstream ss(controllers);
    for (std::string c; std::getline(ss, c, ',');) {
      if (c == "memory") memory = path;
    }
  }
  return !memory.empty() ? memory : unified;
}

json::object Mount(const std::string& dst, const std::string& type, const std::string& src,
                   std::vector<std::string> options) {
  return json::object{{"destination", dst},
                      {"type", type},
                      {"source", src},
                      {"options", StringArray(options)}};
}

// The default seccomp profile: everything is allowed but the system calls
// a workload has no business making and that widen what the kernel
// exposes to it (new namespaces and mounts, kernel modules and keyrings,
// clocks, swap, reboot, BPF, perf, kexec), which fail with EPERM. Close to
// Docker's and Kubernetes' RuntimeDefault in what it denies; names this
// kernel or libseccomp do not know are skipped by runc.
json::object DefaultSeccomp() {
  static const std::vector<std::string> kDenied = {
      "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
      "delete_module", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick",
      "get_kernel_syms", "init_module", "ioperm", "iopl", "kexec_file_load", "kexec_load",
      "keyctl", "lookup_dcookie", "mount", "move_mount", "name_to_handle_at", "nfsservctl",
      "open_by_handle_at", "open_tree", "perf_event_open", "pivot_root", "query_module",
      "quotactl", "reboot", "request_key", "setns", "settimeofday", "stime", "swapoff",
      "swapon", "syslog", "sysfs", "_sysctl", "umount", "umount2", "unshare", "uselib",
      "userfaultfd", "ustat", "vm86", "vm86old"};
  return json::object{
      {"defaultAction", "SCMP_ACT_ALLOW"},
      {"architectures", StringArray({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32",
                                     "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"})},
      {"syscalls", json::array{json::object{{"names", StringArray(kDenied)},
                                            {"action", "SCMP_ACT_ERRNO"},
                                            {"errnoRet", 1}}}}};
}

// The OCI runtime config of the pod.
Result<json::object> RuntimeConfig(const json::object& pod, const std::string& rootfs,
                                   const ImageConfig& image, bool writable_root,
                                   const GpuEdits& gpu) {
  // Kubernetes' rules: command replaces the entrypoint, args the cmd.
  std::vector<std::string> command = Strings(pod.if_contains("command"));
  std::vector<std::string> args = Strings(pod.if_contains("args"));
  std::vector<std::string> argv = command.empty() ? image.entrypoint : command;
  const std::vector<std::string>& rest = (command.empty() && args.empty()) ? image.cmd : args;
  argv.insert(argv.end(), rest.begin(), rest.end());
  if (argv.empty()) {
    return Status::InvalidArgument("the pod has no command and its image no entrypoint or cmd");
  }
  std::vector<std::pair<std::string, std::string>> env;
  auto set = [&](const std::string& k, const std::string& v) {
    for (auto& e : env) {
      if (e.first == k) {
        e.second = v;
        return;
      }
    }
    env.emplace_back(k, v);
  };
  set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  for (const std::string& kv : image.env) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  set("HOME", "/root");
  // The GPUs' (CDI's env first, then paths added to the image's own), and
  // the pod's and the server's over them.
  for (const std::string& kv : gpu.env) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const std::string& kv : gpu.append_env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq);
    std::string v = kv.substr(eq + 1);
    for (const auto& e : env) {
      if (e.first == k && !e.second.empty()) v = e.second + ":" + v;
    }
    set(k, v);
  }
  if (const json::value* e = pod.if_contains("env"); e && e->is_object()) {
    for (const auto& [k, v] : e->as_object()) {
      if (v.is_string()) set(std::string(k), std::string(v.as_string()));
    }
  }
  json::array env_list;
  for (const auto& [k, v] : env) env_list.emplace_back(k + "=" + v);

  uint32_t uid = 0, gid = 0;
  if (!image.user.empty() && image.user != "root") {
    unsigned u = 0, g = 0;
    char tail = 0;
    const int n = sscanf(image.user.c_str(), "%u:%u%c", &u, &g, &tail);
    if (n == 1 || n == 2) {
      uid = u;
      gid = n == 2 ? g : u;
    } else {
      return Status::InvalidArgument("the image's user " + image.user +
                                     " is not numeric (uid or uid:gid); Allot does not "
                                     "read the image's /etc/passwd yet");
    }
  }
  // securityContext: runAsUser and runAsGroup win over the image's user.
  if (const json::value* u = pod.if_contains("runAsUser"); u && u->is_int64()) {
    uid = uint32_t(u->as_int64());
    if (!pod.contains("runAsGroup")) gid = uid;
  }
  if (const json::value* g = pod.if_contains("runAsGroup"); g && g->is_int64()) {
    gid = uint32_t(g->as_int64());
  }
  if (const json::value* nr = pod.if_contains("runAsNonRoot");
      nr && nr->is_bool() && nr->as_bool() && uid == 0) {
    return Status::FailedPrecondition(
        "runAsNonRoot is set and the pod would run as root (uid 0): set runAsUser, or use an "
        "image with a non-root numeric USER");
  }
  std::string cwd(pod.at("workingDir").as_string());
  if (cwd.empty()) cwd = image.working_dir.empty() ? "/" : image.working_dir;

  const std::vector<std::string> caps = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  json::object process{
      {"terminal", false},
      {"user", json::object{{"uid", uid}, {"gid", gid}}},
      {"args", StringArray(argv)},
      {"env", std::move(env_list)},
      {"cwd", cwd},
      {"capabilities", json::object{{"bounding", StringArray(caps)},
                                    {"effective", StringArray(caps)},
                                    {"permitted", StringArray(caps)}}},
      {"noNewPrivileges", true}};

  json::array mounts;
  mounts.push_back(Mount("/proc", "proc", "proc", {}));
  mounts.push_back(Mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}));
  mounts.push_back(Mount("/dev/pts", "devpts", "devpts",
                         {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}));
  mounts.push_back(Mount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
  mounts.push_back(Mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}));
  // A bind, not a new sysfs: in a user namespace sharing the host's
  // network a fresh sysfs cannot be mounted.
  mounts.push_back(Mount("/sys", "none", "/sys", {"rbind", "nosuid", "noexec", "nodev", "ro"}));
  mounts.push_back(Mount("/tmp", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=1777"}));
  const bool private_net = pod.at("privateNetwork").as_bool();
  if (!private_net) {
    for (const char* f : {"/etc/hosts", "/etc/resolv.conf"}) {
      if (access(f, R_OK) == 0) mounts.push_back(Mount(f, "none", f, {"bind", "ro", "nosuid", "nodev"}));
    }
  }

  // The pod's volumes, owned by the host ids its user maps to.
  int64_t id_base = 0;
  if (const json::value* b = pod.if_contains("hostIdBase"); b && b->is_int64()) {
    id_base = b->as_int64();
  }
  ALLOT_RETURN_IF_ERROR(MountVolumes(pod, rootfs, id_base + uid, id_base + gid, &mounts));

  json::array namespaces;
  for (const char* ns : {"pid", "ipc", "uts", "mount"}) namespaces.push_back(json::object{{"type", ns}});
  if (private_net) namespaces.push_back(json::object{{"type", "network"}});
  if (const json::value* netns = pod.if_contains("netns"); netns && netns->is_string()) {
    namespaces.push_back(json::object{{"type", "network"}, {"path", netns->as_string()}});
  }
  json::object linux_cfg;
  if (const json::value* base = pod.if_contains("hostIdBase"); base && base->is_int64()) {
    namespaces.push_back(json::object{{"type", "user"}});
    json::array map{json::object{{"containerID", 0}, {"hostID", base->as_int64()}, {"size", kIdsPerTenant}}};
    linux_cfg["uidMappings"] = map;
    linux_cfg["gidMappings"] = map;
  }
  linux_cfg["namespaces"] = std::move(namespaces);
  // The pod's own cgroup, when the process executor put us in one (ours
  // differs from the agent's), so that its limits, OOM accounting and
  // final SIGKILL cover the container. Else runc makes one of its own.
  const std::string own = CgroupOf("self");
  if (!own.empty() && own != "/" && own != CgroupOf(std::to_string(getppid()))) {
    linux_cfg["cgroupsPath"] = own;
  }
  // GPUs (gpu_devices.h): each device node bound in (a bind works in a
  // user namespace, where mknod does not) and allowed in the device cgroup;
  // the driver's files; CDI's hooks.
  json::array allow{json::object{{"allow", false}, {"access", "rwm"}}};
  for (const GpuDeviceNode& d : gpu.devices) {
    mounts.push_back(Mount(d.path, "bind", d.host_path, {"bind", "nosuid", "noexec"}));
    allow.push_back(json::object{{"allow", true}, {"type", std::string(1, d.type)},
                                 {"major", d.major}, {"minor", d.minor}, {"access", "rwm"}});
  }
  for (const GpuMount& m : gpu.mounts) {
    mounts.push_back(Mount(m.container_path, "bind", m.host_path, m.options));
  }
  json::object hooks;
  for (const GpuHook& h : gpu.hooks) {
    json::object hook{{"path", h.path}};
    if (!h.args.empty()) hook["args"] = StringArray(h.args);
    if (!h.env.empty()) hook["env"] = StringArray(h.env);
    if (h.timeout_s > 0) hook["timeout"] = h.timeout_s;
    json::value& stage = hooks[h.stage];
    if (!stage.is_array()) stage = json::array();
    stage.as_array().push_back(std::move(hook));
  }
  json::object resources{{"devices", std::move(allow)}};
  // The pod's limits, as the process executor sets them (cgroup.h), so
  // that they hold in whatever cgroup runc puts the container in.
  if (const json::value* c = pod.if_contains("cpuMilli"); c && c->is_int64() && c->as_int64() > 0) {
    constexpr int64_t kPeriodUs = 100000, kMinQuotaUs = 1000;
    resources["cpu"] = json::object{
        {"period", kPeriodUs}, {"quota", std::max(kMinQuotaUs, c->as_int64() * kPeriodUs / 1000)}};
  }
  if (const json::value* m = pod.if_contains("memoryBytes");
      m && m->is_int64() && m->as_int64() > 0) {
    resources["memory"] = json::object{{"limit", m->as_int64()}};
  }
  linux_cfg["resources"] = std::move(resources);
  linux_cfg["seccomp"] = DefaultSeccomp();
  linux_cfg["maskedPaths"] = StringArray({"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                                          "/proc/latency_stats", "/proc/timer_list",
                                          "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
                                          "/proc/scsi"});
  linux_cfg["readonlyPaths"] = StringArray({"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                            "/proc/sysrq-trigger"});
  std::string host = std::string(pod.at("runtimeId").as_string()).substr(0, 63);
  json::object config{{"ociVersion", "1.0.2"},
                      {"process", std::move(process)},
                      {"root", json::object{{"path", rootfs}, {"readonly", !writable_root}}},
                      {"hostname", host},
                      {"mounts", std::move(mounts)},
                      {"linux", std::move(linux_cfg)}};
  if (!hooks.empty()) config["hooks"] = std::move(hooks);
  return config;
}

// Whether the container's command (`config`'s process.args[0]) is nowhere
// it could be run from: by path, or on its PATH, no file or link in the
// root file system, nor under an empty tmpfs (/tmp). What a path crosses
// that could lead elsewhere (another mount, a symbolic link on the way)
// counts as found: runc judges those.
// So a missing command exits 127 as under a shell (the process runtime),
// not with runc's 1.
bool CommandMissing(const json::object& config, std::string* cmd) {
  const json::object& proc = config.at("process").as_object();
  *cmd = std::string(proc.at("args").as_array().at(0).as_string());
  const std::string root(config.at("root").at("path").as_string());
  std::vector<std::pair<std::string, bool>> mounts;  // Destination, a fresh tmpfs.
  for (const json::value& m : config.at("mounts").as_array()) {
    const json::value* type = m.as_object().if_contains("type");
    mounts.emplace_back(m.at("destination").as_string(),
                        type != nullptr && type->is_string() && type->as_string() == "tmpfs");
  }
  auto present = [&](const std::string& path) {  // Absolute, in the container.
    // The deepest mount that holds it decides: an empty tmpfs holds nothing
    // (but its own top), any other one we do not look into.
    const std::pair<std::string, bool>* holder = nullptr;
    for (const auto& m : mounts) {
      if ((path == m.first || path.rfind(m.first + "/", 0) == 0) &&
          (holder == nullptr || m.first.size() > holder->first.size())) {
        holder = &m;
      }
    }
    if (holder != nullptr) return !holder->second || path == holder->first;
    std::string at = root;
    std::stringstream parts(path);
    struct stat st{};
    for (std::string part; std::getline(parts, part, '/');) {
      if (part.empty() || part == ".") continue;
      if (part == "..") return true;
      at += "/" + part;
      if (::lstat(at.c_str(), &st) != 0) return false;
      if (S_ISLNK(st.st_mode)) return true;
    }
    return true;
  };
  if (cmd->find('/') != std::string::npos) {
    const std::string cwd(proc.at("cwd").as_string());
    return !present((*cmd)[0] == '/' ? *cmd : cwd + "/" + *cmd);
  }
  for (const json::value& e : proc.at("env").as_array()) {
    const std::string kv(e.as_string());
    if (kv.rfind("PATH=", 0) != 0) continue;
    std::stringstream dirs(kv.substr(5));
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty() || dir[0] != '/' || present(dir + "/" + *cmd)) return false;
    }
    return true;
  }
  return false;
}

// An overlay with `lower` below and the pod's own upper layer
// (BUNDLE/upper, owned by the tenant's root) at BUNDLE/rootfs, in a new
// private mount namespace of this process.
Result<std::string> OverlayRoot(const std::string& lower, const std::string& bundle,
                                const json::object& pod) {
  if (unshare(CLONE_NEWNS) != 0 ||
      mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Status::FailedPrecondition(std::string("cannot make a mount namespace for the "
                                                  "pod's writable root: ") +
                                      std::strerror(errno));
  }
  const std::string upper = bundle + "/upper", work = bundle + "/work",
                    merged = bundle + "/rootfs";
  std::error_code ec;
  for (const std::string& d : {upper, work, merged}) fs::create_directories(d, ec);
  if (const json::value* b = pod.if_contains("hostIdBase"); b && b->is_int64()) {
    (void)chown(upper.c_str(), uid_t(b->as_int64()), gid_t(b->as_int64()));
  }
  const std::string opts = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work;
  if (mount("overlay", merged.c_str(), "overlay", 0, opts.c_str()) != 0) {
    return Status::FailedPrecondition(std::string("cannot mount the pod's writable root "
                                                  "(overlayfs): ") +
                                      std::strerror(errno));
  }
  return merged;
}

}  // namespace

Result<std::string> ImageSource(const std::string& image) {
  if (image.empty()) return Status::InvalidArgument("the image is empty", "image");
  for (char c : image) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\0') {
      return Status::InvalidArgument("image \"" + image + "\" contains white space", "image");
    }
  }
  if (image.rfind("oci:", 0) == 0 || image.rfind("docker://", 0) == 0 ||
      image.rfind("oci-archive:", 0) == 0) {
    return image;
  }
  if (image.find("://") != std::string::npos) {
    return Status::InvalidArgument("image \"" + image + "\": only docker://, oci: and oci-archive: "
                                   "transports are read", "image");
  }
  const size_t slash = image.find('/');
  const std::string first = slash == std::string::npos ? "" : image.substr(0, slash);
  // As Docker reads it: a first part with '.' or ':' or "localhost" is a
  // registry; else Docker Hub, with library/ for one-part names.
  const bool registry = first.find('.') != std::string::npos ||
                        first.find(':') != std::string::npos || first == "localhost";
  if (registry) return "docker://" + image;
  if (slash == std::string::npos) return "docker://docker.io/library/" + image;
  return "docker://docker.io/" + image;
}

std::string EffectivePullPolicy(const std::string& image, const std::string& policy) {
  if (!policy.empty()) return policy;
  if (image.rfind("oci:", 0) == 0 || image.rfind("oci-archive:", 0) == 0) return "IfNotPresent";
  if (image.find('@') != std::string::npos) return "IfNotPresent";
  const size_t slash = image.rfind('/');
  const std::string last = slash == std::string::npos ? image : image.substr(slash + 1);
  const size_t colon = last.find(':');
  if (colon == std::string::npos || last.substr(colon + 1) == "latest") return "Always";
  return "IfNotPresent";
}

std::string PullFailure(const std::string& said) {
  std::string lower = said;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](std::initializer_list<const char*> words) {
    for (const char* w : words) {
      if (lower.find(w) != std::string::npos) return true;
    }
    return false;
  };
  if (has({"no space left"})) return "no space left on this node for the image";
  if (has({"unauthorized", "authentication required", "requested access to the resource is denied",
           "403 forbidden"})) {
    return "the registry refused the credentials (unauthorized: check the pod set's "
           "imagePullSecrets)";
  }
  if (has({"manifest unknown", "name unknown", "404 not found", ": not found"})) {
    return "not found (no such image or tag in its registry)";
  }
  if (has({"x509:", "certificate"})) {
    return "the registry's TLS certificate was not trusted (a registry without TLS goes in "
           "--insecure-registries)";
  }
  if (has({"connection refused", "no such host", "i/o timeout", "network is unreachable"})) {
    return "the registry is unreachable";
  }
  std::string last = said;
  while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
  if (size_t nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
  return last.empty() ? "skopeo failed" : last.substr(0, 300);
}

int64_t ManifestBytes(const std::string& raw) {
  boost::system::error_code ec;
  json::value m = json::parse(raw, ec);
  if (ec || !m.is_object()) return 0;
  auto size = [](const json::value* d) -> int64_t {
    if (d == nullptr || !d->is_object()) return 0;
    const json::value* s = d->as_object().if_contains("size");
    return s != nullptr && s->is_int64() ? s->as_int64() : 0;
  };
  int64_t total = size(m.as_object().if_contains("config"));
  if (const json::value* l = m.as_object().if_contains("layers"); l && l->is_array()) {
    for (const json::value& layer : l->as_array()) total += size(&layer);
  }
  return total;
}

std::string ManifestForPlatform(const std::string& raw, const std::string& arch) {
  boost::system::error_code ec;
  json::value m = json::parse(raw, ec);
  if (ec || !m.is_object()) return "";
  const json::value* list = m.as_object().if_contains("manifests");
  if (list == nullptr || !list->is_array()) return "";
  for (const json::value& e : list->as_array()) {
    if (!e.is_object()) continue;
    const json::value* p = e.as_object().if_contains("platform");
    const json::value* d = e.as_object().if_contains("digest");
    if (p == nullptr || !p->is_object() || d == nullptr || !d->is_string()) continue;
    const json::value* os = p->as_object().if_contains("os");
    const json::value* a = p->as_object().if_contains("architecture");
    if (os && a && os->is_string() && a->is_string() && os->as_string() == "linux" &&
        a->as_string() == arch) {
      return std::string(d->as_string());
    }
  }
  return "";
}

std::string ImageKey(const std::string& image) {
  std::string key = Flat(image);
  if (key.size() > 80) key.resize(80);
  char hash[17];
  snprintf(hash, sizeof(hash), "%016zx", std::hash<std::string>{}(image));
  return key + "-" + hash;
}

// Runs argv (PATH searched) with stdout and stderr as given (-1: ours) and
// waits: its exit status (128 + signal), or -1 when it could not start.
int RunTool(const std::vector<std::string>& argv, int out_fd) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  }
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::unique_ptr<Executor> NewContainerExecutor(ContainerOptions options,
                                               std::unique_ptr<Executor> processes) {
  return std::make_unique<ContainerExecutor>(std::move(options), std::move(processes));
}

namespace {

// The pod's GPUs' edits (gpu_devices.h); none ("how" empty) for a pod
// without GPUs or with simulated ones.
Result<GpuEdits> PodGpuEdits(const json::object& pod) {
  const json::value* list = pod.if_contains("gpuDevices");
  if (list == nullptr || !list->is_array() || list->as_array().empty()) return GpuEdits{};
  std::vector<PodGpu> gpus;
  auto num = [](const json::object& o, const char* k) {
    const json::value* v = o.if_contains(k);
    return v != nullptr && v->is_int64() ? static_cast<int>(v->as_int64()) : -1;
  };
  for (const json::value& v : list->as_array()) {
    if (!v.is_object()) continue;
    const json::object& o = v.as_object();
    gpus.push_back(PodGpu{std::string(o.at("uuid").as_string()), num(o, "index"), num(o, "minor"),
                          num(o, "gpuInstance"), num(o, "computeInstance")});
  }
  GpuHost host;
  if (const json::value* r = pod.if_contains("gpuRoot"); r && r->is_string()) {
    host.root = std::string(r->as_string());
  }
  host.cdi_dirs = Strings(pod.if_contains("cdiDirs"));
  return ResolveGpuEdits(gpus, host);
}

}  // namespace

int RunContainer(const std::string& pod_json, std::ostream& err) {
  Result<json::value> pod = ReadJson(pod_json);
  if (!pod.ok() || !pod->is_object()) {
    err << "allot container-run: " << (pod.ok() ? pod_json + " is not an object" : pod.status().message()) << "\n";
    return kExitSetup;
  }
  const json::object& p = pod->as_object();
  Result<std::pair<std::string, ImageConfig>> image = EnsureImage(p, err);
  if (!image.ok()) {
    err << "allot: " << image.status().message() << std::endl;
    // Why, for the agent to report with the exit (Poll).
    (void)WriteFileAtomic(fs::path(pod_json).parent_path().string() + "/pull-error",
                          "ErrImagePull: " + image.status().message());
    return kExitNoImage;
  }
  // The pod has its image: from here on it runs (the agent reports it
  // started, and its run time counts).
  (void)WriteFileAtomic(fs::path(pod_json).parent_path().string() + "/image-ready", "");
  // readOnlyRootFilesystem: false: the pod writes to an overlay of its
  // own over the shared image root, mounted in a mount namespace that
  // runc inherits and that ends with it (nothing to unmount after).
  std::string rootfs = image->first;
  const json::value* ro = p.if_contains("readOnlyRoot");
  const bool writable_root = ro && ro->is_bool() && !ro->as_bool();
  Result<GpuEdits> gpu = PodGpuEdits(p);
  if (!gpu.ok()) {
    err << "allot: " << gpu.status().message() << std::endl;
    return kExitSetup;
  }
  if (!gpu->how.empty()) err << "allot: GPUs through " << gpu->how << std::endl;
  if (const json::value* sim = p.if_contains("gpusSimulated"); sim && sim->is_bool()) {
    std::string list;
    for (const std::string& g : Strings(p.if_contains("gpus"))) list += (list.empty() ? "" : ",") + g;
    err << "allot: GPUs " << list << " are SIMULATED: no device is given, only CUDA_VISIBLE_DEVICES and "
           "NVIDIA_VISIBLE_DEVICES"
        << std::endl;
  }
  // The driver's files get mount points of their own (files, in image
  // directories), and CDI's hooks write into the root (ldcache, links):
  // in the pod's overlay, never in the shared image.
  if (writable_root || !gpu->mounts.empty() || !gpu->hooks.empty()) {
    Result<std::string> merged =
        OverlayRoot(rootfs, fs::path(pod_json).parent_path().string(), p);
    if (!merged.ok()) {
      err << "allot: " << merged.status().message() << std::endl;
      return kExitSetup;
    }
    rootfs = *merged;
  }
  Result<json::object> config = RuntimeConfig(p, rootfs, image->second, writable_root, *gpu);
  if (!config.ok()) {
    err << "allot: " << config.status().message() << std::endl;
    return kExitSetup;
  }
  if (std::string cmd; CommandMissing(*config, &cmd)) {
    err << "allot: executable file not found: " << cmd << " (not in the image"
        << (cmd.find('/') == std::string::npos ? " on its PATH" : "") << ")" << std::endl;
    return kExitNoCommand;
  }
  const std::string bundle = fs::path(pod_json).parent_path().string();
  if (Status s = WriteFileAtomic(bundle + "/config.json", json::serialize(*config)); !s.ok()) {
    err << "allot: " << s.message() << std::endl;
    return kExitSetup;
  }
  err.flush();
  const std::string runtime(p.at("runtime").as_string());
  const std::string root = std::string(p.at("stateDir").as_string()) + "/runc";
  const std::string id(p.at("runtimeId").as_string());
  std::vector<std::string> argv = {runtime, "--root", root, "run", "--bundle", bundle, id};
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  err << "allot: cannot run the OCI runtime " << runtime << ": " << std::strerror(errno) << std::endl;
  return kExitSetup;
}

}  // namespace allot::agent
