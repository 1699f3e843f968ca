// CgroupManager and PodCgroup (see cgroup.h for the contract).
//
// Files written, per pod (only what the pod requests):
//   v2: cpu.max "QUOTA 100000", memory.max BYTES, memory.swap.max 0 and
//       memory.oom.group 1 (an OOM kill takes the whole pod, as Kubernetes
//       does since 1.28) where the kernel has them;
//   v1: cpu.cfs_period_us 100000, cpu.cfs_quota_us QUOTA,
//       memory.limit_in_bytes BYTES and memory.memsw.limit_in_bytes BYTES
//       where swap accounting exists.
// The child joins by writing "0" to each cgroup.procs (descriptors opened
// here) between fork and exec, so nothing it runs starts outside.
#include "agent/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace allot::agent {
namespace {

constexpr int64_t kCpuPeriodUs = 100000;
constexpr int64_t kMinCpuQuotaUs = 1000;  // The kernel's minimum.
constexpr char kAgentLeaf[] = "allot-agent";

std::string Errno(int err) { return std::strerror(err); }

std::optional<std::string> ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// Writes `text` to a cgroup file in one write(); the errno, 0 on success.
int WriteErrno(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n;
  do {
    n = write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  int err = n == static_cast<ssize_t>(text.size()) ? 0 : (n < 0 ? errno : EIO);
  close(fd);
  return err;
}

Status WriteFile(const std::string& path, const std::string& text) {
  int err = WriteErrno(path, text);
  if (err == 0) return Status::Ok();
  return Status::FailedPrecondition("cannot write \"" + text + "\" to " + path +
                                    ": " + Errno(err));
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The number after `key` in "key N" lines (memory.events,
// memory.oom_control); -1 when there is no such line.
int64_t KeyedValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  int64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return -1;
}

std::vector<pid_t> Procs(const std::string& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(ReadFile(dir + "/cgroup.procs").value_or(""));
  for (long p; in >> p;) pids.push_back(static_cast<pid_t>(p));
  return pids;
}

// A mount of /proc/self/mountinfo.
struct Mount {
  std::string root;   // The hierarchy path mounted there ("/" usually).
  std::string point;  // Where ("/sys/fs/cgroup/memory").
  std::string fstype;
  std::vector<std::string> super_options;  // "rw", "cpu", "cpuacct", ...
};

// Undoes mountinfo's octal escapes (\040 for a space).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (std::all_of(oct.begin(), oct.end(), [](char c) {
            return c >= '0' && c <= '7';
          })) {
        out += static_cast<char>(std::stoi(oct, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<Mount> CgroupMounts() {
  std::vector<Mount> mounts;
  std::istringstream in(ReadFile("/proc/self/mountinfo").value_or(""));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = Words(line);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    Mount m;
    m.root = Unescape(f[3]);
    m.point = Unescape(f[4]);
    m.fstype = *(dash + 1);
    m.super_options = Split(*(dash + 3), ',');
    if (m.fstype == "cgroup" || m.fstype == "cgroup2") mounts.push_back(m);
  }
  return mounts;
}

// /proc/self/cgroup: "ID:CONTROLLERS:PATH" lines.
struct CgroupLine {
  std::string id;
  std::vector<std::string> controllers;  // Empty for v2's "0::/path".
  std::string path;
};

std::vector<CgroupLine> OwnCgroups() {
  std::vector<CgroupLine> out;
  std::istringstream in(ReadFile("/proc/self/cgroup").value_or(""));
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.push_back({line.substr(0, a), Split(line.substr(a + 1, b - a - 1), ','),
                   line.substr(b + 1)});
  }
  return out;
}

// Where hierarchy path `path` (as /proc/self/cgroup gives it) is on disk
// under mount `m`.
Result<std::string> OnDisk(const Mount& m, const std::string& path) {
  std::string rel = path;
  if (m.root != "/") {
    if (rel.compare(0, m.root.size(), m.root) != 0 ||
        (rel.size() > m.root.size() && rel[m.root.size()] != '/')) {
      return Status::FailedPrecondition("the agent's cgroup " + path +
                                        " is outside the hierarchy mounted at " +
                                        m.point);
    }
    rel = rel.substr(m.root.size());
  }
  if (rel == "/") rel.clear();
  return m.point + rel;
}

Status MakeDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return Status::FailedPrecondition("cannot create " + dir + ": " + Errno(errno));
}

