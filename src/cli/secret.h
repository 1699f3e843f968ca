// `allot secret create|get|delete`: a tenant's Secrets (server/secrets.h).
#pragma once

#include <string>
#include <vector>

#include "cli/client.h"

namespace allot::cli {

struct SecretFlags {
  std::string tenant;  // -t; default: the token's, else default.
  std::string name;
  std::string type;                        // Default Opaque.
  std::vector<std::string> literals;       // KEY=VALUE
  std::vector<std::string> files;          // [KEY=]PATH; KEY defaults to the file name.
  std::string manifest;                    // -f: a v1 Secret (YAML or JSON).
  std::string docker_server;               // A kubernetes.io/dockerconfigjson
  std::string docker_username;             // Secret for one registry.
  std::string docker_password;
  bool replace = false;  // create: replace one that exists.
  bool values = false;   // get: show the values (the tenant's admins).
};

int CmdSecretCreate(const ClientFlags& c, const SecretFlags& f);

// `allot apply`'s v1 Secret documents: each is created or replaced through
// the Secrets API (sealed by the server, never part of an apply's record),
// in its metadata.namespace or the client's tenant, and its line ("Secret
// team-a/hub created") printed to `out`. *text keeps the other documents,
// each Secret replaced by an empty one, so that the server's document
// numbers stay those of the files. The first refusal is returned.
Status ApplySecretDocuments(Client& cl, std::string* text, std::ostream& out);

// `text` cut where YAML starts a document: at "---" lines (the rest of
// such a line starts the piece) and after "..." lines. Each Kubernetes
// object is in a piece of its own, and the pieces joined again with
// "---\n" between them read as the same documents, numbered alike.
std::vector<std::string> SplitYamlDocuments(const std::string& text);
int CmdSecretGet(const ClientFlags& c, const SecretFlags& f);
int CmdSecretDelete(const ClientFlags& c, const SecretFlags& f);

}  // namespace allot::cli
