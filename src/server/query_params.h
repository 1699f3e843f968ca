// The query parameters each API route takes (docs/api/openapi.yaml).
//
// Checked once, before a route runs: a parameter the route does not take,
// or a flag that is neither true nor false, is a 400 naming it, instead of
// being ignored (`?watch=maybe` answered with a plain list). A parameter's
// value beyond its type (a range, an enum) is checked where it is used.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::server {

// `seg`: the path below /api/v1/ split on '/' (no trailing empty segment);
// empty for /metrics. A route that does not exist passes (the router
// answers 404 or 405 for it).
Status CheckQuery(const std::string& method, const std::vector<std::string>& seg,
                  const std::map<std::string, std::string>& query);

// A flag's value: true for "true" and "1", false for "false" and "0".
bool QueryFlag(const std::string& v);

}  // namespace allot::server
