// The controllers the server and the simulator run, in the order they run
// within a turn.
#pragma once

#include <memory>
#include <vector>

#include "ctrl/controller.h"

namespace allot::ctrl {

std::vector<std::unique_ptr<Controller>> DefaultControllers(const Options& o);

}  // namespace allot::ctrl
