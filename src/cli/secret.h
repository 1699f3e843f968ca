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
int CmdSecretGet(const ClientFlags& c, const SecretFlags& f);
int CmdSecretDelete(const ClientFlags& c, const SecretFlags& f);

}  // namespace allot::cli
