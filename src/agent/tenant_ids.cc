#include "agent/tenant_ids.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace allot::agent {
namespace {

std::vector<std::string> ReadTenants(const std::string& file) {
  std::vector<std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace

TenantIds::TenantIds(std::string file) : file_(std::move(file)), tenants_(ReadTenants(file_)) {}

Result<size_t> TenantIds::Index(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(tenants_.begin(), tenants_.end(), tenant);
  if (it != tenants_.end()) return static_cast<size_t>(it - tenants_.begin());
  auto fail = [&](const std::string& what) -> Status {
    return Status::FailedPrecondition("cannot record tenant " + tenant + "'s number in " + file_ +
                                      ": " + what + ": " + std::strerror(errno));
  };
  // Other agents on this machine may share the file: under its lock, read
  // it again, then append. Whole, synced, then renamed over the old one: a
  // torn or lost file would renumber tenants.
  const std::filesystem::path dir = std::filesystem::path(file_).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const int lock_fd = ::open((file_ + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return fail("lock");
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock_fd};
  if (::flock(lock_fd, LOCK_EX) != 0) return fail("lock");
  tenants_ = ReadTenants(file_);
  it = std::find(tenants_.begin(), tenants_.end(), tenant);
  if (it != tenants_.end()) return static_cast<size_t>(it - tenants_.begin());
  std::string text;
  for (const std::string& t : tenants_) text += t + "\n";
  text += tenant + "\n";
  const std::string tmp = file_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail("write");
  const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return fail("write");
  if (std::rename(tmp.c_str(), file_.c_str()) != 0) return fail("rename");
  if (const int d = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      d >= 0) {
    (void)::fsync(d);
    ::close(d);
  }
  tenants_.push_back(tenant);
  return tenants_.size() - 1;
}

std::string FirstClosedDir(const std::string& path) {
  std::string closed;
  for (std::filesystem::path p = path; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) closed = p.string();
  }
  return closed;
}

}  // namespace allot::agent
