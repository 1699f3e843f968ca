// Notebooks end to end (docs/notebooks.md): a real `allot serve`, a real
// `allot agent` running Debian's jupyter-notebook as a process, and
// kernels and terminals driven over WebSocket through the server's proxy
// by tests/e2e/jupyter_client.py.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "server/agent_test_util.h"

namespace allot::server::testing {
namespace {

namespace json = boost::json;
namespace b = allot::testing;

// The Python client that drives a Jupyter as a browser would.
const std::string kClient = std::string(ALLOT_SOURCE_DIR) + "/tests/e2e/jupyter_client.py";

class NotebookTest : public ServerTest {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/jupyter-notebook")) {
      GTEST_SKIP() << "jupyter-notebook is not installed (make deps installs it)";
    }
    ASSERT_NO_FATAL_FAILURE(StartServer(
        b::Namespace("team-a") + b::Namespace("team-b") + b::Flavor("sim", "") +
            b::GpuCq("cq-a", "", "sim", "nominalQuota: 1") +
            b::LocalQueue("team-a", "q", "cq-a") + b::LocalQueue("team-b", "q", "cq-a"),
        "", {"--node-timeout", "3", "--notebook-probe-interval", "1s"}));
    // The pod runs as the tenant's ids, in a home under this directory.
    ASSERT_EQ(chmod(srv_->dir().c_str(), 0711), 0);
    node_token_ = srv_->NewToken(R"({"user":"agents","role":"node"})");
    member_ = srv_->NewToken(R"({"user":"ann","role":"member","tenant":"team-a"})");
    other_ = srv_->NewToken(R"({"user":"bob","role":"member","tenant":"team-b"})");
    viewer_ = srv_->NewToken(R"({"user":"vic","role":"viewer","tenant":"team-a"})");
    agent_ = std::make_unique<AgentProcess>(*srv_, node_token_, "n1", "1xH100-80GB",
                                            srv_->dir() + "/agent-n1");
  }

