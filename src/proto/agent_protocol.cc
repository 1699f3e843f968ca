#include "proto/agent_protocol.h"

#include <arpa/inet.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/encoding.h"
#include "core/manifest.h"
#include "core/manifest_encode.h"

namespace allot::proto {
namespace json = boost::json;
namespace {

std::vector<std::string> Strings(const json::value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const json::value& x : v->as_array()) {
    if (x.is_string()) out.emplace_back(x.as_string());
  }
  return out;
}

json::array StringArray(const std::vector<std::string>& v) {
  json::array a;
  for (const std::string& x : v) a.emplace_back(x);
  return a;
}

void Int(const json::object& o, const char* k, int64_t* out) {
  if (const json::value* x = o.if_contains(k); x && x->is_int64()) *out = x->as_int64();
}

std::string Str(const json::object& o, const char* k) {
  const json::value* x = o.if_contains(k);
  return x && x->is_string() ? std::string(x->as_string()) : std::string();
}

Result<PodReport> DecodePod(const json::value& pv) {
  const json::object* po = pv.if_object();
  const json::value* id = po ? po->if_contains("id") : nullptr;
  if (id == nullptr || !id->is_string() || id->as_string().empty()) {
    return Status::InvalidArgument("every pod needs an id", "pods.id");
  }
  PodReport pr;
  pr.id = std::string(id->as_string());
  auto boolean = [&](const char* k, bool* out) {
    if (const json::value* x = po->if_contains(k); x && x->is_bool()) *out = x->as_bool();
  };
  auto integer = [&](const char* k, int* out) {
    if (const json::value* x = po->if_contains(k); x && x->is_int64()) {
      *out = int(x->as_int64());
    }
  };
  boolean("exited", &pr.exited);
  boolean("stopped", &pr.stopped);
  boolean("pulling", &pr.pulling);
  for (auto [k, out] : {std::pair{"pulledBytes", &pr.pulled_bytes},
                        std::pair{"pullTotalBytes", &pr.pull_total_bytes}}) {
    if (const json::value* x = po->if_contains(k); x && x->is_int64() && x->as_int64() >= 0) {
      *out = x->as_int64();
    }
  }
  integer("exitCode", &pr.exit_code);
  integer("signal", &pr.signal);
  pr.last_lines = Str(*po, "lastLines").substr(0, kMaxLastLines);
  pr.reason = Str(*po, "reason").substr(0, kMaxReason);
  pr.endpoint = Str(*po, "endpoint").substr(0, 300);
  return pr;
}

// "gpuSamples": [{"uuid","index","util","temp","power","fbUsed","eccDbe",
// "xid"}], numbers; a sample of a GPU the node does not have is refused.
Result<GpuTelemetry> DecodeSample(const json::value& sv, const core::Node& node) {
  const json::object* so = sv.if_object();
  const json::value* uuid = so ? so->if_contains("uuid") : nullptr;
  if (uuid == nullptr || !uuid->is_string() ||
      std::none_of(node.gpus.begin(), node.gpus.end(),
                   [&](const core::Gpu& g) { return g.uuid == uuid->as_string(); })) {
    return Status::InvalidArgument("every GPU sample needs the uuid of one of the node's GPUs",
                                   "gpuSamples.uuid");
  }
  GpuTelemetry t;
  t.uuid = std::string(uuid->as_string());
  auto number = [&](const char* k, double lo, double hi, double* out) -> Status {
    const json::value* x = so->if_contains(k);
    if (x == nullptr) return Status::Ok();
    if (!x->is_number() || x->to_number<double>() < lo || x->to_number<double>() > hi) {
      return Status::InvalidArgument(std::string("gpuSamples.") + k + " must be a number from " +
                                         std::to_string(int64_t(lo)) + " to " +
                                         std::to_string(int64_t(hi)),
                                     std::string("gpuSamples.") + k);
    }
    *out = x->to_number<double>();
    return Status::Ok();
  };
  double index = 0, util = 0, temp = 0, fb = 0, ecc = 0, xid = 0;
  ALLOT_RETURN_IF_ERROR(number("index", 0, 1023, &index));
  ALLOT_RETURN_IF_ERROR(number("util", 0, 100, &util));
  ALLOT_RETURN_IF_ERROR(number("temp", -273, 1000, &temp));
  ALLOT_RETURN_IF_ERROR(number("power", 0, 1e6, &t.power_watts));
  ALLOT_RETURN_IF_ERROR(number("fbUsed", 0, 1e15, &fb));
  ALLOT_RETURN_IF_ERROR(number("eccDbe", 0, 1e15, &ecc));
  ALLOT_RETURN_IF_ERROR(number("xid", 0, 1e9, &xid));
  t.index = int(index);
  t.utilization_pct = int(util);
  t.temperature_c = int(temp);
  t.memory_used_bytes = int64_t(fb);
  t.ecc_dbe_volatile = int64_t(ecc);
  t.last_xid = int64_t(xid);
  return t;
}

DesiredPod DecodeDesiredPod(const json::object& po) {
  DesiredPod d;
  d.id = Str(po, "id");
  d.workload = Str(po, "workload");
  d.command = Strings(po.if_contains("command"));
  d.args = Strings(po.if_contains("args"));
  if (const json::value* env = po.if_contains("env"); env && env->is_array()) {
    for (const json::value& e : env->as_array()) {
      const json::object* eo = e.if_object();
      if (eo == nullptr) continue;
      const json::value* k = eo->if_contains("name");
      const json::value* v = eo->if_contains("value");
      if (k && v && k->is_string() && v->is_string()) {
        d.env.emplace_back(std::string(k->as_string()), std::string(v->as_string()));
      }
    }
  }
  d.working_dir = Str(po, "workingDir");
  d.image = Str(po, "image");
  d.image_pull_policy = Str(po, "imagePullPolicy");
  d.gpus = Strings(po.if_contains("gpus"));
  Int(po, "gracePeriodMs", &d.grace_ms);
  Int(po, "simulatedRuntimeMs", &d.simulated_runtime_ms);
  Int(po, "cpuMilli", &d.cpu_milli);
  Int(po, "memoryBytes", &d.memory_bytes);
  d.cpu_milli = std::max<int64_t>(d.cpu_milli, 0);
  d.memory_bytes = std::max<int64_t>(d.memory_bytes, 0);
  if (const json::value* files = po.if_contains("files"); files && files->is_array()) {
    for (const json::value& f : files->as_array()) {
      const json::object* fo = f.if_object();
      if (fo == nullptr) continue;
      Result<std::string> content = core::Base64Decode(Str(*fo, "contentBase64"));
      PodFile pf{Str(*fo, "volume"), Str(*fo, "path"), content.ok() ? *content : ""};
      if (content.ok() && !pf.volume.empty() && !pf.path.empty()) {
        d.files.push_back(std::move(pf));
      }
    }
  }
  if (const json::value* vols = po.if_contains("volumes"); vols && vols->is_array()) {
    for (const json::value& v : vols->as_array()) {
      const json::object* vo = v.if_object();
      if (vo == nullptr) continue;
      core::Volume vol;
      vol.name = Str(*vo, "name");
      const std::string type = Str(*vo, "type");
      if (type == "emptyDir") vol.type = core::Volume::Type::kEmptyDir;
      else if (type == "hostPath") vol.type = core::Volume::Type::kHostPath;
      else if (type == "secret") vol.type = core::Volume::Type::kSecret;
      else if (type == "claim") vol.type = core::Volume::Type::kClaim;
      else continue;
      vol.medium = Str(*vo, "medium");
      Int(*vo, "sizeLimitBytes", &vol.size_limit_bytes);
      vol.path = Str(*vo, "path");
      vol.secret = Str(*vo, "secret");
      vol.claim = Str(*vo, "claim");
      const json::value* ro = vo->if_contains("readOnly");
      vol.read_only = ro && ro->is_bool() && ro->as_bool();
      d.volumes.push_back(std::move(vol));
    }
  }
  if (const json::value* ms = po.if_contains("mounts"); ms && ms->is_array()) {
    for (const json::value& m : ms->as_array()) {
      const json::object* mo = m.if_object();
      if (mo == nullptr) continue;
      const json::value* ro = mo->if_contains("readOnly");
      d.mounts.push_back({Str(*mo, "name"), Str(*mo, "mountPath"), Str(*mo, "subPath"),
                          ro && ro->is_bool() && ro->as_bool()});
    }
  }
  if (const json::value* u = po.if_contains("runAsUser"); u && u->is_int64()) {
    d.run_as_user = u->as_int64();
  }
  if (const json::value* g = po.if_contains("runAsGroup"); g && g->is_int64()) {
    d.run_as_group = g->as_int64();
  }
  if (const json::value* b = po.if_contains("runAsNonRoot"); b && b->is_bool()) {
    d.run_as_non_root = b->as_bool();
  }
  if (const json::value* b = po.if_contains("readOnlyRootFilesystem"); b && b->is_bool()) {
    d.read_only_root = b->as_bool();
  }
  if (const json::value* b = po.if_contains("hostNetwork"); b && b->is_bool()) {
    d.host_network = b->as_bool();
  }
  if (const json::value* p = po.if_contains("port");
      p && p->is_int64() && p->as_int64() > 0 && p->as_int64() <= 65535) {
    d.port = int32_t(p->as_int64());
  }
  d.registry_auth = Str(po, "registryAuth");
  d.start_error = Str(po, "startError");
  return d;
}


json::object EncodePodNetwork(const PodNetwork& n) {
  json::object t;
  for (const auto& [tenant, subnet] : n.tenants) t[tenant] = subnet;
  json::object o{{"cidr", n.cidr}, {"tenants", std::move(t)}};
  if (!n.node.empty()) o["node"] = n.node;
  if (!n.address.empty()) o["address"] = n.address;
  return o;
}

// Strict for reports (`field` names where), lenient callers skip errors.
Result<PodNetwork> DecodePodNetwork(const json::value& v, const std::string& field) {
  const json::object* o = v.if_object();
  const json::value* cidr = o ? o->if_contains("cidr") : nullptr;
  unsigned base = 0;
  int bits = 0;
  if (cidr == nullptr || !cidr->is_string() ||
      !ParseIpv4Cidr(std::string(cidr->as_string()), &base, &bits)) {
    return Status::InvalidArgument(field + ".cidr must be an IPv4 range such as 10.88.0.0/16",
                                   field + ".cidr");
  }
  PodNetwork n;
  n.cidr = std::string(cidr->as_string());
  n.node = Str(*o, "node");
  n.address = Str(*o, "address");
  if (const json::value* t = o->if_contains("tenants")) {
    if (!t->is_object() || t->as_object().size() > 4096) {
      return Status::InvalidArgument(field + ".tenants must map tenants to their subnets",
                                     field + ".tenants");
    }
    for (const auto& kv : t->as_object()) {
      unsigned sub = 0;
      int sub_bits = 0;
      const bool inside = kv.value().is_string() &&
                          ParseIpv4Cidr(std::string(kv.value().as_string()), &sub, &sub_bits) &&
                          sub_bits >= bits &&
                          (sub & (bits == 0 ? 0u : ~0u << (32 - bits))) == base;
      if (kv.key().empty() || kv.key().size() > 253 || !inside) {
        return Status::InvalidArgument(
            field + ".tenants." + std::string(kv.key()) + " must be a subnet of " + n.cidr,
            field + ".tenants");
      }
      n.tenants[std::string(kv.key())] = std::string(kv.value().as_string());
    }
  }
  return n;
}

}  // namespace