// mkdir -p of `rel` ("/a/b") under `top`, calling `each` on every directory
// from `top` down to the last one.
template <typename Each>
Status MakeDirs(const std::string& top, const std::string& rel, Each each) {
  std::string dir = top;
  ALLOT_RETURN_IF_ERROR(each(dir));
  for (const std::string& part : Split(rel, '/')) {
    dir += "/" + part;
    ALLOT_RETURN_IF_ERROR(MakeDir(dir));
    ALLOT_RETURN_IF_ERROR(each(dir));
  }
  return Status::Ok();
}

std::vector<std::string> SubDirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (e->d_type == DT_DIR || (e->d_type == DT_UNKNOWN && Exists(dir + "/" + n + "/cgroup.procs"))) {
      out.push_back(n);
    }
  }
  closedir(d);
  return out;
}

// A pod id as one directory name: '/' and anything odd become '_'; long
// ids are cut and keep a hash, so names stay unique and under 255 bytes.
std::string PodDirName(const std::string& id) {
  std::string n;
  for (char c : id) {
    n += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  }
  if (n.empty() || n[0] == '.') n = "_" + n;
  if (n.size() > 200) {
    uint64_t h = 14695981039346656037ull;
    for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
    n = n.substr(0, 180) + "-" + hex;
  }
  return n;
}

// Enables `controllers` ("+cpu +memory") for the children of `dir`.
Status EnableControllers(const std::string& dir, const std::vector<std::string>& controllers) {
  if (controllers.empty()) return Status::Ok();
  std::vector<std::string> have =
      Words(ReadFile(dir + "/cgroup.subtree_control").value_or(""));
  std::string add;
  for (const std::string& c : controllers) {
    if (!Contains(have, c)) add += (add.empty() ? "+" : " +") + c;
  }
  if (add.empty()) return Status::Ok();
  int err = WriteErrno(dir + "/cgroup.subtree_control", add);
  if (err == 0) return Status::Ok();
  std::string why = "cannot enable " + add + " in " + dir + ": " + Errno(err);
  if (err == EBUSY) {
    why += " (processes live there, and cgroup v2 gives controllers only to "
           "cgroups without processes of their own)";
  }
  return Status::FailedPrecondition(why);
}

}  // namespace

const char* ToString(CgroupMode m) {
  switch (m) {
    case CgroupMode::kNone: return "none";
    case CgroupMode::kV1: return "v1";
    case CgroupMode::kV2: return "v2";
  }
  return "none";
}

// ---- PodCgroup ----------------------------------------------------------

PodCgroup::PodCgroup(CgroupMode mode, std::vector<std::string> dirs,
                     std::string memory_dir, std::vector<int> join_fds,
                     CgroupLimits limits)
    : mode_(mode),
      dirs_(std::move(dirs)),
      memory_dir_(std::move(memory_dir)),
      join_fds_(std::move(join_fds)),
      limits_(limits) {}

PodCgroup::~PodCgroup() { CloseJoinFds(); }

void PodCgroup::CloseJoinFds() {
  for (int fd : join_fds_) close(fd);
  join_fds_.clear();
}

void PodCgroup::KillAll() {
  if (mode_ == CgroupMode::kV2 && !dirs_.empty() &&
      WriteErrno(dirs_[0] + "/cgroup.kill", "1") == 0) {
    return;
  }
  for (const std::string& d : dirs_) {
    for (pid_t pid : Procs(d)) {
      if (pid > 0) kill(pid, SIGKILL);
    }
  }
}

int64_t PodCgroup::OomKills() const {
  if (memory_dir_.empty()) return 0;
  const char* file = mode_ == CgroupMode::kV2 ? "/memory.events" : "/memory.oom_control";
  return std::max<int64_t>(0, KeyedValue(ReadFile(memory_dir_ + file).value_or(""), "oom_kill"));
}

bool PodCgroup::MemoryLimitHit() const {
  if (memory_dir_.empty()) return false;
  if (mode_ == CgroupMode::kV2) {
    return KeyedValue(ReadFile(memory_dir_ + "/memory.events").value_or(""), "max") > 0;
  }
  return std::atoll(ReadFile(memory_dir_ + "/memory.failcnt").value_or("0").c_str()) > 0;
}

