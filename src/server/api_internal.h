// Helpers shared by the API's files (api.cc, agent_broker.cc); internal to
// src/server. Pure functions: safe on any thread.
#pragma once

#include <boost/json.hpp>

#include "net/http.h"

namespace allot::server {

// `v` serialized, with a trailing newline, as a response with `status`.
net::Response JsonResponse(int status, const boost::json::value& v);

}  // namespace allot::server