bool ParseIpv4Cidr(const std::string& cidr, unsigned* base, int* bits) {
  const size_t slash = cidr.find('/');
  if (slash == std::string::npos || slash + 1 >= cidr.size() || cidr.size() - slash > 3) {
    return false;
  }
  int n = 0;
  for (size_t i = slash + 1; i < cidr.size(); ++i) {
    if (cidr[i] < '0' || cidr[i] > '9') return false;
    n = n * 10 + (cidr[i] - '0');
  }
  in_addr a{};
  if (n < 8 || n > 30 || inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &a) != 1) return false;
  const unsigned addr = ntohl(a.s_addr);
  if ((addr & ~(~0u << (32 - n))) != 0) return false;  // Host bits set.
  if (base != nullptr) *base = addr;
  if (bits != nullptr) *bits = n;
  return true;
}

bool CidrsOverlap(const std::string& a, const std::string& b) {
  unsigned ba = 0, bb = 0;
  int na = 0, nb = 0;
  if (!ParseIpv4Cidr(a, &ba, &na) || !ParseIpv4Cidr(b, &bb, &nb)) return false;
  const int n = std::min(na, nb);
  const unsigned mask = ~0u << (32 - n);
  return (ba & mask) == (bb & mask);
}

json::object EncodeAgentReport(const AgentReport& r) {
  json::object o;
  if (!r.gpu_samples.empty()) {
    json::array samples;
    for (const GpuTelemetry& s : r.gpu_samples) {
      samples.push_back(json::object{{"uuid", s.uuid},
                                     {"index", s.index},
                                     {"util", s.utilization_pct},
                                     {"temp", s.temperature_c},
                                     {"power", s.power_watts},
                                     {"fbUsed", s.memory_used_bytes},
                                     {"eccDbe", s.ecc_dbe_volatile},
                                     {"xid", s.last_xid}});
    }
    o["gpuSamples"] = std::move(samples);
  }
  o["node"] = core::EncodeNode(r.node);
  o["address"] = r.address;
  o["simulated"] = r.simulated;
  if (!r.pod_network.cidr.empty()) o["podNetwork"] = EncodePodNetwork(r.pod_network);
  json::array pods;
  for (const PodReport& p : r.pods) {
    // A running pod is its id; what ended says how.
    if (!p.exited) {
      json::object po{{"id", p.id}, {"exited", false}};
      if (p.pulling) po["pulling"] = true;
      if (p.pulled_bytes > 0) po["pulledBytes"] = p.pulled_bytes;
      if (p.pull_total_bytes > 0) po["pullTotalBytes"] = p.pull_total_bytes;
      if (!p.endpoint.empty()) po["endpoint"] = p.endpoint;
      pods.push_back(std::move(po));
      continue;
    }
    json::object po{{"id", p.id},         {"exited", true},
                    {"exitCode", p.exit_code}, {"signal", p.signal},
                    {"stopped", p.stopped},    {"lastLines", p.last_lines}};
    if (!p.reason.empty()) po["reason"] = p.reason;
    pods.push_back(std::move(po));
  }
  o["pods"] = std::move(pods);
  return o;
}

