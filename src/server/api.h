// Api: the HTTP/JSON API of `allot serve` (docs/api/openapi.yaml).
//
// Runs on the network threads: routes the request, turns away one without a
// live bearer token (TokenIndex) before reading its body, parses and
// size-checks the body there (YAML/JSON parsing is the expensive part), then
// posts one command to the Owner, which authenticates again (a token may be
// revoked in between), authorizes, changes state, audits, and replies after
// the commit. A refused token is audited by the Owner too.
#pragma once

#include <memory>
#include <string>

#include "net/http.h"
#include "server/owner.h"

namespace allot::server {

inline constexpr char kVersion[] = "0.2.0";

class Api {
 public:
  Api(Owner* owner, std::shared_ptr<const TokenIndex> tokens)
      : owner_(owner), tokens_(std::move(tokens)) {}
  void Handle(std::shared_ptr<net::Exchange> ex);

 private:
  Owner* owner_;
  std::shared_ptr<const TokenIndex> tokens_;
};

// {"error":{"code","message","field"}} with the HTTP status for `s`.
net::Response ErrorResponse(const Status& s);
int HttpStatusFor(StatusCode code);

}  // namespace allot::server
