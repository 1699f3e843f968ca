// The manifest reader's budget (core::ParseLimits) and the bounds on a
// decoded object: hostile inputs of a few bytes must be refused with a
// message naming the limit, quickly and in little memory.
//
// Each hostile input is parsed in a child process under a memory cap
// (RLIMIT_AS; ASan reserves terabytes of address space, so there only the
// time cap holds) and a time cap (alarm): a reader that loops or expands
// without bound then fails the test instead of taking the machine.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/manifest.h"

#if defined(__SANITIZE_ADDRESS__)
#define ALLOT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOT_ASAN 1
#endif
#endif

namespace allot::core {
namespace {

struct Outcome {
  bool finished = false;  // The child returned (else: killed, or no memory).
  std::string message;    // ParseManifests's message ("" = ok).
  std::string how;        // How the child ended, when it did not finish.
};

// Parses `text` in a child limited to `mem_mb` of address space and
// `seconds` of time.
Outcome ParseCapped(const std::string& text, int mem_mb = 512,
                    unsigned seconds = 20) {
  int fds[2];
  if (pipe(fds) != 0) return {false, "", "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
#ifndef ALLOT_ASAN
    rlimit lim{rlim_t(mem_mb) << 20, rlim_t(mem_mb) << 20};
    setrlimit(RLIMIT_AS, &lim);
#else
    (void)mem_mb;
#endif
    alarm(seconds);
    std::string msg;
    try {
      Config c;
      Status s = ParseManifests(text, "body", &c);
      msg = s.ok() ? "" : s.message();
    } catch (const std::bad_alloc&) {
      _exit(3);
    }
    std::string out = "done:" + msg;
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome o;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && got.rfind("done:", 0) == 0) {
    o.finished = true;
    o.message = got.substr(5);
  } else if (WIFSIGNALED(status)) {
    o.how = std::string("killed by signal ") + strsignal(WTERMSIG(status)) +
            (WTERMSIG(status) == SIGALRM ? " (over the time cap)" : "");
  } else {
    o.how = "exit " + std::to_string(WEXITSTATUS(status)) +
            (WEXITSTATUS(status) == 3 ? " (out of memory: std::bad_alloc)" : "");
  }
  return o;
}

// A "billion laughs": each level refers to the one below ten times.
std::string Laughs(int levels) {
  std::string y = "a0: &a0 [lol]\n";
  for (int i = 1; i < levels; ++i) {
    y += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) y += std::string(k ? "," : "") + "*a" + std::to_string(i - 1);
    y += "]\n";
  }
  return y;
}

TEST(ManifestLimitsTest, HostileTextIsRefusedUnderAMemoryCap) {
  struct Case {
    const char* name;
    std::string text;
    const char* want;  // In the message.
  };
  const Case cases[] = {
      // yaml-cpp 0.7's endless documents on a stray token: the guard that
      // scanned for commas missed the ones after a comment ending in | or >.
      {"comment ending in |, then a comma", "{} # |\n ,\n\n", "where a document or value should start"},
      {"comment ending in >, then a comma", "{} # >\n ,\n\n", "where a document or value should start"},
      {"flow map, comma", "{},", "line 1, column 3"},
      {"comma after a key's quoted value", "a: \"b\", c\n", "line 1"},
      {"billion laughs (10^9 nodes from 1 KiB)", Laughs(10), "aliases expand to more than 100000 nodes"},
      {"alias inside its own anchor", "a: &x [1, *x]\n", "an alias refers to a node that contains it"},
      {"deep nesting", std::string(5000, '[') + std::string(5000, ']'), "nested deeper than 64 levels"},
      {"deep JSON nesting", "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}",
       "nested deeper than 64 levels"},
      {"300,000 values", "[" + [] {
         std::string s;
         for (int i = 0; i < 300000; ++i) s += i ? ",1" : "1";
         return s;
       }() + "]",
       "more than 200000 nodes"},
      {"20,000 documents", [] {
         std::string s;
         for (int i = 0; i < 20000; ++i) s += "---\n";
         return s;
       }(),
       "more than 10000 documents"},
  };
  for (const Case& c : cases) {
    Outcome o = ParseCapped(c.text);
    ASSERT_TRUE(o.finished) << c.name << ": the reader did not return: " << o.how;
    EXPECT_NE(o.message.find(c.want), std::string::npos)
        << c.name << ": got \"" << o.message << "\"";
  }
}

TEST(ManifestLimitsTest, AliasesStillWork) {
  Config c;
  Status s = ParseManifests(
      "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w, namespace: t,"
      " labels: &l {team: a}, annotations: *l}\n"
      "spec:\n  queueName: q\n  podSets:\n"
      "  - name: a\n    count: 2\n    template: &t {resources: {requests: {cpu: 1}}, "
      "command: [sh, -c, &cmd 'echo hi']}\n"
      "  - {name: b, count: 1, template: *t}\n",
      "f", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.workloads.size(), 1u);
  const Workload& w = c.workloads[0];
  EXPECT_EQ(w.annotations.at("team"), "a");
  ASSERT_EQ(w.pod_sets.size(), 2u);
  EXPECT_EQ(w.pod_sets[1].command, w.pod_sets[0].command);
  EXPECT_EQ(w.pod_sets[1].command.back(), "echo hi");
  // A scalar anchored as a key can be used as a value.
  Config k;
  s = ParseManifests(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {&k team: *k}}\n",
      "f", &k);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(k.namespaces.at(0).labels.at("team"), "team");
}

