#include "cli/secret.h"

#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "core/encoding.h"
#include "core/secret.h"
#include "net/http.h"

namespace allot::cli {
namespace json = boost::json;

namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The body of a create: the -f manifest as it is, or a v1 Secret built from
// the flags (values base64 in data). Sets *name.
Result<std::string> Body(const SecretFlags& f, const std::string& tenant, std::string* name) {
  if (!f.manifest.empty()) {
    Result<std::string> text = ReadFile(f.manifest);
    if (!text.ok()) return text.status();
    Result<core::Secret> s = core::ParseSecretManifest(*text, f.manifest, tenant);
    if (!s.ok()) return s.status();
    *name = s->name;
    return *text;
  }
  if (f.name.empty()) return Status::InvalidArgument("name the Secret (or give -f FILE)");
  *name = f.name;
  json::object data;
  auto put = [&](const std::string& key, const std::string& value) -> Status {
    if (data.contains(key)) return Status::InvalidArgument("key " + key + " given twice");
    data[key] = core::Base64Encode(value);
    return Status::Ok();
  };
  for (const std::string& kv : f.literals) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--from-literal takes KEY=VALUE, got " + kv.substr(0, eq));
    }
    ALLOT_RETURN_IF_ERROR(put(kv.substr(0, eq), kv.substr(eq + 1)));
  }
  for (const std::string& kp : f.files) {
    const size_t eq = kp.find('=');
    std::string path = eq == std::string::npos ? kp : kp.substr(eq + 1);
    std::string key = eq == std::string::npos ? path.substr(path.rfind('/') + 1) : kp.substr(0, eq);
    Result<std::string> content = ReadFile(path);
    if (!content.ok()) return content.status();
    ALLOT_RETURN_IF_ERROR(put(key, *content));
  }
  std::string type = f.type;
  if (!f.docker_server.empty()) {
    json::object entry{{"auth", core::Base64Encode(f.docker_username + ":" + f.docker_password)}};
    json::object auths;
    auths[f.docker_server] = std::move(entry);
    ALLOT_RETURN_IF_ERROR(put(core::kDockerConfigJsonKey,
                              json::serialize(json::object{{"auths", std::move(auths)}})));
    if (type.empty()) type = core::kDockerConfigJsonType;
  }
  json::object o{{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", json::object{{"name", f.name}, {"namespace", tenant}}},
                 {"type", type.empty() ? "Opaque" : type},
                 {"data", std::move(data)}};
  return json::serialize(o);
}

