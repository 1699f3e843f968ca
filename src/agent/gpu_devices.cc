#include "agent/gpu_devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace allot::agent {
namespace {

constexpr std::string_view kCdiKind = "nvidia.com/gpu";

std::string Under(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return (fs::path(root) / fs::path(path).relative_path()).string();
}

// The node at host_path as a device for the container at `path`.
Result<GpuDeviceNode> Node(const std::string& path, const std::string& host_path) {
  struct stat st;
  if (stat(host_path.c_str(), &st) != 0) {
    return Status::NotFound(host_path + " is missing");
  }
  if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return Status::FailedPrecondition(host_path + " is not a device node");
  }
  return GpuDeviceNode{path, host_path, S_ISCHR(st.st_mode) ? 'c' : 'b',
                       static_cast<int64_t>(major(st.st_rdev)),
                       static_cast<int64_t>(minor(st.st_rdev))};
}

std::vector<std::string> Seq(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n && n.IsSequence()) {
    for (const auto& item : n) out.push_back(item.as<std::string>());
  }
  return out;
}

// Appends a CDI containerEdits object to *out.
Status AddCdiEdits(const YAML::Node& e, GpuEdits* out) {
  if (!e) return Status::Ok();
  if (!e.IsMap()) return Status::InvalidArgument("containerEdits is not a mapping");
  for (const std::string& kv : Seq(e["env"])) out->env.push_back(kv);
  if (const YAML::Node d = e["deviceNodes"]; d && d.IsSequence()) {
    for (const auto& dn : d) {
      if (!dn["path"]) return Status::InvalidArgument("a deviceNode has no path");
      const std::string path = dn["path"].as<std::string>();
      const std::string host = dn["hostPath"] ? dn["hostPath"].as<std::string>() : path;
      GpuDeviceNode node;
      node.path = path;
      node.host_path = host;
      if (dn["major"] && dn["minor"]) {
        node.major = dn["major"].as<int64_t>();
        node.minor = dn["minor"].as<int64_t>();
        if (dn["type"]) {
          const std::string t = dn["type"].as<std::string>();
          if (t != "c" && t != "b") {
            return Status::InvalidArgument("a deviceNode's type is \"" + t + "\", not c or b");
          }
          node.type = t[0];
        }
      } else {
        Result<GpuDeviceNode> n = Node(path, host);
        if (!n.ok()) return n.status();
        node = *n;
      }
      out->devices.push_back(std::move(node));
    }
  }
  if (const YAML::Node m = e["mounts"]; m && m.IsSequence()) {
    for (const auto& mn : m) {
      if (!mn["hostPath"] || !mn["containerPath"]) {
        return Status::InvalidArgument("a mount lacks hostPath or containerPath");
      }
      std::vector<std::string> options = Seq(mn["options"]);
      if (options.empty()) options = {"ro", "nosuid", "nodev", "bind"};
      out->mounts.push_back(GpuMount{mn["hostPath"].as<std::string>(),
                                     mn["containerPath"].as<std::string>(), std::move(options)});
    }
  }
  if (const YAML::Node h = e["hooks"]; h && h.IsSequence()) {
    for (const auto& hn : h) {
      if (!hn["hookName"] || !hn["path"]) {
        return Status::InvalidArgument("a hook lacks hookName or path");
      }
      GpuHook hook;
      hook.stage = hn["hookName"].as<std::string>();
      hook.path = hn["path"].as<std::string>();
      hook.args = Seq(hn["args"]);
      hook.env = Seq(hn["env"]);
      if (hn["timeout"]) hook.timeout_s = hn["timeout"].as<int>();
      out->hooks.push_back(std::move(hook));
    }
  }
  return Status::Ok();
}

// The CDI name of a pod's GPU in a spec: its UUID, or a whole GPU's index.
const YAML::Node* FindDevice(const std::vector<YAML::Node>& devices, const PodGpu& g) {
  for (const YAML::Node& d : devices) {
    const std::string name = d["name"] ? d["name"].as<std::string>() : "";
    if (name == g.uuid) return &d;
  }
  if (g.gpu_instance >= 0 || g.uuid.rfind("MIG-", 0) == 0) return nullptr;
  for (const YAML::Node& d : devices) {
    const std::string name = d["name"] ? d["name"].as<std::string>() : "";
    if (g.index >= 0 && name == std::to_string(g.index)) return &d;
  }
  return nullptr;
}

