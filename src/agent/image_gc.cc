#include "agent/image_gc.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace allot::agent {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

int64_t MtimeMs(const fs::path& p, bool follow = true) {
  struct stat st {};
  const int rc = follow ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st);
  if (rc != 0) return 0;
  return int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

int64_t TreeBytes(const fs::path& p) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += st.st_blocks * 512;
  }
  return total;
}

// Image keys the pods on this node name, with when each pod started (its
// pod.json was written).
std::map<std::string, std::vector<int64_t>> PodsByImage(const std::string& state_dir) {
  std::map<std::string, std::vector<int64_t>> out;
  std::error_code ec;
  for (const auto& pod : fs::directory_iterator(state_dir + "/pods", ec)) {
    const fs::path pj = pod.path() / "pod.json";
    std::ifstream in(pj);
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code jec;
    json::value v = json::parse(ss.str(), jec);
    const json::value* image = (!jec && v.is_object()) ? v.as_object().if_contains("image") : nullptr;
    if (image == nullptr || !image->is_string()) continue;
    out[ImageKey(std::string(image->as_string()))].push_back(MtimeMs(pj));
  }
  return out;
}

// Holds an image's pull lock, or nothing when a pull has it.
struct Lock {
  int fd = -1;
  explicit Lock(const fs::path& dir) {
    fd = ::open((dir / "lock").c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~Lock() {
    if (fd >= 0) ::close(fd);
  }
};

struct Candidate {
  fs::path dir;
  int64_t last_used_ms;
};

}  // namespace

int DiskUsedPercent(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0 || s.f_blocks == 0) return 0;
  return int(100 - (100 * uint64_t(s.f_bavail)) / uint64_t(s.f_blocks));
}

ImageGcResult CollectImages(const std::string& state_dir, const ImageGcPolicy& policy,
                            int64_t now_unix_ms, const std::function<int()>& used_percent) {
  ImageGcResult r;
  const std::map<std::string, std::vector<int64_t>> in_use = PodsByImage(state_dir);
  std::vector<Candidate> unused;
  std::error_code ec;
  auto remove = [&](const fs::path& p, const std::string& why) {
    const int64_t bytes = TreeBytes(p);
    std::error_code e;
    fs::remove_all(p, e);
    if (e) return;
    r.bytes += bytes;
    r.removed.push_back(fs::relative(p, state_dir + "/images", e).string() + " (" + why + ")");
  };
  for (const auto& entry : fs::directory_iterator(state_dir + "/images", ec)) {
    if (!entry.is_directory()) continue;
    const fs::path dir = entry.path();
    Lock lock(dir);
    if (lock.fd < 0) continue;  // Being pulled (or not an image).
    const std::string key = dir.filename().string();
    std::error_code e;
    const fs::path current = fs::read_symlink(dir / "current", e);
    const int64_t switched_ms = MtimeMs(dir / "current", /*follow=*/false);
    auto pods = in_use.find(key);
    // Superseded digests: no pod left that started before the switch.
    bool old_pod = false;
    if (pods != in_use.end()) {
      for (int64_t started : pods->second) old_pod |= started < switched_ms;
    }
    for (const auto& d : fs::directory_iterator(dir, e)) {
      const std::string name = d.path().filename().string();
      // A dead pull's files beside its layout (pull-PID.total, .err,
      // .manifest).
      if (name.rfind("pull-", 0) == 0 && !d.is_directory() && !d.is_symlink()) {
        const std::string pid = name.substr(5, name.find('.') - 5);
        if (!fs::exists("/proc/" + pid)) fs::remove(d.path(), e);
        continue;
      }
      // Real directories only: `current` is a link to one.
      if (d.is_symlink() || !d.is_directory() || name == current.string() || old_pod) continue;
      if (name.rfind("pull-", 0) == 0) {
        // A pull that died: its process is gone.
        const std::string pid = name.substr(5);
        if (!fs::exists("/proc/" + pid)) remove(d.path(), "abandoned pull");
        continue;
      }
      if (!current.empty()) remove(d.path(), "superseded");
    }
    if (pods != in_use.end()) continue;
    const int64_t last = std::max(MtimeMs(dir / "last-used"), switched_ms);
    if (policy.max_age_ms > 0 && now_unix_ms - last > policy.max_age_ms) {
      remove(dir, "unused " + std::to_string((now_unix_ms - last) / 3600000) + " h");
      continue;
    }
    unused.push_back({dir, last});
  }
  if (policy.high_percent > 0 && policy.high_percent < 100 && used_percent() > policy.high_percent) {
    std::sort(unused.begin(), unused.end(),
              [](const Candidate& a, const Candidate& b) { return a.last_used_ms < b.last_used_ms; });
    for (const Candidate& c : unused) {
      if (used_percent() <= policy.low_percent) break;
      Lock lock(c.dir);
      if (lock.fd < 0) continue;
      remove(c.dir, "disk over " + std::to_string(policy.high_percent) + "%");
    }
  }
  return r;
}

}  // namespace allot::agent
