#include "core/pool_order.h"

#include <array>

namespace allot::core {

int32_t PoolOrder::Rank(std::string_view location) const {
  return location == "onprem" ? onprem : location == "edge" ? edge : cloud;
}

Result<PoolOrder> ParsePoolOrder(std::string_view value) {
  if (value == "price") return PoolOrder{0, 0, 0};
  const std::array<std::string_view, 3> kDefault = {"onprem", "edge", "cloud"};
  std::vector<std::string_view> listed;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    std::string_view loc = value.substr(start, end - start);
    while (!loc.empty() && loc.front() == ' ') loc.remove_prefix(1);
    while (!loc.empty() && loc.back() == ' ') loc.remove_suffix(1);
    bool known = false;
    for (std::string_view k : kDefault) known = known || loc == k;
    bool twice = false;
    for (std::string_view l : listed) twice = twice || l == loc;
    if (!known || twice) {
      return Status::InvalidArgument(
          std::string(kPoolOrderKey) + ": '" + std::string(value) +
          "': give locations in the order wanted, each once (onprem, edge, cloud; e.g. "
          "\"cloud,onprem\"), or \"price\" (the cheapest per GPU wherever it is)");
    }
    listed.push_back(loc);
    start = end + 1;
  }
  // Listed first in their order, then the rest in the default order.
  for (std::string_view k : kDefault) {
    bool in = false;
    for (std::string_view l : listed) in = in || l == k;
    if (!in) listed.push_back(k);
  }
  PoolOrder o;
  for (size_t i = 0; i < listed.size(); ++i) {
    if (listed[i] == "onprem") o.onprem = int32_t(i);
    if (listed[i] == "edge") o.edge = int32_t(i);
    if (listed[i] == "cloud") o.cloud = int32_t(i);
  }
  return o;
}

}  // namespace allot::core
