#include "agent/tenant_ids.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace allot::agent {

TenantIds::TenantIds(std::string file) : file_(std::move(file)) {
  std::ifstream in(file_);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) tenants_.push_back(line);
  }
}

size_t TenantIds::Index(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(tenants_.begin(), tenants_.end(), tenant);
  if (it != tenants_.end()) return static_cast<size_t>(it - tenants_.begin());
  tenants_.push_back(tenant);
  // Whole or not at all: a torn file would renumber tenants.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file_).parent_path(), ec);
  const std::string tmp = file_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const std::string& t : tenants_) out << t << "\n";
  }
  std::rename(tmp.c_str(), file_.c_str());
  return tenants_.size() - 1;
}

}  // namespace allot::agent