bool PodCgroup::Remove() {
  bool gone = true;
  for (const std::string& d : dirs_) {
    if (rmdir(d.c_str()) != 0 && errno != ENOENT) gone = false;
  }
  return gone;
}

// ---- CgroupManager ------------------------------------------------------

namespace {

// The cpu and memory hierarchies the agent uses, as Detect finds them.
struct Found {
  std::vector<CgroupManager::Hierarchy> hierarchies;
  std::string where;  // For the description.
};

Result<Found> SetUpV2(const CgroupOptions& o, const std::vector<Mount>& mounts,
                      const std::vector<CgroupLine>& own) {
  auto mnt = std::find_if(mounts.begin(), mounts.end(),
                          [](const Mount& m) { return m.fstype == "cgroup2"; });
  if (mnt == mounts.end()) {
    return Status::FailedPrecondition("no cgroup v2 hierarchy is mounted");
  }
  auto line = std::find_if(own.begin(), own.end(), [](const CgroupLine& l) {
    return l.id == "0" && l.controllers.empty();
  });
  if (line == own.end()) {
    return Status::FailedPrecondition("the agent is in no cgroup v2 group");
  }
  Result<std::string> own_dir = OnDisk(*mnt, line->path);
  if (!own_dir.ok()) return own_dir.status();
  // The controllers the base can hand on: from the top when the parent is
  // named (each level is enabled from there down), else the agent's own.
  const std::string from = o.parent.empty() ? *own_dir : mnt->point;
  std::vector<std::string> avail =
      Words(ReadFile(from + "/cgroup.controllers").value_or(""));
  std::vector<std::string> enable, missing;
  for (const char* c : {"cpu", "memory"}) {
    (Contains(avail, c) ? enable : missing).push_back(c);
  }
  if (!missing.empty() && !o.TEST_v2_without_controllers) {
    std::string list;
    for (const std::string& c : missing) list += (list.empty() ? "" : " and ") + c;
    bool in_v1 = std::any_of(mounts.begin(), mounts.end(), [&](const Mount& m) {
      return m.fstype == "cgroup" && Contains(m.super_options, missing[0]);
    });
    return Status::FailedPrecondition(
        "cgroup v2 at " + mnt->point + " offers no " + list + " controller" +
        (from == mnt->point ? "" : " to " + from) + (in_v1 ? " (they are on cgroup v1)" : ""));
  }
  auto enable_in = [&](const std::string& dir) { return EnableControllers(dir, enable); };
  std::string base;
  if (!o.parent.empty()) {
    ALLOT_RETURN_IF_ERROR(MakeDirs(mnt->point, o.parent, enable_in));
    base = mnt->point + o.parent;
  } else if (*own_dir == mnt->point) {
    // The top of the hierarchy may hold processes and hand on controllers.
    ALLOT_RETURN_IF_ERROR(enable_in(*own_dir));
    base = *own_dir;
  } else if (own_dir->size() > sizeof(kAgentLeaf) &&
             own_dir->compare(own_dir->size() - sizeof(kAgentLeaf), std::string::npos,
                              std::string("/") + kAgentLeaf) == 0) {
    // Started from an agent that had moved itself (below): same base.
    base = own_dir->substr(0, own_dir->size() - sizeof(kAgentLeaf));
    ALLOT_RETURN_IF_ERROR(enable_in(base));
  } else {
    // The agent's own cgroup gives controllers to children only once no
    // process lives in it: an agent alone there moves into a leaf.
    std::vector<pid_t> procs = Procs(*own_dir);
    if (procs.size() != 1 || procs[0] != getpid()) {
      return Status::FailedPrecondition(
          "the agent's cgroup " + line->path +
          " holds other processes too, and cgroup v2 gives controllers only to "
          "cgroups without processes: run the agent in a cgroup of its own (a "
          "systemd service with Delegate=yes) or name one with --cgroup-parent");
    }
    const std::string leaf = *own_dir + "/" + kAgentLeaf;
    ALLOT_RETURN_IF_ERROR(MakeDir(leaf));
    ALLOT_RETURN_IF_ERROR(WriteFile(leaf + "/cgroup.procs", "0"));
    Status s = enable_in(*own_dir);
    if (!s.ok()) {
      (void)WriteErrno(*own_dir + "/cgroup.procs", "0");  // Back where it was.
      rmdir(leaf.c_str());
      return s;
    }
    base = *own_dir;
  }
  const std::string agent_dir = base + "/" + o.name;
  ALLOT_RETURN_IF_ERROR(MakeDir(agent_dir));
  ALLOT_RETURN_IF_ERROR(enable_in(agent_dir));
  Found f;
  f.hierarchies.push_back({agent_dir, Contains(enable, "cpu"), Contains(enable, "memory")});
  f.where = agent_dir;
  if (enable.size() < 2) f.where += " (TEST: without cpu and memory controllers)";
  return f;
}

Result<Found> SetUpV1(const CgroupOptions& o, const std::vector<Mount>& mounts,
                      const std::vector<CgroupLine>& own) {
  Found f;
  for (const char* c : {"cpu", "memory"}) {
    auto mnt = std::find_if(mounts.begin(), mounts.end(), [&](const Mount& m) {
      return m.fstype == "cgroup" && Contains(m.super_options, c);
    });
    if (mnt == mounts.end()) {
      return Status::FailedPrecondition(std::string("no cgroup v1 ") + c +
                                        " hierarchy is mounted");
    }
    auto line = std::find_if(own.begin(), own.end(),
                             [&](const CgroupLine& l) { return Contains(l.controllers, c); });
    if (line == own.end()) {
      return Status::FailedPrecondition(std::string("the agent is in no cgroup v1 ") + c +
                                        " group");
    }
    std::string base;
    if (!o.parent.empty()) {
      ALLOT_RETURN_IF_ERROR(MakeDirs(mnt->point, o.parent, [](const std::string&) {
        return Status::Ok();
      }));
      base = mnt->point + o.parent;
    } else {
      Result<std::string> own_dir = OnDisk(*mnt, line->path);
      if (!own_dir.ok()) return own_dir.status();
      base = *own_dir;
    }
    const std::string agent_dir = base + "/" + o.name;
    auto same = std::find_if(f.hierarchies.begin(), f.hierarchies.end(),
                             [&](const CgroupManager::Hierarchy& h) { return h.dir == agent_dir; });
    if (same != f.hierarchies.end()) {  // cpu and memory mounted together.
      (std::string(c) == "cpu" ? same->cpu : same->memory) = true;
      continue;
    }
    ALLOT_RETURN_IF_ERROR(MakeDir(agent_dir));
    f.hierarchies.push_back({agent_dir, std::string(c) == "cpu", std::string(c) == "memory"});
    f.where += (f.where.empty() ? "" : " and ") + std::string(c) + " " + agent_dir;
  }
  return f;
}

}  // namespace