// ROOT/proc/driver/nvidia-caps/mig-minors (else the host's): "gpu0/gi1/access 12".
Result<std::map<std::string, int>> MigMinors(const std::string& root) {
  std::string file = Under(root, "/proc/driver/nvidia-caps/mig-minors");
  if (!fs::exists(file)) file = "/proc/driver/nvidia-caps/mig-minors";
  std::ifstream in(file);
  if (!in) return Status::NotFound(file + " is missing (is the nvidia-caps module loaded?)");
  std::map<std::string, int> out;
  std::string name;
  int minor = 0;
  while (in >> name >> minor) out[name] = minor;
  return out;
}

// The driver's user-space libraries and tools, as libnvidia-container
// lists them for the compute and utility capabilities.
constexpr std::string_view kLibraries[] = {
    "libcuda",          "libcudadebugger",        "libnvidia-allocator",
    "libnvidia-cfg",    "libnvidia-compiler",     "libnvidia-fatbinaryloader",
    "libnvidia-gpucomp", "libnvidia-ml",          "libnvidia-nvvm",
    "libnvidia-opencl", "libnvidia-pkcs11",       "libnvidia-ptxjitcompiler"};
constexpr std::string_view kTools[] = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                       "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};
constexpr const char* kLibraryDirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                        "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu",
                                        "/lib/aarch64-linux-gnu", "/lib64"};
constexpr const char* kLibraryTarget = "/usr/local/nvidia/lib64";
constexpr const char* kToolTarget = "/usr/local/nvidia/bin";

