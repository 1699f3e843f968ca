// The dashboard's static files (web/src and uPlot from web/node_modules),
// compiled into the binary at build time (CMake writes gen/web_assets.cc),
// so `allot serve` and `allot up` serve it at / with no files around and no
// network.
#pragma once

#include <cstddef>
#include <string>

namespace allot::server {

struct WebAsset {
  const char* path;          // "/", "/ui/app.js", ...
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

// The asset served at `path`, or null.
const WebAsset* FindWebAsset(const std::string& path);

}  // namespace allot::server
