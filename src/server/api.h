// Api: the HTTP/JSON API of `allot serve` (docs/api/openapi.yaml).
//
// Runs on the network threads: routes the request, parses and size-checks
// its body there (YAML/JSON parsing is the expensive part), then posts one
// command to the Owner, which authenticates, authorizes, changes state,
// audits, and replies after the commit.
#pragma once

#include <memory>
#include <string>

#include "net/http.h"
#include "server/owner.h"

namespace allot::server {

inline constexpr char kVersion[] = "0.2.0";

class Api {
 public:
  explicit Api(Owner* owner) : owner_(owner) {}
  void Handle(std::shared_ptr<net::Exchange> ex);

 private:
  Owner* owner_;
};

// {"error":{"code","message","field"}} with the HTTP status for `s`.
net::Response ErrorResponse(const Status& s);
int HttpStatusFor(StatusCode code);

}  // namespace allot::server