std::unique_ptr<CgroupManager> CgroupManager::Detect(const CgroupOptions& o) {
  ALLOT_CHECK(!o.name.empty() && o.name.find('/') == std::string::npos &&
              o.name != "." && o.name != "..");
  auto m = std::unique_ptr<CgroupManager>(new CgroupManager());
  const std::string no_limits = "; pods run without cpu and memory limits";
  if (!o.enabled) {
    m->description_ = "cgroups: none (--cgroups=off)" + no_limits;
    return m;
  }
  if (!o.parent.empty() && (o.parent[0] != '/' || o.parent.find("..") != std::string::npos)) {
    m->description_ = "cgroups: none (--cgroup-parent " + o.parent +
                      " is not an absolute path inside the hierarchy, like /allot)" + no_limits;
    return m;
  }
  const std::vector<Mount> mounts = CgroupMounts();
  const std::vector<CgroupLine> own = OwnCgroups();
  Result<Found> v2 = SetUpV2(o, mounts, own);
  Result<Found> v1 = Status::FailedPrecondition("not tried");
  if (v2.ok()) {
    m->mode_ = CgroupMode::kV2;
    m->hierarchies_ = v2->hierarchies;
    m->description_ = "cgroups: v2, pods' cgroups under " + v2->where;
  } else if (!o.TEST_v2_without_controllers && (v1 = SetUpV1(o, mounts, own)).ok()) {
    m->mode_ = CgroupMode::kV1;
    m->hierarchies_ = v1->hierarchies;
    m->description_ = "cgroups: v1 (v2: " + v2.status().message() + "), pods' cgroups under " +
                      v1->where;
  } else {
    m->description_ = "cgroups: none (v2: " + v2.status().message() +
                      "; v1: " + v1.status().message() + ")" + no_limits;
    return m;
  }
  m->description_ += ": cpu quota = the pod's cpu request, memory limit = its memory request";
  for (const Hierarchy& h : m->hierarchies_) m->agent_dirs_.push_back(h.dir);

  // Leftovers of an earlier run: emptied and removed.
  std::set<std::string> names;
  for (const Hierarchy& h : m->hierarchies_) {
    for (const std::string& n : SubDirs(h.dir)) names.insert(n);
  }
  for (const std::string& n : names) {
    std::vector<std::string> dirs;
    for (const Hierarchy& h : m->hierarchies_) dirs.push_back(h.dir + "/" + n);
    PodCgroup old(m->mode_, dirs, "", {}, {});
    for (int i = 0; i < 200; ++i) {
      old.KillAll();
      if (old.Remove()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ++m->leftovers_removed_;
  }
  return m;
}

CgroupManager::~CgroupManager() {
  for (const Hierarchy& h : hierarchies_) rmdir(h.dir.c_str());
}

Result<std::unique_ptr<PodCgroup>> CgroupManager::Create(const std::string& pod_id,
                                                         const CgroupLimits& limits) const {
  if (mode_ == CgroupMode::kNone) {
    return Status::FailedPrecondition("this node has no cgroups");
  }
  const std::string name = PodDirName(pod_id);
  std::vector<std::string> dirs;
  std::string memory_dir;
  std::vector<int> fds;
  auto undo = [&](Status s) -> Result<std::unique_ptr<PodCgroup>> {
    for (int fd : fds) close(fd);
    for (const std::string& d : dirs) rmdir(d.c_str());
    return s;
  };
  const std::string quota =
      std::to_string(std::max(kMinCpuQuotaUs, limits.cpu_milli * kCpuPeriodUs / 1000));
  const std::string bytes = std::to_string(limits.memory_bytes);
  for (const Hierarchy& h : hierarchies_) {
    const std::string d = h.dir + "/" + name;
    // An empty one left by a pod of the same id goes first.
    if (mkdir(d.c_str(), 0755) != 0 && (errno != EEXIST || rmdir(d.c_str()) != 0 ||
                                        mkdir(d.c_str(), 0755) != 0)) {
      return undo(Status::FailedPrecondition("cannot create the cgroup " + d + ": " +
                                             Errno(errno)));
    }
    dirs.push_back(d);
    if (h.memory) memory_dir = d;
    Status s;
    if (mode_ == CgroupMode::kV2) {
      if (h.cpu && limits.cpu_milli > 0) {
        s = WriteFile(d + "/cpu.max", quota + " " + std::to_string(kCpuPeriodUs));
      }
      if (s.ok() && h.memory && limits.memory_bytes > 0) {
        s = WriteFile(d + "/memory.max", bytes);
        for (const auto& [file, value] : {std::pair{"/memory.swap.max", "0"},
                                          std::pair{"/memory.oom.group", "1"}}) {
          if (s.ok() && Exists(d + file)) s = WriteFile(d + file, value);
        }
      }
    } else {
      if (h.cpu && limits.cpu_milli > 0) {
        s = WriteFile(d + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
        if (s.ok()) s = WriteFile(d + "/cpu.cfs_quota_us", quota);
      }
      if (s.ok() && h.memory && limits.memory_bytes > 0) {
        s = WriteFile(d + "/memory.limit_in_bytes", bytes);
        if (s.ok() && Exists(d + "/memory.memsw.limit_in_bytes")) {
          s = WriteFile(d + "/memory.memsw.limit_in_bytes", bytes);
        }
      }
    }
    if (!s.ok()) return undo(s);
    int fd = open((d + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      return undo(Status::FailedPrecondition("cannot open " + d + "/cgroup.procs: " +
                                             Errno(errno)));
    }
    fds.push_back(fd);
  }
  return std::make_unique<PodCgroup>(mode_, std::move(dirs), std::move(memory_dir),
                                     std::move(fds), limits);
}

}  // namespace allot::agent