Result<AgentReport> DecodeAgentReport(const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) {
    return Status::InvalidArgument("the body is not a JSON object", "body");
  }
  const json::object& o = v.as_object();
  for (const auto& kv : o) {
    if (kv.key() != "node" && kv.key() != "address" && kv.key() != "simulated" &&
        kv.key() != "pods" && kv.key() != "gpuSamples" && kv.key() != "podNetwork") {
      return Status::InvalidArgument("unknown field '" + std::string(kv.key()) + "'",
                                     std::string(kv.key()));
    }
  }
  AgentReport r;
  const json::value* node = o.if_contains("node");
  if (node == nullptr || !node->is_object()) {
    return Status::InvalidArgument("node must be an allot.dev/v1 Node object", "node");
  }
  core::Config c;
  Status s = core::ParseManifests(json::serialize(*node), "node", &c);
  if (s.ok() && c.nodes.size() != 1) {
    s = Status::InvalidArgument("node must be one Node", "node");
  }
  if (!s.ok()) return s;
  r.node = std::move(c.nodes[0]);
  if (const json::value* a = o.if_contains("address")) {
    if (!a->is_string() || a->as_string().size() > 253) {
      return Status::InvalidArgument("address must be a host name or IP", "address");
    }
    r.address = std::string(a->as_string());
  }
  if (const json::value* sim = o.if_contains("simulated")) {
    if (!sim->is_bool()) {
      return Status::InvalidArgument("simulated must be true or false", "simulated");
    }
    r.simulated = sim->as_bool();
  }
  if (const json::value* pn = o.if_contains("podNetwork")) {
    Result<PodNetwork> n = DecodePodNetwork(*pn, "podNetwork");
    if (!n.ok()) return n.status();
    r.pod_network = std::move(*n);
    r.pod_network.node.clear();
    r.pod_network.address.clear();
  }
  if (const json::value* pods = o.if_contains("pods")) {
    if (!pods->is_array() || pods->as_array().size() > kMaxPods) {
      return Status::InvalidArgument("pods must be a list", "pods");
    }
    for (const json::value& pv : pods->as_array()) {
      Result<PodReport> pr = DecodePod(pv);
      if (!pr.ok()) return pr.status();
      r.pods.push_back(std::move(*pr));
    }
  }
  if (const json::value* gs = o.if_contains("gpuSamples")) {
    if (!gs->is_array() || gs->as_array().size() > r.node.gpus.size()) {
      return Status::InvalidArgument(
          "gpuSamples must be a list of at most one sample per GPU of the node", "gpuSamples");
    }
    for (const json::value& sv : gs->as_array()) {
      Result<GpuTelemetry> t = DecodeSample(sv, r.node);
      if (!t.ok()) return t.status();
      r.gpu_samples.push_back(std::move(*t));
    }
  }
  return r;
}

