#include "ctrl/registry.h"

#include "ctrl/autoscaler.h"
#include "ctrl/deadlines.h"
#include "ctrl/gang_restart.h"
#include "ctrl/idle_parker.h"
#include "ctrl/node_lifecycle.h"
#include "ctrl/park_limit.h"

namespace allot::ctrl {

std::vector<std::unique_ptr<Controller>> DefaultControllers(const Options& o) {
  std::vector<std::unique_ptr<Controller>> c;
  c.push_back(std::make_unique<NodeLifecycle>(o));
  c.push_back(std::make_unique<GangRestart>());
  c.push_back(std::make_unique<Deadlines>());
  c.push_back(std::make_unique<IdleParker>());
  c.push_back(std::make_unique<ParkLimit>());
  c.push_back(std::make_unique<Autoscaler>());
  return c;
}

}  // namespace allot::ctrl