  // A GET through the proxy with these headers (a fresh connection each:
  // the proxy closes it after the answer).
  net::Response Get(const std::string& target,
                    std::vector<std::pair<std::string, std::string>> headers = {}) {
    auto c = srv_->NewClient();
    auto r = c->Do("GET", target, headers, "");
    return r.ok() ? *r : net::Response{0, "", r.status().message(), {}};
  }
  net::Response Send(const std::string& method, const std::string& target, const std::string& token,
                     const std::string& body = "") {
    auto c = srv_->NewClient();
    std::vector<std::pair<std::string, std::string>> h = {{"Authorization", "Bearer " + token}};
    if (!body.empty()) h.push_back({"Content-Type", "application/json"});
    auto r = c->Do(method, target, h, body);
    return r.ok() ? *r : net::Response{0, "", r.status().message(), {}};
  }
  std::string Header(const net::Response& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }
  // Applies notebook team-a/<name> as the member, idle after `idle_after`.
  void CreateNotebook(const std::string& name, const std::string& idle_after) {
    net::Response r = Send("POST", "/api/v1/apply", member_,
                           "apiVersion: allot.dev/v1\nkind: Notebook\nmetadata: {name: " + name +
                               ", namespace: team-a}\nspec: {queueName: q, gpus: 1, idleAfter: " +
                               idle_after + "}\n");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  // Waits until Jupyter answers through the proxy (up to 60 s).
  bool WaitServing(const std::string& name) {
    return b::WaitFor(
        [&] {
          return Send("GET", "/notebooks/team-a/" + name + "/api/status", member_).status == 200;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(200));
  }
  // Runs the Python client against notebook team-a/<name>; its output.
  std::string Client(const std::string& name, const std::string& action, const std::string& arg) {
    const std::string out = srv_->dir() + "/client.out";
    const std::string cmd = "/usr/bin/python3 " + kClient + " '" + srv_->url() +
                            "/notebooks/team-a/" + name + "/' 'Authorization: Bearer " + member_ +
                            "' " + action + " \"" + arg + "\" > " + out + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::string text = b::ReadFile(out);
    if (rc != 0) ADD_FAILURE() << cmd << " failed:\n" << text;
    return text;
  }
  std::string StateOf(const std::string& name) {
    return WorkloadStateOf(srv_->Json("GET", "/api/v1/workloads/team-a/" + name));
  }

  std::string node_token_, member_, other_, viewer_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(NotebookTest, WaitsForGpusThenServesJupyterAndRunsCodeOnlyForItsTenant) {
  // The only GPU is busy: the notebook waits in its queue, and its page
  // says so.
  int code = 0;
  srv_->Json("POST", "/api/v1/workloads", AgentWorkload("job", 1, 1, "sleep 300"), &code);
  ASSERT_EQ(code, 201);
  srv_->WaitForWorkload("team-a/job", [](const json::value& v) {
    return WorkloadStateOf(v) == "Running";
  });
  ASSERT_NO_FATAL_FAILURE(CreateNotebook("nb", "0s"));
  net::Response waiting = Send("GET", "/notebooks/team-a/nb/tree", member_);
  EXPECT_EQ(waiting.status, 202) << waiting.body;
  EXPECT_NE(waiting.body.find("Pending"), std::string::npos) << waiting.body;
  EXPECT_NE(waiting.body.find("1st in queue"), std::string::npos) << waiting.body;

  // The job ends: the notebook starts and Jupyter answers through the
  // server, its UI and its API.
  ASSERT_EQ(srv_->Admin("DELETE", "/api/v1/workloads/team-a/job").status, 200);
  ASSERT_TRUE(WaitServing("nb"));
  net::Response tree = Send("GET", "/notebooks/team-a/nb/tree", member_);
  EXPECT_EQ(tree.status, 200);
  EXPECT_NE(tree.body.find("Jupyter"), std::string::npos);

  // Its metrics.
  const std::string metrics = srv_->Admin("GET", "/metrics").body;
  EXPECT_NE(metrics.find("allot_notebooks{namespace=\"team-a\",state=\"Running\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("allot_notebook_last_activity_seconds{namespace=\"team-a\",notebook=\"nb\"}"),
            std::string::npos);

  // A kernel started through the proxy runs code over its WebSocket.
  EXPECT_EQ(Client("nb", "exec", "print(6 * 7)"), "42\n");

  // Anyone else gets 404: no credentials, another tenant, a viewer, a
  // made-up cookie.
  EXPECT_EQ(Get("/notebooks/team-a/nb/tree").status, 404);
  EXPECT_EQ(Send("GET", "/notebooks/team-a/nb/tree", other_).status, 404);
  EXPECT_EQ(Send("GET", "/notebooks/team-a/nb/tree", viewer_).status, 404);
  EXPECT_EQ(Get("/notebooks/team-a/nb/tree", {{"Cookie", "allot-notebook=x.9999999999999.abc"}})
                .status,
            404);
  EXPECT_EQ(Send("GET", "/notebooks/team-a/missing/tree", member_).status, 404);

  // A browser's way in: the one-time link sets a cookie for this notebook.
  net::Response open = Send("POST", "/api/v1/workloads/team-a/nb/open", member_);
  ASSERT_EQ(open.status, 200) << open.body;
  const std::string url = std::string(json::parse(open.body).at("url").as_string());
  net::Response signin = Get(url);
  ASSERT_EQ(signin.status, 303) << signin.body;
  EXPECT_EQ(Header(signin, "location"), "/notebooks/team-a/nb/tree");
  const std::string set_cookie = Header(signin, "set-cookie");
  EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos) << set_cookie;
  EXPECT_NE(set_cookie.find("Path=/notebooks/team-a/nb/"), std::string::npos) << set_cookie;
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  EXPECT_EQ(Get("/notebooks/team-a/nb/tree", {{"Cookie", cookie}}).status, 200);
  EXPECT_EQ(Get(url).status, 404) << "a ticket opens once";
  // The cookie is this notebook's only.
  ASSERT_NO_FATAL_FAILURE(CreateNotebook("nb2", "0s"));
  EXPECT_EQ(Get("/notebooks/team-a/nb2/tree", {{"Cookie", cookie}}).status, 404);

  // Jupyter itself refuses whoever reaches its port on the node without
  // the token (its address is in its log, the token is not: the proxy is
  // the way in).
  const std::string log = agent_->PodLog("team-a/nb/a1/notebook/0");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/notebooks/team-a/nb/)")))
      << log;
  EXPECT_NE(log.find("token=..."), std::string::npos) << log;
  net::ClientOptions o;
  o.base_url = "http://127.0.0.1:" + m[1].str();
  auto direct = net::HttpClient::Create(o);
  ASSERT_TRUE(direct.ok());
  auto r = (*direct)->Do("GET", "/notebooks/team-a/nb/api/kernels", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 403);

  // The CLI, with the member's token: list, open, stop (a park).
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {std::getenv("ALLOT_BIN"), "notebook"});
    args.insert(args.end(), {"--server", srv_->url(), "--token", member_});
    return b::Run(args);
  };
  b::Ran list = cli({"list"});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_TRUE(std::regex_search(list.out, std::regex(R"(team-a +nb +Running +1 +q .*/notebooks/team-a/nb/)")))
      << list.out;
  EXPECT_NE(list.out.find("IDLE PARKING"), std::string::npos) << list.out;
  b::Ran link = cli({"open", "nb"});
  EXPECT_EQ(link.code, 0) << link.err;
  EXPECT_EQ(link.out.rfind(srv_->url() + "/notebooks/team-a/nb/tree?allot-ticket=", 0), 0u) << link.out;
  b::Ran stop = cli({"stop", "nb"});
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_EQ(StateOf("nb"), "Parked");
  // Private notebooks: once the tenant says so, another member of it gets
  // 404 too, its owner still gets in (nb2 waits for nb's kept quota).
  const std::string amy = srv_->NewToken(R"({"user":"amy","role":"member","tenant":"team-a"})");
  EXPECT_EQ(Send("GET", "/notebooks/team-a/nb2/tree", amy).status, 202);
  ASSERT_TRUE(srv_->Apply(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, annotations: "
      "{allot.dev/private-notebooks: \"true\"}}\n"));
  EXPECT_EQ(Send("GET", "/notebooks/team-a/nb2/tree", amy).status, 404);
  EXPECT_EQ(Send("POST", "/api/v1/workloads/team-a/nb2/open", amy).status, 404);
  EXPECT_EQ(Send("GET", "/notebooks/team-a/nb2/tree", member_).status, 202);
  b::Ran both = cli({"create", "x", "--gpus", "1", "--mig", "1g.10gb"});
  EXPECT_NE(both.code, 0);
  EXPECT_EQ(Send("GET", "/api/v1/workloads/team-a/x", member_).status, 404);
}

