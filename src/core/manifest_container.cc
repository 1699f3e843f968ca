// Manifest reading, what a pod runs: image, command, environment (with
// secret references), volumes and their mounts, and the security context.
// Read alike from the first container of a Kubernetes pod template
// (manifest_pod.cc) and from allot.dev/v1's compact template, in the
// Kubernetes shapes. What Allot cannot honour is an error that names the
// field and says what it supports instead.
#include <cctype>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/manifest_internal.h"
#include "core/names.h"

namespace allot::core::internal {
namespace {

// ---- Names and paths -------------------------------------------------------

// The name of a Secret (or a claim): a DNS-1123 subdomain, as Kubernetes
// names objects; so never "." or ".." where the agent uses it as a path.
Status GetObjectName(const Val& v, std::string* out) {
  ALLOT_RETURN_IF_ERROR(v.GetName(out));
  if (!IsDnsSubdomain(*out)) {
    return v.Error(Quote(*out) +
                   " is not a valid name (a DNS-1123 subdomain: lower-case "
                   "letters, digits, '-' and '.')");
  }
  return Status::Ok();
}

// A Secret's key, as Kubernetes allows it ([-._a-zA-Z0-9]+, not "." or
// ".."): also the file name of a secret volume.
Status GetSecretKey(const Val& v, std::string* out) {
  ALLOT_RETURN_IF_ERROR(v.GetName(out));
  bool ok = out->size() <= 253 && *out != "." && *out != "..";
  for (char ch : *out) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ||
                ch == '_' || ch == '.');
  }
  return ok ? Status::Ok()
            : v.Error(Quote(*out) + " is not a valid key (letters, digits, "
                                    "'-', '_' and '.'; not . or ..)");
}

// A path with no empty, "." or ".." part: absolute ("/a/b") or relative
// ("a/b"). Kubernetes refuses ".." in these paths too.
Status GetCleanPath(const Val& v, bool absolute, std::string* out) {
  ALLOT_RETURN_IF_ERROR(v.GetName(out));
  const std::string& p = *out;
  bool ok = (p[0] == '/') == absolute && p != "/";
  size_t start = absolute ? 1 : 0;
  while (ok && start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string_view part(p.data() + start, end - start);
    ok = !part.empty() && part != "." && part != "..";
    start = end + 1;
  }
  if (ok) return Status::Ok();
  return v.Error(Quote(p) + " must be " +
                 (absolute ? "an absolute path other than /" : "a relative path") +
                 " without empty, . or .. parts");
}

// ---- Environment -----------------------------------------------------------

// env[].valueFrom: a key of a Secret of the workload's tenant.
Status ParseValueFrom(const Val& v, SecretKeyRef* ref) {
  constexpr char kOnly[] =
      "Allot reads valueFrom.secretKeyRef only; put the value in a Secret of "
      "the tenant, or give it as value";
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      v, {"secretKeyRef"},
      {{"configMapKeyRef", kOnly},
       {"fieldRef", kOnly},
       {"resourceFieldRef", kOnly},
       {"fileKeyRef", kOnly}}));
  Val s = v["secretKeyRef"];
  ALLOT_RETURN_IF_ERROR(s.Require());
  ALLOT_RETURN_IF_ERROR(s.CheckFields({"name", "key", "optional"}));
  ALLOT_RETURN_IF_ERROR(GetObjectName(s["name"], &ref->secret));
  ALLOT_RETURN_IF_ERROR(GetSecretKey(s["key"], &ref->key));
  return s["optional"].Get(&ref->optional);
}

// env entries {name, value} or {name, valueFrom: {secretKeyRef}}; value
// defaults to "".
Status ParseEnv(const Val& v, PodSet* ps) {
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v.Items(&items));
  for (const Val& item : items) {
    ALLOT_RETURN_IF_ERROR(item.CheckFields({"name", "value", "valueFrom"}));
    std::string name, value;
    ALLOT_RETURN_IF_ERROR(item["name"].GetName(&name));
    ALLOT_RETURN_IF_ERROR(item["value"].Get(&value));
    if (item["valueFrom"].unset()) {
      ps->env.emplace_back(std::move(name), std::move(value));
      continue;
    }
    if (!item["value"].unset()) {
      return item["valueFrom"].Error("give value or valueFrom, not both");
    }
    SecretEnvVar& var = ps->env_secrets.emplace_back();
    var.name = std::move(name);
    ALLOT_RETURN_IF_ERROR(ParseValueFrom(item["valueFrom"], &var.ref));
  }
  return Status::Ok();
}