std::string Keys(const json::value& s) {
  std::string out;
  if (const json::value* k = JsonAt(s, {"keys"}); k && k->is_object()) {
    for (const auto& [key, size] : k->as_object()) {
      out += (out.empty() ? "" : ", ") + std::string(key) + " (" + json::serialize(size) + " B)";
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> SplitYamlDocuments(const std::string& text) {
  // The documents: split at "---" lines, as YAML separates them, and
  // after a "..." (a document's end: what follows is the next one).
  std::vector<std::string> docs(1);
  bool ended = false;  // The last line was "...": a new document is open.
  auto marker = [](const std::string& line, const char* m) {
    return line.rfind(m, 0) == 0 &&
           (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
  };
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (marker(line, "---")) {
      if (!ended) docs.emplace_back();
      docs.back() += line.substr(3) + "\n";
      ended = false;
      continue;
    }
    if (ended && line.find_first_not_of(" \t\r") != std::string::npos && line[0] != '#') {
      ended = false;
    }
    if (marker(line, "...")) {
      docs.back() += line + "\n";
      docs.emplace_back();
      ended = true;
      continue;
    }
    docs.back() += line + "\n";
  }
  return docs;
}

Status ApplySecretDocuments(Client& cl, std::string* text, std::ostream& out) {
  std::vector<std::string> docs = SplitYamlDocuments(*text);
  bool any = false;
  for (std::string& doc : docs) {
    YAML::Node n;
    try {
      n = YAML::Load(doc);
    } catch (const YAML::Exception&) {
      continue;  // The server says what is wrong with it.
    }
    if (!n.IsMap() || !n["kind"] || !n["apiVersion"] || !n["kind"].IsScalar() ||
        !n["apiVersion"].IsScalar() || n["kind"].Scalar() != "Secret" ||
        n["apiVersion"].Scalar() != "v1") {
      continue;
    }
    const YAML::Node md = n["metadata"];
    const std::string ns_given = md && md.IsMap() && md["namespace"] && md["namespace"].IsScalar()
                                     ? md["namespace"].Scalar()
                                     : "";
    Result<std::string> tenant = cl.Tenant(ns_given);
    if (!tenant.ok()) return tenant.status();
    const std::string name =
        md && md.IsMap() && md["name"] && md["name"].IsScalar() ? md["name"].Scalar() : "";
    if (name.empty()) {
      return Status::InvalidArgument("a v1 Secret document has no metadata.name",
                                     "metadata.name");
    }
    auto r = cl.Call("PUT",
                     "/api/v1/secrets/" + net::UrlEncode(*tenant) + "/" + net::UrlEncode(name),
                     doc, "application/yaml");
    if (!r.ok()) return r.status();
    out << "Secret " << *tenant << "/" << name << " " << JsonStr(*r, {"action"}) << "\n";
    // An empty document in its place (it still counts).
    doc = "# v1 Secret " + *tenant + "/" + name + ": applied through /api/v1/secrets\n~\n";
    any = true;
  }
  if (any) {
    std::string rest;
    for (size_t i = 0; i < docs.size(); ++i) rest += (i == 0 ? "" : "---\n") + docs[i];
    *text = std::move(rest);
  }
  return Status::Ok();
}

int CmdSecretCreate(const ClientFlags& c, const SecretFlags& f) {
  auto cl = Client::Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  Result<std::string> tenant = (*cl)->Tenant(f.tenant);
  if (!tenant.ok()) return Fail(tenant.status());
  std::string name;
  Result<std::string> body = Body(f, *tenant, &name);
  if (!body.ok()) return Fail(body.status());
  const std::string base = "/api/v1/secrets/" + net::UrlEncode(*tenant);
  auto r = f.replace ? (*cl)->Call("PUT", base + "/" + net::UrlEncode(name), *body)
                     : (*cl)->Call("POST", base, *body);
  if (!r.ok()) return Fail(r.status());
  std::cout << "Secret " << *tenant << "/" << name << " " << JsonStr(*r, {"action"}) << "\n";
  return kExitOk;
}

int CmdSecretGet(const ClientFlags& c, const SecretFlags& f) {
  auto cl = Client::Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  Result<std::string> tenant = (*cl)->Tenant(f.tenant);
  if (!tenant.ok()) return Fail(tenant.status());
  std::string target = "/api/v1/secrets/" + net::UrlEncode(*tenant);
  if (!f.name.empty()) target += "/" + net::UrlEncode(f.name);
  if (f.values) {
    if (f.name.empty()) return Fail(Status::InvalidArgument("--values needs a Secret's name"));
    target += "?values=true";
  }
  auto r = (*cl)->Call("GET", target);
  if (!r.ok()) return Fail(r.status());
  if (f.values) {
    std::cout << json::serialize(*r) << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "TYPE", "KEYS", "CREATED BY"}};
  auto row = [&](const json::value& s) {
    rows.push_back({JsonStr(s, {"name"}), JsonStr(s, {"type"}), Keys(s),
                    JsonStr(s, {"createdBy"})});
  };
  if (f.name.empty()) {
    for (const json::value& s : r->as_object().at("items").as_array()) row(s);
  } else {
    row(*r);
  }
  PrintTable(rows);
  return kExitOk;
}

int CmdSecretDelete(const ClientFlags& c, const SecretFlags& f) {
  auto cl = Client::Connect(c);
  if (!cl.ok()) return Fail(cl.status());
  Result<std::string> tenant = (*cl)->Tenant(f.tenant);
  if (!tenant.ok()) return Fail(tenant.status());
  auto r = (*cl)->Call("DELETE", "/api/v1/secrets/" + net::UrlEncode(*tenant) + "/" +
                                     net::UrlEncode(f.name));
  if (!r.ok()) return Fail(r.status());
  std::cout << "Secret " << *tenant << "/" << f.name << " deleted\n";
  return kExitOk;
}

}  // namespace allot::cli