TEST_F(NotebookTest, AnIdleNotebookParksKeepingItsQuotaAndOpensAgainWithItsFiles) {
  ASSERT_NO_FATAL_FAILURE(CreateNotebook("nb", "4s"));
  ASSERT_TRUE(WaitServing("nb"));
  net::Response put = Send("PUT", "/notebooks/team-a/nb/api/contents/hello.txt", member_,
                           R"({"type": "file", "format": "text", "content": "kept"})");
  ASSERT_EQ(put.status, 201) << put.body;
  json::value running = srv_->Json("GET", "/api/v1/workloads/team-a/nb");
  EXPECT_EQ(running.at("status").at("idleAfterSeconds").as_int64(), 4) << running;

  // Nobody works in it: parked after its idle time, its quota kept.
  json::value w = srv_->WaitForWorkload(
      "team-a/nb", [](const json::value& v) { return WorkloadStateOf(v) == "Parked"; },
      std::chrono::seconds(60));
  ASSERT_EQ(WorkloadStateOf(w), "Parked");
  json::value cq = srv_->Json("GET", "/api/v1/clusterqueues/cq-a");
  EXPECT_EQ(cq.at("status").at("admittedWorkloads").as_int64(), 1) << cq;
  EXPECT_EQ(Send("GET", "/notebooks/team-a/nb/api/status", other_).status, 404);

  // A tab left open polls on its own: that does not bring it back.
  net::Response poll = Send("GET", "/notebooks/team-a/nb/api/contents", member_);
  EXPECT_EQ(poll.status, 503) << poll.body;
  EXPECT_EQ(StateOf("nb"), "Parked");

  // Opening it resumes it: the page waits, then Jupyter has the same files.
  net::Response page = Send("GET", "/notebooks/team-a/nb/tree", member_);
  EXPECT_EQ(page.status, 202) << page.body;
  ASSERT_TRUE(WaitServing("nb"));
  net::Response file = Send("GET", "/notebooks/team-a/nb/api/contents/hello.txt", member_);
  EXPECT_EQ(file.status, 200);
  EXPECT_NE(file.body.find("\"content\": \"kept\""), std::string::npos) << file.body;
}

TEST_F(NotebookTest, ABusyKernelOrATypedTerminalKeepsItFromBeingParked) {
  ASSERT_NO_FATAL_FAILURE(CreateNotebook("nb", "3s"));
  ASSERT_TRUE(WaitServing("nb"));
  // A silent long cell: no output, no CPU, no traffic; the kernel is busy.
  EXPECT_EQ(Client("nb", "exec-start", "import time; time.sleep(10)"), "busy\n");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(7);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(StateOf("nb"), "Running") << "parked with a busy kernel";
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  // Someone types in a terminal for longer than the idle time.
  EXPECT_EQ(Client("nb", "terminal", "7"), "typed\n");
  EXPECT_EQ(StateOf("nb"), "Running") << "parked while someone typed";
  // Then nothing: parked.
  json::value w = srv_->WaitForWorkload(
      "team-a/nb", [](const json::value& v) { return WorkloadStateOf(v) == "Parked"; },
      std::chrono::seconds(60));
  EXPECT_EQ(WorkloadStateOf(w), "Parked");
}

}  // namespace
}  // namespace allot::server::testing
