// The ClusterQueue annotation allot.dev/pool-order (docs/autoscaling.md):
// which autoscaled pools its workloads' nodes come from first. By default
// on-prem before edge before cloud, then the cheapest per GPU; the
// annotation lists locations in the order wanted ("cloud,onprem": a team
// that wants cloud speed first; locations not listed follow in the default
// order), or is "price" (the cheapest per GPU wherever it is).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::core {

inline constexpr char kPoolOrderKey[] = "allot.dev/pool-order";

// The order a value asks for: one rank per location ("onprem", "edge",
// "cloud"; lower first), all 0 for "price". An error names the value.
struct PoolOrder {
  int32_t onprem = 0, edge = 1, cloud = 2;
  int32_t Rank(std::string_view location) const;
};
Result<PoolOrder> ParsePoolOrder(std::string_view value);

}  // namespace allot::core
