#include "server/notebook_probe.h"

#include <boost/json.hpp>

#include <future>
#include <map>
#include <vector>

#include "net/http.h"
#include "server/notebook_auth.h"
#include "server/state.h"

namespace allot::server {
namespace json = boost::json;

NotebookProbe::NotebookProbe(Owner* owner, int64_t period_ms)
    : owner_(owner), period_ms_(period_ms), thread_([this] { Loop(); }) {}

NotebookProbe::~NotebookProbe() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool NotebookProbe::Active(const std::string& kernels_json, const std::string& terminals_json,
                           std::string* seen) {
  bool busy = false;
  std::string now;
  for (const std::string* body : {&kernels_json, &terminals_json}) {
    boost::system::error_code ec;
    json::value v = json::parse(*body, ec);
    if (ec || !v.is_array()) continue;
    for (const json::value& item : v.as_array()) {
      const json::object* o = item.if_object();
      if (o == nullptr) continue;
      auto str = [&](const char* k) {
        const json::value* x = o->if_contains(k);
        return x && x->is_string() ? std::string(x->as_string()) : std::string();
      };
      if (str("execution_state") == "busy") busy = true;
      now += (body == &kernels_json ? "k:" : "t:") + str(o->contains("id") ? "id" : "name") +
             "=" + str("last_activity") + ";";
    }
  }
  // The first look knows no before: only a busy kernel counts then.
  if (now.empty()) now = "-";
  const bool moved = !seen->empty() && now != *seen;
  *seen = now;
  return busy || moved;
}

void NotebookProbe::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, std::chrono::milliseconds(period_ms_), [this] { return stop_; })) {
    l.unlock();
    struct Target {
      State::PodEndpoint ep;
      std::string token;
    };
    auto targets = std::make_shared<std::promise<std::vector<Target>>>();
    std::future<std::vector<Target>> got = targets->get_future();
    owner_->Post([targets](Turn& t) {
      std::vector<Target> out;
      for (State::PodEndpoint& ep : t.state.Endpoints("notebook")) {
        std::string token = NotebookJupyterToken(t.state, ep.pod_id);
        out.push_back({std::move(ep), std::move(token)});
      }
      targets->set_value(std::move(out));
    });
    std::vector<std::string> active;
    std::map<std::string, std::string> seen;
    std::vector<Target> targets_now;
    try {
      // An owner that stopped drops the command: a broken promise.
      if (got.wait_for(std::chrono::seconds(10)) == std::future_status::ready) {
        targets_now = got.get();
      }
    } catch (const std::future_error&) {
    }
    for (const Target& t : targets_now) {
      net::ClientOptions o;
      o.base_url = "http://" + t.ep.endpoint;
      o.timeout_ms = 3000;
      Result<std::unique_ptr<net::HttpClient>> c = net::HttpClient::Create(o);
      if (!c.ok()) continue;
      const std::vector<std::pair<std::string, std::string>> h = {
          {"Authorization", "token " + t.token}};
      const std::string base = "/notebooks/" + t.ep.workload + "/api/";
      Result<net::Response> k = (*c)->Do("GET", base + "kernels", h, "");
      Result<net::Response> term = (*c)->Do("GET", base + "terminals", h, "");
      if (!k.ok() || k->status != 200) continue;  // Starting, or gone: no news.
      // Keyed by pod: a new start is a new Jupyter.
      std::string& s = seen[t.ep.pod_id];
      if (auto old = seen_.find(t.ep.pod_id); old != seen_.end()) s = old->second;
      if (Active(k->body, term.ok() && term->status == 200 ? term->body : "[]", &s)) {
        active.push_back(t.ep.workload);
      }
    }
    seen_ = std::move(seen);
    if (!active.empty()) {
      owner_->Post([active](Turn& t) {
        for (const std::string& key : active) (void)t.state.ReportActivity(key, t.txn.now_unix_ms);
      });
    }
    l.lock();
  }
}

}  // namespace allot::server