std::string Workload(const std::string& spec_tail, const std::string& meta = "") {
  return "apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w" + meta +
         "}\nspec:\n  queueName: q\n" + spec_tail;
}

TEST(ManifestLimitsTest, DecodedObjectsAreBounded) {
  std::string many_sets = "  podSets:\n";
  for (int i = 0; i < 9; ++i) many_sets += "  - {name: p" + std::to_string(i) + ", count: 1, template: {}}\n";
  std::string env = "  podSets:\n  - count: 1\n    template:\n      env:\n";
  for (int i = 0; i < 1100; ++i) env += "      - {name: V" + std::to_string(i) + ", value: x}\n";
  std::string volumes = "  podSets:\n  - count: 1\n    template:\n      volumes:\n";
  for (int i = 0; i < 257; ++i) volumes += "      - {name: v" + std::to_string(i) + ", emptyDir: {}}\n";
  std::string labels = ", labels: {";
  for (int i = 0; i < 300; ++i) labels += (i ? ", l" : "l") + std::to_string(i) + ": v";
  labels += "}";
  // 1,000 env entries of 2 KB: 2 MB once stored.
  std::string big = "  podSets:\n  - count: 1\n    template:\n      env:\n";
  for (int i = 0; i < 1000; ++i) {
    big += "      - {name: V" + std::to_string(i) + ", value: " + std::string(2000, 'x') + "}\n";
  }
  std::string job =
      "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: {kueue.x-k8s.io/queue-name: q}}\n"
      "spec:\n  template:\n    spec:\n      containers:\n";
  for (int i = 0; i < 65; ++i) job += "      - {name: c" + std::to_string(i) + ", image: x}\n";
  struct Case {
    const char* name;
    std::string text;
    const char* field;
    const char* want;
  };
  const Case cases[] = {
      {"a million pods", Workload("  podSets: [{count: 1000000, template: {}}]\n"), "spec.podSets[0].count",
       "at most 10000 pods per workload"},
      {"pods over two sets", Workload("  podSets: [{name: a, count: 6000, template: {}}, {name: b, count: 6000, template: {}}]\n"),
       "spec.podSets[1].count", "at most 10000 pods per workload"},
      {"nine pod sets", Workload(many_sets), "spec.podSets", "at most 8 are allowed, as in Kueue"},
      {"1,100 env entries", Workload(env), "spec.podSets[0].env", "at most 1024"},
      {"257 volumes", Workload(volumes), "spec.podSets[0].volumes", "at most 256"},
      {"300 labels", Workload("  podSets: [{count: 1, template: {}}]\n", labels), "metadata.labels", "at most 256"},
      {"65 containers", job, "spec.template.spec.containers", "at most 64 are allowed"},
      {"a 2 MB object", Workload(big), "", "bytes are allowed for one stored object"},
  };
  for (const Case& c : cases) {
    Config cfg;
    Status s = ParseManifests(c.text, "body", &cfg);
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.field(), c.field) << c.name << ": " << s.message();
    EXPECT_NE(s.message().find(c.want), std::string::npos) << c.name << ": " << s.message();
    EXPECT_TRUE(cfg.workloads.empty()) << c.name;
  }
  // At the limits, all is fine.
  Config ok;
  Status s = ParseManifests(
      Workload("  podSets: [{name: a, count: 5000, template: {}}, {name: b, count: 5000, template: {}}]\n"), "body", &ok);
  EXPECT_TRUE(s.ok()) << s.message();
  // The server's own store is read without the object-size bound.
  Config trusted;
  s = ParseManifests(Workload(big), "store", &trusted, ParseLimits::Trusted());
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace allot::core