bool IsDriverLibrary(const std::string& name) {
  for (std::string_view lib : kLibraries) {
    if (name.size() > lib.size() + 3 && name.compare(0, lib.size(), lib) == 0 &&
        name.compare(lib.size(), 4, ".so.") == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<GpuEdits> CdiGpuEdits(const std::vector<PodGpu>& gpus,
                             const std::vector<std::string>& cdi_dirs) {
  // Later directories win (CDI: /var/run/cdi over /etc/cdi).
  std::optional<GpuEdits> found;
  for (const std::string& dir : cdi_dirs) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string ext = e.path().extension().string();
      if (ext == ".yaml" || ext == ".yml" || ext == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      YAML::Node spec;
      try {
        spec = YAML::LoadFile(file.string());
      } catch (const YAML::Exception& e) {
        // Another vendor's broken spec is not ours to refuse pods for.
        std::ifstream in(file);
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        if (text.find(kCdiKind) == std::string::npos) continue;
        return Status::InvalidArgument("CDI spec " + file.string() + ": " + e.what());
      }
      if (!spec.IsMap() || !spec["kind"] || spec["kind"].as<std::string>("") != kCdiKind) continue;
      std::vector<YAML::Node> devices;
      if (const YAML::Node d = spec["devices"]; d && d.IsSequence()) {
        for (const auto& dev : d) devices.push_back(dev);
      }
      GpuEdits edits;
      std::string names;
      bool all = true;
      try {
        Status s = AddCdiEdits(spec["containerEdits"], &edits);
        for (const PodGpu& g : gpus) {
          const YAML::Node* dev = FindDevice(devices, g);
          if (dev == nullptr) {
            all = false;
            break;
          }
          if (s.ok()) s = AddCdiEdits((*dev)["containerEdits"], &edits);
          names += (names.empty() ? "" : ",") + (*dev)["name"].as<std::string>();
        }
        if (all && !s.ok()) {
          return Status::InvalidArgument("CDI spec " + file.string() + ": " + s.message());
        }
      } catch (const YAML::Exception& e) {
        return Status::InvalidArgument("CDI spec " + file.string() + ": " + e.what());
      }
      if (!all) continue;
      edits.how = "CDI " + std::string(kCdiKind) + "=" + names + " (" + file.string() + ")";
      found = std::move(edits);
    }
  }
  if (!found) return Status::NotFound("no CDI spec of kind nvidia.com/gpu names the pod's GPUs");
  return *std::move(found);
}

Result<GpuEdits> DriverGpuEdits(const std::vector<PodGpu>& gpus, const std::string& root) {
  GpuEdits out;
  std::error_code dev_ec;
  const std::string dev_root = fs::is_directory(Under(root, "/dev"), dev_ec) ? root : "/";
  auto add = [&](const std::string& path, bool required, const std::string& why) -> Status {
    for (const GpuDeviceNode& d : out.devices) {
      if (d.path == path) return Status::Ok();
    }
    // A driver root without a /dev of its own (the GPU operator's, at
    // times): the host's nodes.
    Result<GpuDeviceNode> n = Node(path, Under(dev_root, path));
    if (n.ok()) {
      out.devices.push_back(*n);
    } else if (required) {
      return Status::FailedPrecondition("cannot give the pod " + why + ": " +
                                        n.status().message());
    }
    return Status::Ok();
  };
  std::optional<std::map<std::string, int>> caps;
  for (const PodGpu& g : gpus) {
    if (g.uuid.rfind("MIG-", 0) == 0 && (g.gpu_instance < 0 || g.compute_instance < 0)) {
      return Status::FailedPrecondition("cannot give the pod MIG slice " + g.uuid +
                                        ": NVML gave no GPU or compute instance id for it");
    }
    if (g.minor < 0) {
      return Status::FailedPrecondition("cannot give the pod GPU " + g.uuid +
                                        ": its device minor number is unknown (NVML lacks "
                                        "nvmlDeviceGetMinorNumber?)");
    }
    ALLOT_RETURN_IF_ERROR(add("/dev/nvidia" + std::to_string(g.minor), true, "GPU " + g.uuid));
    if (g.gpu_instance < 0) continue;
    if (!caps) {
      Result<std::map<std::string, int>> m = MigMinors(root);
      if (!m.ok()) {
        return Status::FailedPrecondition("cannot give the pod MIG slice " + g.uuid + ": " +
                                          m.status().message());
      }
      caps = *std::move(m);
    }
    const std::string gi = "gpu" + std::to_string(g.minor) + "/gi" +
                           std::to_string(g.gpu_instance);
    for (const std::string& cap :
         {gi + "/access", gi + "/ci" + std::to_string(g.compute_instance) + "/access"}) {
      auto it = caps->find(cap);
      if (it == caps->end()) {
        return Status::FailedPrecondition("cannot give the pod MIG slice " + g.uuid +
                                          ": mig-minors lists no " + cap);
      }
      ALLOT_RETURN_IF_ERROR(add("/dev/nvidia-caps/nvidia-cap" + std::to_string(it->second), true,
                                "MIG slice " + g.uuid + " (" + cap + ")"));
    }
  }
  ALLOT_RETURN_IF_ERROR(add("/dev/nvidiactl", true, "its GPUs"));
  for (const char* p : {"/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
    ALLOT_RETURN_IF_ERROR(add(p, false, p));
  }
  // The libraries, each under the name it has on the host (the real file
  // bound at every symbolic link's name: libcuda.so.1 and libcuda.so.550...).
  std::vector<std::string> names;
  for (const char* dir : kLibraryDirs) {
    std::error_code ec;
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(Under(root, dir), ec)) entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());
    for (const fs::path& p : entries) {
      const std::string name = p.filename().string();
      if (!IsDriverLibrary(name) || std::count(names.begin(), names.end(), name) > 0) continue;
      if (!fs::is_regular_file(p, ec)) continue;  // Follows links; a dangling one is skipped.
      names.push_back(name);
      out.mounts.push_back(GpuMount{fs::canonical(p, ec).string(),
                                    std::string(kLibraryTarget) + "/" + name,
                                    {"ro", "nosuid", "nodev", "bind"}});
    }
  }
  int tools = 0;
  for (std::string_view tool : kTools) {
    for (const char* dir : {"/usr/bin", "/bin", "/usr/sbin"}) {
      const std::string p = Under(root, std::string(dir) + "/" + std::string(tool));
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) continue;
      out.mounts.push_back(GpuMount{fs::canonical(p, ec).string(),
                                    std::string(kToolTarget) + "/" + std::string(tool),
                                    {"ro", "nosuid", "nodev", "bind"}});
      ++tools;
      break;
    }
  }
  if (!names.empty()) out.append_env.push_back(std::string("LD_LIBRARY_PATH=") + kLibraryTarget);
  if (tools > 0) out.append_env.push_back(std::string("PATH=") + kToolTarget);
  std::ostringstream how;
  how << "the driver's files under " << root << " (" << out.devices.size() << " device node(s), "
      << names.size() << " librar" << (names.size() == 1 ? "y" : "ies") << ", " << tools
      << " tool(s))";
  out.how = how.str();
  return out;
}

Result<GpuEdits> ResolveGpuEdits(const std::vector<PodGpu>& gpus, const GpuHost& host) {
  if (gpus.empty()) {
    GpuEdits none;
    none.how = "no GPUs";
    return none;
  }
  Result<GpuEdits> cdi = CdiGpuEdits(gpus, host.cdi_dirs);
  if (cdi.ok() || cdi.status().code() != StatusCode::kNotFound) return cdi;
  return DriverGpuEdits(gpus, host.root);
}

}  // namespace allot::agent