json::object EncodeDesiredPod(const DesiredPod& d) {
  json::object o;
  o["id"] = d.id;
  o["workload"] = d.workload;
  json::array env;
  for (const auto& [k, v] : d.env) env.push_back(json::object{{"name", k}, {"value", v}});
  o["command"] = StringArray(d.command);
  o["args"] = StringArray(d.args);
  o["env"] = std::move(env);
  o["workingDir"] = d.working_dir;
  if (!d.image.empty()) o["image"] = d.image;
  if (!d.image_pull_policy.empty()) o["imagePullPolicy"] = d.image_pull_policy;
  o["gpus"] = StringArray(d.gpus);
  o["gracePeriodMs"] = d.grace_ms;
  o["simulatedRuntimeMs"] = d.simulated_runtime_ms;
  if (d.cpu_milli > 0) o["cpuMilli"] = d.cpu_milli;
  if (d.memory_bytes > 0) o["memoryBytes"] = d.memory_bytes;
  if (!d.files.empty()) {
    json::array files;
    for (const PodFile& f : d.files) {
      files.push_back(
          json::object{{"volume", f.volume},
                       {"path", f.path},
                       {"contentBase64", core::Base64Encode(f.content)}});
    }
    o["files"] = std::move(files);
  }
  if (!d.volumes.empty()) {
    json::array vols;
    for (const core::Volume& v : d.volumes) {
      static constexpr const char* kTypes[] = {"emptyDir", "hostPath", "secret", "claim"};
      json::object vo{{"name", v.name}, {"type", kTypes[int(v.type)]}};
      if (!v.medium.empty()) vo["medium"] = v.medium;
      if (v.size_limit_bytes > 0) vo["sizeLimitBytes"] = v.size_limit_bytes;
      if (!v.path.empty()) vo["path"] = v.path;
      if (!v.secret.empty()) vo["secret"] = v.secret;
      if (!v.claim.empty()) vo["claim"] = v.claim;
      if (v.read_only) vo["readOnly"] = true;
      vols.push_back(std::move(vo));
    }
    o["volumes"] = std::move(vols);
  }
  if (!d.mounts.empty()) {
    json::array ms;
    for (const core::VolumeMount& m : d.mounts) {
      json::object mo{{"name", m.name}, {"mountPath", m.mount_path}};
      if (!m.sub_path.empty()) mo["subPath"] = m.sub_path;
      if (m.read_only) mo["readOnly"] = true;
      ms.push_back(std::move(mo));
    }
    o["mounts"] = std::move(ms);
  }
  if (d.run_as_user) o["runAsUser"] = *d.run_as_user;
  if (d.run_as_group) o["runAsGroup"] = *d.run_as_group;
  if (d.run_as_non_root) o["runAsNonRoot"] = true;
  if (!d.read_only_root) o["readOnlyRootFilesystem"] = false;
  if (d.host_network) o["hostNetwork"] = true;
  if (d.port > 0) o["port"] = d.port;
  if (!d.registry_auth.empty()) o["registryAuth"] = d.registry_auth;
  if (!d.start_error.empty()) o["startError"] = d.start_error;
  return o;
}