// envFrom entries {secretRef: {name, optional}, prefix}.
Status ParseEnvFrom(const Val& v, std::vector<SecretEnvFrom>* out) {
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v.Items(&items));
  for (const Val& item : items) {
    ALLOT_RETURN_IF_ERROR(CheckPodFields(
        item, {"secretRef", "prefix"},
        {{"configMapRef", "Allot reads envFrom.secretRef only; put the "
                          "values in a Secret of the tenant"}}));
    Val ref = item["secretRef"];
    ALLOT_RETURN_IF_ERROR(ref.Require());
    ALLOT_RETURN_IF_ERROR(ref.CheckFields({"name", "optional"}));
    SecretEnvFrom& e = out->emplace_back();
    ALLOT_RETURN_IF_ERROR(GetObjectName(ref["name"], &e.secret));
    ALLOT_RETURN_IF_ERROR(ref["optional"].Get(&e.optional));
    ALLOT_RETURN_IF_ERROR(item["prefix"].Get(&e.prefix));
  }
  return Status::Ok();
}

}  // namespace

Status ParseRunFields(const Val& v, PodSet* ps) {
  ALLOT_RETURN_IF_ERROR(v["image"].Get(&ps->image));
  if (!v["image"].unset() && ps->image.empty()) {
    return v["image"].Error("is empty; leave it out to run a process on the host");
  }
  ALLOT_RETURN_IF_ERROR(v["imagePullPolicy"].Get(&ps->image_pull_policy));
  if (!ps->image_pull_policy.empty() && ps->image_pull_policy != "Always" &&
      ps->image_pull_policy != "IfNotPresent" && ps->image_pull_policy != "Never") {
    return v["imagePullPolicy"].Error("must be Always, IfNotPresent or Never, got " +
                                      Quote(ps->image_pull_policy));
  }
  ALLOT_RETURN_IF_ERROR(v["command"].Get(&ps->command));
  ALLOT_RETURN_IF_ERROR(v["args"].Get(&ps->args));
  ALLOT_RETURN_IF_ERROR(ParseEnv(v["env"], ps));
  ALLOT_RETURN_IF_ERROR(ParseEnvFrom(v["envFrom"], &ps->env_from));
  ALLOT_RETURN_IF_ERROR(v["workingDir"].Get(&ps->working_dir));
  // The port: `port` (the compact template) or the first of `ports`.
  Val port = v["port"];
  if (port.unset()) {
    std::vector<Val> ports;
    ALLOT_RETURN_IF_ERROR(v["ports"].Items(&ports));
    if (ports.empty()) return Status::Ok();
    port = ports[0]["containerPort"];
    ALLOT_RETURN_IF_ERROR(port.Require());
  }
  ALLOT_RETURN_IF_ERROR(port.Get(&ps->port));
  if (ps->port < 1 || ps->port > 65535) {
    return port.Error("must be a port number, 1 to 65535, got " + std::to_string(ps->port));
  }
  return Status::Ok();
}

namespace {

// ---- Volumes ---------------------------------------------------------------

// emptyDir {medium: "" | Memory, sizeLimit}: scratch space for the pod.
Status ParseEmptyDir(const Val& v, Volume* vol) {
  ALLOT_RETURN_IF_ERROR(v.CheckFields({"medium", "sizeLimit"}));
  vol->type = Volume::Type::kEmptyDir;
  ALLOT_RETURN_IF_ERROR(v["medium"].Get(&vol->medium));
  if (vol->medium != "" && vol->medium != "Memory") {
    return v["medium"].Error("must be \"\" (node disk) or Memory (a tmpfs), got " +
                             Quote(vol->medium));
  }
  Quantity size;
  ALLOT_RETURN_IF_ERROR(v["sizeLimit"].GetNonNegative(&size));
  if (!v["sizeLimit"].unset() && (size.IsZero() || size.milli() % 1000 != 0)) {
    return v["sizeLimit"].Error("must be a whole number of bytes above 0 (leave "
                                "it out for no limit), got " + size.ToString());
  }
  vol->size_limit_bytes = size.milli() / 1000;
  return Status::Ok();
}

// hostPath {path, type}: an existing directory of the node, which an
// admin allows the tenant (the server checks). type "" and Directory are
// what Allot does: bind an existing directory; it never creates one on the
// host (DirectoryOrCreate) nor binds files, sockets or devices.
Status ParseHostPath(const Val& v, Volume* vol) {
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      v, {"path"},
      {{"type",
        "Allot binds an existing directory of the node; it creates none "
        "(DirectoryOrCreate) and binds no files, sockets or devices",
        ", Directory"}}));
  vol->type = Volume::Type::kHostPath;
  return GetCleanPath(v["path"], /*absolute=*/true, &vol->path);
}

// secret {secretName}: every key of the Secret as a file named by the key.
Status ParseSecretVolume(const Val& v, Volume* vol) {
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      v, {"secretName"},
      {{"optional", "a secret volume's Secret must exist", "false"},
       {"items",
        "every key of the Secret is a file named by the key; mount one key "
        "with the mount's subPath"},
       {"defaultMode", "Allot sets the files' mode"}}));
  vol->type = Volume::Type::kSecret;
  return GetObjectName(v["secretName"], &vol->secret);
}

