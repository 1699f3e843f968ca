// Pod templates map across: secret env, envFrom, imagePullSecrets, volumes
// and mounts, and the security context land in the PodSet, alike from a
// Job, a Kueue Workload and allot.dev/v1's compact template; fields with no
// effect are accepted; every mapped field survives the encoding the server
// stores (parse -> encode -> parse). Refused fields:
// manifest_pod_errors_test.cc.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "core/manifest_encode.h"

namespace allot::core {
namespace {

Workload ParseOne(const std::string& yaml) {
  Config c;
  Status s = ParseManifests(yaml, "pod.yaml", &c);
  EXPECT_TRUE(s.ok()) << s.message();
  if (c.workloads.size() != 1) {
    ADD_FAILURE() << "want one workload, got " << c.workloads.size();
    return Workload();
  }
  return c.workloads[0];
}

// A PodSpec's storage and a container's run fields (indented for a Job's
// template spec: 6 spaces for the pod, 8 for the container).
constexpr char kPodStorage[] = R"(      imagePullSecrets: [{name: regcred}]
      volumes:
      - {name: scratch, emptyDir: {}}
      - {name: shm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}
      - {name: data, hostPath: {path: /srv/data, type: Directory}}
      - {name: creds, secret: {secretName: hub}}
      - {name: ckpt, persistentVolumeClaim: {claimName: checkpoints, readOnly: true}}
)";
constexpr char kContainerRun[] = R"(        image: trainer:1
        env:
        - {name: EPOCHS, value: "3"}
        - name: TOKEN
          valueFrom: {secretKeyRef: {name: hub, key: token, optional: true}}
        envFrom:
        - {secretRef: {name: wandb}, prefix: WANDB_}
        - secretRef: {name: extra, optional: true}
        volumeMounts:
        - {name: scratch, mountPath: /scratch}
        - {name: data, mountPath: /data, readOnly: true}
        - {name: creds, mountPath: /etc/hub/token, subPath: token}
        - {name: ckpt, mountPath: /ckpt}
)";

Volume Vol(const std::string& name, Volume::Type type) {
  Volume v;
  v.name = name;
  v.type = type;
  return v;
}

// What kPodStorage and kContainerRun map to.
void ExpectMapped(const PodSet& ps) {
  EXPECT_EQ(ps.image, "trainer:1");
  EXPECT_EQ(ps.env, (std::vector<std::pair<std::string, std::string>>{
                        {"EPOCHS", "3"}}));
  EXPECT_EQ(ps.env_secrets,
            (std::vector<SecretEnvVar>{{"TOKEN", {"hub", "token", true}}}));
  EXPECT_EQ(ps.env_from, (std::vector<SecretEnvFrom>{{"wandb", "WANDB_", false},
                                                     {"extra", "", true}}));
  EXPECT_EQ(ps.image_pull_secrets, std::vector<std::string>{"regcred"});
  ASSERT_EQ(ps.volumes.size(), 5u);
  Volume scratch = Vol("scratch", Volume::Type::kEmptyDir);
  Volume shm = Vol("shm", Volume::Type::kEmptyDir);
  shm.medium = "Memory";
  shm.size_limit_bytes = 1 << 30;
  Volume data = Vol("data", Volume::Type::kHostPath);
  data.path = "/srv/data";
  Volume creds = Vol("creds", Volume::Type::kSecret);
  creds.secret = "hub";
  Volume ckpt = Vol("ckpt", Volume::Type::kClaim);
  ckpt.claim = "checkpoints";
  ckpt.read_only = true;
  EXPECT_EQ(ps.volumes, (std::vector<Volume>{scratch, shm, data, creds, ckpt}));
  EXPECT_EQ(ps.volume_mounts,
            (std::vector<VolumeMount>{{"scratch", "/scratch", "", false},
                                      {"data", "/data", "", true},
                                      {"creds", "/etc/hub/token", "token", false},
                                      {"ckpt", "/ckpt", "", false}}));
}

std::string Job(const std::string& pod, const std::string& container) {
  return R"(apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  suspend: true
  template:
    spec:
)" + pod + R"(      restartPolicy: Never
      containers:
      - name: main
)" + container;
}

// `text` with `delta` spaces added to (or, below 0, taken from) each line.
std::string Indent(const std::string& text, int delta) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end + 1 - start);
    out += delta >= 0 ? std::string(delta, ' ') + line : line.substr(-delta);
    start = end + 1;
  }
  return out;
}

// The same PodSpec as a Kueue Workload's pod set (two more spaces).
std::string KueueWorkload(const std::string& pod, const std::string& container) {
  const std::string indented =
      Indent(pod + "      containers:\n      - name: main\n" + container, 2);
  return R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  podSets:
  - name: main
    count: 1
    template:
      spec:
)" + indented;
}