json::object EncodeSyncAnswer(const SyncAnswer& a) {
  json::array pods;
  for (const DesiredPod& d : a.pods) pods.push_back(EncodeDesiredPod(d));
  json::object o;
  o["node"] = a.node;
  o["revision"] = a.revision;
  o["pods"] = std::move(pods);
  if (!a.log_requests.empty()) {
    json::array asks;
    for (const LogRequest& r : a.log_requests) {
      asks.push_back(json::object{
          {"id", r.id}, {"pod", r.pod}, {"offset", r.offset}, {"limit", r.limit}});
    }
    o["logRequests"] = std::move(asks);
  }
  if (!a.peers.empty()) {
    json::array peers;
    for (const PodNetwork& p : a.peers) peers.push_back(EncodePodNetwork(p));
    o["peers"] = std::move(peers);
  }
  return o;
}

SyncAnswer DecodeSyncAnswer(const json::value& v) {
  SyncAnswer a;
  const json::object* o = v.if_object();
  if (o == nullptr) return a;
  a.node = Str(*o, "node");
  Int(*o, "revision", &a.revision);
  if (const json::value* pods = o->if_contains("pods"); pods && pods->is_array()) {
    for (const json::value& p : pods->as_array()) {
      const json::object* po = p.if_object();
      const json::value* id = po ? po->if_contains("id") : nullptr;
      if (id && id->is_string()) a.pods.push_back(DecodeDesiredPod(*po));
    }
  }
  if (const json::value* lr = o->if_contains("logRequests"); lr && lr->is_array()) {
    for (const json::value& x : lr->as_array()) {
      const json::object* ao = x.if_object();
      if (ao == nullptr) continue;
      const json::value* id = ao->if_contains("id");
      const json::value* pod = ao->if_contains("pod");
      if (!id || !id->is_int64() || !pod || !pod->is_string()) continue;
      LogRequest r;
      r.id = id->as_int64();
      r.pod = std::string(pod->as_string());
      Int(*ao, "offset", &r.offset);
      Int(*ao, "limit", &r.limit);
      a.log_requests.push_back(std::move(r));
    }
  }
  if (const json::value* peers = o->if_contains("peers"); peers && peers->is_array()) {
    for (const json::value& x : peers->as_array()) {
      Result<PodNetwork> n = DecodePodNetwork(x, "peers");
      if (n.ok() && !n->node.empty() && !n->address.empty()) a.peers.push_back(std::move(*n));
    }
  }
  return a;
}