// persistentVolumeClaim {claimName, readOnly}: one of the tenant's
// persistent volumes, a directory the agent keeps per tenant and claim.
Status ParseClaim(const Val& v, Volume* vol) {
  ALLOT_RETURN_IF_ERROR(v.CheckFields({"claimName", "readOnly"}));
  vol->type = Volume::Type::kClaim;
  ALLOT_RETURN_IF_ERROR(GetObjectName(v["claimName"], &vol->claim));
  return v["readOnly"].Get(&vol->read_only);
}

// volumes[]: a DNS-1123 label name and exactly one source of the four
// Allot has.
Status ParseVolume(const Val& v, Volume* vol) {
  ALLOT_RETURN_IF_ERROR(
      v.CheckFieldsIf({"name"}, [](std::string_view) { return true; }));
  ALLOT_RETURN_IF_ERROR(v["name"].GetName(&vol->name));
  if (!IsDnsLabel(vol->name)) {
    return v["name"].Error(Quote(vol->name) + " is not a DNS-1123 label "
                           "(lower-case letters, digits and '-')");
  }
  std::vector<std::pair<std::string, Val>> entries;
  ALLOT_RETURN_IF_ERROR(v.Entries(&entries));
  std::string source;
  for (const auto& [key, unused] : entries) {
    if (key == "name") continue;
    const Val s = v[key];
    if (!source.empty()) {
      return s.Error("a volume has one source; this one has " + source +
                     " too");
    }
    source = key;
    if (key == "emptyDir") {
      ALLOT_RETURN_IF_ERROR(ParseEmptyDir(s, vol));
    } else if (key == "hostPath") {
      ALLOT_RETURN_IF_ERROR(ParseHostPath(s, vol));
    } else if (key == "secret") {
      ALLOT_RETURN_IF_ERROR(ParseSecretVolume(s, vol));
    } else if (key == "persistentVolumeClaim") {
      ALLOT_RETURN_IF_ERROR(ParseClaim(s, vol));
    } else {
      return s.Error("not supported: Allot's volumes are emptyDir, hostPath, "
                     "secret and persistentVolumeClaim");
    }
  }
  if (source.empty()) {
    return v.Error("has no source (emptyDir, hostPath, secret or "
                   "persistentVolumeClaim)");
  }
  return Status::Ok();
}

}  // namespace

Status ParsePodStorage(const Val& v, PodSet* ps) {
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v["imagePullSecrets"].Items(&items));
  for (const Val& item : items) {
    ALLOT_RETURN_IF_ERROR(item.CheckFields({"name"}));
    ALLOT_RETURN_IF_ERROR(
        GetObjectName(item["name"], &ps->image_pull_secrets.emplace_back()));
  }
  items.clear();
  ALLOT_RETURN_IF_ERROR(v["volumes"].Items(&items));
  std::set<std::string> names;
  for (const Val& item : items) {
    Volume& vol = ps->volumes.emplace_back();
    ALLOT_RETURN_IF_ERROR(ParseVolume(item, &vol));
    if (!names.insert(vol.name).second) {
      return item["name"].Error("duplicate volume name " + vol.name);
    }
  }
  return Status::Ok();
}

// volumeMounts[] {name, mountPath, subPath, readOnly}: each names a volume
// of the pod; no two on one path.
Status ParseVolumeMounts(const Val& v, PodSet* ps) {
  std::vector<Val> items;
  ALLOT_RETURN_IF_ERROR(v.Items(&items));
  std::set<std::string> paths;
  for (const Val& item : items) {
    ALLOT_RETURN_IF_ERROR(CheckPodFields(
        item, {"name", "mountPath", "subPath", "readOnly"},
        {{"mountPropagation", "Allot's mounts are private to the pod", "None"},
         {"subPathExpr", "the downward API is not supported; use subPath"},
         {"recursiveReadOnly", "not configurable", "Disabled"}}));
    VolumeMount& m = ps->volume_mounts.emplace_back();
    ALLOT_RETURN_IF_ERROR(item["name"].GetName(&m.name));
    bool declared = false;
    for (const Volume& vol : ps->volumes) declared = declared || vol.name == m.name;
    if (!declared) {
      return item["name"].Error("names no volume of the pod (volumes[].name)");
    }
    ALLOT_RETURN_IF_ERROR(GetCleanPath(item["mountPath"], /*absolute=*/true, &m.mount_path));
    if (!paths.insert(m.mount_path).second) {
      return item["mountPath"].Error("another mount is on " + m.mount_path);
    }
    if (!item["subPath"].unset()) {
      ALLOT_RETURN_IF_ERROR(GetCleanPath(item["subPath"], /*absolute=*/false, &m.sub_path));
    }
    ALLOT_RETURN_IF_ERROR(item["readOnly"].Get(&m.read_only));
  }
  return Status::Ok();
}

