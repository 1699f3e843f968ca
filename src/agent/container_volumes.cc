#include "agent/container_volumes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

namespace allot::agent {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

const char* TypeName(core::Volume::Type t) {
  switch (t) {
    case core::Volume::Type::kEmptyDir: return "emptyDir";
    case core::Volume::Type::kHostPath: return "hostPath";
    case core::Volume::Type::kSecret: return "secret";
    case core::Volume::Type::kClaim: return "claim";
  }
  return "?";
}

// Writes `content` to `path` with `mode`, whole (a new file).
Status WriteNew(const std::string& path, const std::string& content, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return Status::FailedPrecondition("cannot write " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n <= 0) {
      ::close(fd);
      return Status::FailedPrecondition("cannot write " + path + ": " + std::strerror(errno));
    }
    done += size_t(n);
  }
  ::close(fd);
  return Status::Ok();
}

bool SafeRelative(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : fs::path(p)) {
    if (part == "..") return false;
  }
  return true;
}

// Makes `rel` (absolute inside the container) a directory under `rootfs`,
// one component at a time, refusing the image's symbolic links (one could
// point anywhere on the host).
Status MakeMountPoint(const std::string& rootfs, const std::string& path) {
  fs::path p(rootfs);
  std::error_code ec;
  for (const auto& part : fs::path(path).relative_path()) {
    if (part == "..") return Status::InvalidArgument("mount path " + path + " has ..");
    p /= part;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (fs::is_symlink(st)) {
      return Status::FailedPrecondition("mount path " + path +
                                        " crosses a symbolic link of the image");
    }
    if (!fs::exists(st)) fs::create_directory(p, ec);
    if (ec || !fs::is_directory(p, ec)) {
      return Status::FailedPrecondition("cannot make mount point " + path +
                                        " in the image (a file is in the way?)");
    }
  }
  return Status::Ok();
}

// Chowns `path` and what is in it to the pod's host ids.
void OwnTree(const std::string& path, int64_t uid, int64_t gid) {
  std::error_code ec;
  (void)::lchown(path.c_str(), uid_t(uid), gid_t(gid));
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    (void)::lchown(it->path().c_str(), uid_t(uid), gid_t(gid));
  }
}

}  // namespace

Status WritePodVolumes(const PodSpec& spec, const std::string& dir,
                       const std::string& volume_root, json::object* pod) {
  json::array vols;
  std::error_code ec;
  for (const core::Volume& v : spec.volumes) {
    if (!SafeRelative(v.name) || v.name.find('/') != std::string::npos) {
      return Status::InvalidArgument("volume name " + v.name + " is not a plain name");
    }
    json::object vo{{"name", v.name}, {"type", TypeName(v.type)}, {"readOnly", v.read_only}};
    const std::string own = dir + "/volumes/" + v.name;
    switch (v.type) {
      case core::Volume::Type::kEmptyDir:
        vo["source"] = own;
        vo["medium"] = v.medium;
        vo["sizeLimitBytes"] = v.size_limit_bytes;
        break;
      case core::Volume::Type::kSecret:
        vo["source"] = own;
        vo["readOnly"] = true;
        fs::create_directories(own, ec);
        for (const proto::PodFile& f : spec.files) {
          if (f.volume != v.name) continue;
          if (!SafeRelative(f.path) || f.path.find('/') != std::string::npos) {
            return Status::InvalidArgument("secret key " + f.path + " is not a file name");
          }
          ALLOT_RETURN_IF_ERROR(WriteNew(own + "/" + f.path, f.content, 0400));
        }
        break;
      case core::Volume::Type::kHostPath:
        if (v.path.empty() || v.path[0] != '/') {
          return Status::InvalidArgument("hostPath " + v.path + " is not absolute");
        }
        vo["source"] = v.path;
        break;
      case core::Volume::Type::kClaim:
        if (!SafeRelative(v.claim) || v.claim.find('/') != std::string::npos) {
          return Status::InvalidArgument("claim " + v.claim + " is not a plain name");
        }
        vo["source"] = volume_root + "/" + spec.tenant + "/" + v.claim;
        vo["tenantDir"] = volume_root + "/" + spec.tenant;
        break;
    }
    vols.push_back(std::move(vo));
  }
  json::array mounts;
  for (const core::VolumeMount& m : spec.mounts) {
    bool declared = false;
    for (const core::Volume& v : spec.volumes) declared |= v.name == m.name;
    if (!declared) return Status::InvalidArgument("mount of undeclared volume " + m.name);
    if (m.mount_path.empty() || m.mount_path[0] != '/') {
      return Status::InvalidArgument("mount path " + m.mount_path + " is not absolute");
    }
    if (!m.sub_path.empty() && !SafeRelative(m.sub_path)) {
      return Status::InvalidArgument("subPath " + m.sub_path + " leaves its volume");
    }
    mounts.push_back(json::object{{"name", m.name},
                                  {"mountPath", m.mount_path},
                                  {"subPath", m.sub_path},
                                  {"readOnly", m.read_only}});
  }
  (*pod)["volumes"] = std::move(vols);
  (*pod)["mounts"] = std::move(mounts);
  if (!spec.registry_auth.empty()) {
    const std::string auth = dir + "/auth.json";
    ALLOT_RETURN_IF_ERROR(WriteNew(auth, spec.registry_auth, 0600));
    (*pod)["authFile"] = auth;
  }
  if (spec.run_as_user) (*pod)["runAsUser"] = *spec.run_as_user;
  if (spec.run_as_group) (*pod)["runAsGroup"] = *spec.run_as_group;
  (*pod)["runAsNonRoot"] = spec.run_as_non_root;
  (*pod)["readOnlyRoot"] = spec.read_only_root;
  return Status::Ok();
}