TEST(ManifestPodTest, JobAndKueueWorkloadMapAlike) {
  const std::string sec =
      "      securityContext: {runAsUser: 1000, runAsNonRoot: true}\n      hostNetwork: true\n";
  for (const std::string& yaml : {Job(kPodStorage + sec, kContainerRun),
                                  KueueWorkload(kPodStorage + sec, kContainerRun)}) {
    SCOPED_TRACE(yaml);
    const Workload w = ParseOne(yaml);
    ASSERT_EQ(w.pod_sets.size(), 1u);
    ExpectMapped(w.pod_sets[0]);
    EXPECT_EQ(w.pod_sets[0].run_as_user, 1000);
    EXPECT_TRUE(w.pod_sets[0].run_as_non_root);
    EXPECT_TRUE(w.pod_sets[0].read_only_root);  // Allot's default.
    EXPECT_TRUE(w.pod_sets[0].host_network);     // The server checks the tenant may.
  }
}

// The compact template takes the same fields, at one level.
TEST(ManifestPodTest, CompactTemplateMapsAlike) {
  const std::string indented = kPodStorage + Indent(kContainerRun, -2);
  const Workload w = ParseOne(R"(apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  podSets:
  - template:
)" + indented + "      securityContext: {runAsGroup: 5, readOnlyRootFilesystem: false}\n");
  ASSERT_EQ(w.pod_sets.size(), 1u);
  ExpectMapped(w.pod_sets[0]);
  EXPECT_EQ(w.pod_sets[0].run_as_group, 5);
  EXPECT_FALSE(w.pod_sets[0].read_only_root);
  EXPECT_FALSE(w.pod_sets[0].host_network);
}

// The container's securityContext wins over the pod's, field by field.
TEST(ManifestPodTest, ContainerSecurityContextWins) {
  const PodSet ps = ParseOne(Job(
      "      securityContext: {runAsUser: 1000, runAsGroup: 100, "
      "runAsNonRoot: true}\n",
      "        securityContext: {runAsUser: 0, runAsNonRoot: false, "
      "readOnlyRootFilesystem: false}\n"))
                        .pod_sets.at(0);
  EXPECT_EQ(ps.run_as_user, 0);
  EXPECT_EQ(ps.run_as_group, 100);
  EXPECT_FALSE(ps.run_as_non_root);
  EXPECT_FALSE(ps.read_only_root);
}

// Documentation, Kubernetes defaults and requests for less privilege than
// Allot grants anyway parse, and change nothing.
TEST(ManifestPodTest, NoEffectFieldsAreAccepted) {
  const std::string pod = R"(      dnsPolicy: ClusterFirst
      schedulerName: default-scheduler
      terminationGracePeriodSeconds: 30
      automountServiceAccountToken: false
      hostPID: false
      hostIPC: false
      securityContext: {seccompProfile: {type: RuntimeDefault}}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution: []
      volumes: [{name: v, emptyDir: {}}]
)";
  const std::string container = R"(        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: FallbackToLogsOnError
        ports: [{name: http, containerPort: 8080, protocol: TCP}]
        volumeMounts: [{name: v, mountPath: /v, mountPropagation: None}]
        stdin: false
        securityContext:
          privileged: false
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
          seccompProfile: {type: RuntimeDefault}
)";
  const PodSet ps = ParseOne(Job(pod, container)).pod_sets.at(0);
  PodSet want;
  want.name = "main";
  want.volumes = {Vol("v", Volume::Type::kEmptyDir)};
  want.volume_mounts = {{"v", "/v", "", false}};
  want.port = 8080;  // The first port: where the pod serves (docs/notebooks.md).
  EXPECT_EQ(ps, want);
}

// Everything a pod template maps survives the encoding the server keeps.
TEST(ManifestPodTest, MappedFieldsRoundTrip) {
  const std::string sec =
      "      securityContext: {runAsUser: 7, runAsGroup: 8, runAsNonRoot: true}\n";
  const std::string container =
      std::string(kContainerRun) + "        securityContext: {readOnlyRootFilesystem: false}\n";
  for (const std::string& yaml : {Job(kPodStorage + sec, container),
                                  KueueWorkload(kPodStorage, kContainerRun)}) {
    SCOPED_TRACE(yaml);
    const Workload w = ParseOne(yaml);
    const std::string json = boost::json::serialize(EncodeWorkload(w));
    const Workload back = ParseOne(json);
    EXPECT_EQ(back, w) << json;
    EXPECT_EQ(boost::json::serialize(EncodeWorkload(back)), json);
  }
}

}  // namespace
}  // namespace allot::core