namespace {

// ---- Security context ------------------------------------------------------

// A user or group id: 0 to 2^31-1, as Kubernetes allows.
Status GetId(const Val& v, std::optional<int64_t>* out) {
  std::optional<int32_t> id;
  ALLOT_RETURN_IF_ERROR(v.Get(&id));
  if (!id) return Status::Ok();
  if (*id < 0) return v.Error("must not be negative");
  *out = *id;
  return Status::Ok();
}

constexpr char kNeverGranted[] =
    "Allot never grants it: pods run with no new privileges, in a user "
    "namespace, with a minimal set of capabilities";

// The fields of a securityContext that pods and containers share: who the
// process runs as, and seccompProfile.
Status ParseCommonSecurity(const Val& v, PodSet* ps, Val* user) {
  ALLOT_RETURN_IF_ERROR(GetId(v["runAsUser"], &ps->run_as_user));
  if (!v["runAsUser"].unset()) *user = v["runAsUser"];
  ALLOT_RETURN_IF_ERROR(GetId(v["runAsGroup"], &ps->run_as_group));
  ALLOT_RETURN_IF_ERROR(v["runAsNonRoot"].Get(&ps->run_as_non_root));
  // RuntimeDefault (what Pod Security's "restricted" level asks for) is
  // accepted, though the container runtime loads no seccomp profile yet
  // (agent/container.cc; docs/manifests.md says so); no other profile can
  // be given.
  Val seccomp = v["seccompProfile"];
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      seccomp, {},
      {{"type", "Allot loads no profile of a pod's choosing", "RuntimeDefault"},
       {"localhostProfile", "Allot loads no profile of a pod's choosing"}}));
  return Status::Ok();
}

// A container's securityContext (the compact template's too).
Status ParseContainerSecurity(const Val& v, PodSet* ps, Val* user) {
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      v,
      {"runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
       "capabilities", "seccompProfile"},
      {{"privileged", kNeverGranted, "false"},
       {"allowPrivilegeEscalation", kNeverGranted, "false"},
       {"procMount", "a pod's /proc is always masked", "Default"},
       {"seLinuxOptions", "Allot sets no SELinux labels"},
       {"appArmorProfile", "Allot sets no AppArmor profiles"},
       {"windowsOptions", "pods run on Linux"}}));
  ALLOT_RETURN_IF_ERROR(ParseCommonSecurity(v, ps, user));
  ALLOT_RETURN_IF_ERROR(v["readOnlyRootFilesystem"].Get(&ps->read_only_root));
  // Dropping is accepted: the container keeps only runc's three default
  // capabilities (agent/container.h), whatever the list says.
  Val caps = v["capabilities"];
  ALLOT_RETURN_IF_ERROR(caps.CheckFields({"add", "drop"}));
  std::vector<std::string> add, drop;
  ALLOT_RETURN_IF_ERROR(caps["drop"].Get(&drop));
  ALLOT_RETURN_IF_ERROR(caps["add"].Get(&add));
  if (!add.empty()) return caps["add"].Error("not supported: " + std::string(kNeverGranted));
  return Status::Ok();
}

// A pod's securityContext. Supplementary groups and fsGroup are refused:
// Allot changes no volume's owner and runs the process with one group.
Status ParsePodSecurity(const Val& v, PodSet* ps, Val* user) {
  constexpr char kGroups[] =
      "a pod runs with its user and one group (runAsGroup); Allot changes "
      "no volume's owner";
  ALLOT_RETURN_IF_ERROR(CheckPodFields(
      v, {"runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile"},
      {{"fsGroup", kGroups},
       {"fsGroupChangePolicy", kGroups},
       {"supplementalGroups", kGroups},
       {"supplementalGroupsPolicy", kGroups},
       {"sysctls", "a pod cannot set kernel parameters"},
       {"seLinuxOptions", "Allot sets no SELinux labels"},
       {"seLinuxChangePolicy", "Allot sets no SELinux labels"},
       {"appArmorProfile", "Allot sets no AppArmor profiles"},
       {"windowsOptions", "pods run on Linux"}}));
  return ParseCommonSecurity(v, ps, user);
}

}  // namespace

Status ParseSecurityContexts(const Val& pod, const Val& container, PodSet* ps) {
  Val user(nullptr, "");
  ALLOT_RETURN_IF_ERROR(ParsePodSecurity(pod, ps, &user));
  ALLOT_RETURN_IF_ERROR(ParseContainerSecurity(container, ps, &user));
  if (ps->run_as_non_root && ps->run_as_user == 0) {
    return user.Error("is 0 (root) while runAsNonRoot is true");
  }
  return Status::Ok();
}

}  // namespace allot::core::internal