json::object EncodeLogAnswers(const LogAnswers& a) {
  json::array logs;
  for (const LogAnswer& l : a.logs) {
    logs.push_back(json::object{{"id", l.id},
                                {"exists", l.exists},
                                {"offset", l.offset},
                                {"nextOffset", l.next_offset},
                                {"data", l.data}});
  }
  return json::object{{"node", a.node}, {"logs", std::move(logs)}};
}

Result<LogAnswers> DecodeLogAnswers(const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* node = o ? o->if_contains("node") : nullptr;
  const json::value* logs = o ? o->if_contains("logs") : nullptr;
  if (node == nullptr || !node->is_string() || logs == nullptr || !logs->is_array()) {
    return Status::InvalidArgument("the body must be {\"node\": NAME, \"logs\": [...]}", "body");
  }
  LogAnswers a;
  a.node = std::string(node->as_string());
  for (const json::value& x : logs->as_array()) {
    const json::object* ao = x.if_object();
    const json::value* id = ao ? ao->if_contains("id") : nullptr;
    if (id == nullptr || !id->is_int64()) continue;
    LogAnswer l;
    l.id = id->as_int64();
    Int(*ao, "offset", &l.offset);
    Int(*ao, "nextOffset", &l.next_offset);
    l.data = Str(*ao, "data");
    const json::value* exists = ao->if_contains("exists");
    l.exists = exists && exists->is_bool() && exists->as_bool();
    a.logs.push_back(std::move(l));
  }
  return a;
}

}  // namespace allot::proto