Status MountVolumes(const json::object& pod, const std::string& rootfs, int64_t host_uid,
                    int64_t host_gid, json::array* mounts) {
  // The tenant's root in its user namespace (no user namespace: root).
  int64_t base = 0;
  if (const json::value* b = pod.if_contains("hostIdBase"); b && b->is_int64()) {
    base = b->as_int64();
  }
  auto str = [](const json::object& o, const char* k) {
    const json::value* v = o.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  auto flag = [](const json::object& o, const char* k) {
    const json::value* v = o.if_contains(k);
    return v && v->is_bool() && v->as_bool();
  };
  const json::value* vols = pod.if_contains("volumes");
  const json::value* ms = pod.if_contains("mounts");
  if (vols == nullptr || ms == nullptr || !vols->is_array() || !ms->is_array()) {
    return Status::Ok();
  }
  std::map<std::string, const json::object*> by_name;
  std::error_code ec;
  for (const json::value& v : vols->as_array()) {
    const json::object& vo = v.as_object();
    by_name[str(vo, "name")] = &vo;
    const std::string type = str(vo, "type"), source = str(vo, "source");
    if (type == "emptyDir" && str(vo, "medium") != "Memory") {
      fs::create_directories(source, ec);
      ::chmod(source.c_str(), 0750);
      OwnTree(source, host_uid, host_gid);
    } else if (type == "secret") {
      ::chmod(source.c_str(), 0500);
      OwnTree(source, host_uid, host_gid);
    } else if (type == "claim") {
      // The tenant's directory: its pods' ids only (the tenant's root in
      // its user namespace); the claim in it, shared by the tenant's pods.
      const std::string tenant_dir = str(vo, "tenantDir");
      fs::create_directories(fs::path(tenant_dir).parent_path(), ec);
      ::chmod(fs::path(tenant_dir).parent_path().c_str(), 0711);
      if (!fs::exists(tenant_dir, ec)) {
        fs::create_directory(tenant_dir, ec);
        ::chmod(tenant_dir.c_str(), 0700);
        (void)::chown(tenant_dir.c_str(), uid_t(base), gid_t(base));
      }
      if (!fs::exists(source, ec)) {
        fs::create_directory(source, ec);
        ::chmod(source.c_str(), 0777);
      }
      if (!fs::is_directory(source, ec)) {
        return Status::FailedPrecondition("cannot create the volume " + source);
      }
    } else if (type == "hostPath" && !fs::exists(source, ec)) {
      return Status::NotFound("hostPath " + source + " does not exist on this node");
    }
  }
  for (const json::value& m : ms->as_array()) {
    const json::object& mo = m.as_object();
    const json::object& vo = *by_name.at(str(mo, "name"));
    const std::string dest = str(mo, "mountPath");
    ALLOT_RETURN_IF_ERROR(MakeMountPoint(rootfs, dest));
    const bool ro = flag(mo, "readOnly") || flag(vo, "readOnly");
    if (str(vo, "type") == "emptyDir" && str(vo, "medium") == "Memory") {
      json::array opts{"nosuid", "nodev", "mode=1777"};
      const json::value* size = vo.if_contains("sizeLimitBytes");
      if (size && size->is_int64() && size->as_int64() > 0) {
        opts.push_back(json::string("size=" + std::to_string(size->as_int64())));
      }
      if (ro) opts.push_back("ro");
      mounts->push_back(json::object{{"destination", dest}, {"type", "tmpfs"},
                                     {"source", "tmpfs"}, {"options", std::move(opts)}});
      continue;
    }
    std::string source = str(vo, "source");
    if (const std::string sub = str(mo, "subPath"); !sub.empty()) {
      source += "/" + sub;
      if (!fs::exists(source, ec) && str(vo, "type") != "hostPath") {
        fs::create_directories(source, ec);
        OwnTree(source, host_uid, host_gid);
      }
    }
    json::array opts{"rbind", "nosuid", "nodev"};
    if (ro) opts.push_back("ro");
    mounts->push_back(json::object{{"destination", dest}, {"type", "none"},
                                   {"source", source}, {"options", std::move(opts)}});
  }
  return Status::Ok();
}

}  // namespace allot::agent
