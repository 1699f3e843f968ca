// Store helpers shared by every backend: the default URL and the URL
// dispatch to a backend.
#include "store/store.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "core/status.h"
#include "store/sqlite_store.h"

namespace allot::store {

std::string DefaultDataDir() {
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x) {
    return std::string(x) + "/allot";
  }
  const char* home = std::getenv("HOME");
  if (geteuid() != 0 && home != nullptr && *home) {
    return std::string(home) + "/.local/share/allot";
  }
  return "/var/lib/allot";
}

std::string DefaultStoreUrl() { return "sqlite:" + DefaultDataDir() + "/allot.db"; }

Result<std::unique_ptr<Store>> OpenStore(const std::string& url) {
  static constexpr char kSupported[] =
      "supported: \"sqlite:PATH\" (the postgres backend is not built yet)";
  const std::string sqlite_prefix = "sqlite:";
  if (url.rfind(sqlite_prefix, 0) == 0) {
    const std::string path = url.substr(sqlite_prefix.size());
    if (path.empty()) {
      return Status::InvalidArgument("store URL \"" + url +
                                     "\" has an empty path; " + kSupported);
    }
    return OpenSqliteStore(path);
  }
  if (url.rfind("postgres:", 0) == 0 || url.rfind("postgresql:", 0) == 0) {
    return Status::InvalidArgument(
        "store URL \"" + url +
        "\": the postgres backend is not built yet; supported: "
        "\"sqlite:PATH\"");
  }
  return Status::InvalidArgument("unsupported store URL \"" + url + "\"; " +
                                 kSupported);
}

}  // namespace allot::store
