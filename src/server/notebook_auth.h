// A notebook's credentials (docs/notebooks.md): Jupyter's token for each
// start of its pod, and Allot's sign-in for a browser, which cannot send a
// bearer token with a page it opens: `POST .../workloads/T/N/open` gives a
// link with a ticket (good for kNotebookTicketMs, once), and the proxy
// trades the ticket for an HttpOnly cookie scoped to the notebook's path.
// Both are derived from the server key (Secrets::Derive) and name the API
// token they stand for: nothing is stored, a restart keeps them valid, and
// revoking the token ends them. Owner thread (they read State).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "server/authz.h"

namespace allot::server {

class State;

inline constexpr char kNotebookTicketParam[] = "allot-ticket";
// A tenant annotation: "true" makes its notebooks their owner's alone.
inline constexpr char kPrivateNotebooksAnnotation[] = "allot.dev/private-notebooks";
inline constexpr char kNotebookCookieName[] = "allot-notebook";
inline constexpr int64_t kNotebookTicketMs = 2 * 60 * 1000;
inline constexpr int64_t kNotebookSessionMs = 12 * 3600 * 1000;

// Whether `p` may reach notebook `key` (`rec`): whoever may change the
// tenant's workloads, or only the user who created it when the tenant's
// admin made its notebooks private (kPrivateNotebooksAnnotation). Else,
// as for a notebook that does not exist: NotFound.
Status MayOpenNotebook(const State& st, const Principal& p, const std::string& key);

// The Jupyter token of pod `pod_id` (it changes with every start).
std::string NotebookJupyterToken(const State& st, const std::string& pod_id);

// The value of Allot's notebook cookie in a Cookie header ("" when none),
// and the header without it (what Jupyter may see).
std::string NotebookCookie(const std::string& cookie_header);
std::string WithoutNotebookCookie(const std::string& cookie_header);

struct NotebookCredential {
  // "TOKENID.EXPIRES.SIGNATURE" for token `token_id`, of `kind` ("ticket"
  // or "session"), for workload `key`, good until `expires_ms`.
  static std::string Make(const State& st, const std::string& token_id,
                          const std::string& kind, const std::string& key,
                          int64_t expires_ms);
  // The principal of a valid credential: signed for this kind and key, not
  // expired, its token live; a ticket only the first time.
  static std::optional<Principal> Check(const State& st, const std::string& value,
                                        const std::string& kind, const std::string& key,
                                        int64_t now_ms);
  // A Set-Cookie value for a session on `path`.
  static std::string CookieHeader(const std::string& value, const std::string& path,
                                  int64_t max_age_ms);
};

}  // namespace allot::server
