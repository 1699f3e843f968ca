// Pod template fields Allot does not support are errors that name the
// field and say why or what to use instead, never dropped in silence: in a
// Job's template, a Kueue Workload's pod set and allot.dev/v1's compact
// template. Mapped fields: manifest_pod_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/manifest.h"

namespace allot::core {
namespace {

struct Case {
  std::string pod;        // PodSpec lines (6 spaces), before containers.
  std::string container;  // First container lines (8 spaces).
  std::string field;      // Status::field() under spec.template.spec.
  std::string message;    // A fragment of the message.
};

std::string Job(const Case& c) {
  return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: "
         "{kueue.x-k8s.io/queue-name: q}}\nspec:\n  template:\n    spec:\n" +
         c.pod + "      containers:\n      - name: main\n" + c.container;
}

void ExpectError(const std::string& yaml, const std::string& field,
                 const std::string& message) {
  Config config;
  Status s = ParseManifests(yaml, "bad.yaml", &config);
  ASSERT_FALSE(s.ok()) << yaml;
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), field) << s.message();
  EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
  EXPECT_TRUE(config.workloads.empty());
}

TEST(ManifestPodErrorsTest, RefusedPodSpecFields) {
  const std::vector<Case> cases = {
      {"      hostPID: true\n", "", "hostPID", "not supported (only false)"},
      {"      restartPolicy: Always\n", "", "restartPolicy", "only Never, OnFailure"},
      {"      serviceAccountName: builder\n", "", "serviceAccountName",
       "no Kubernetes service account"},
      {"      nodeName: gpu-01\n", "", "nodeName", "kubernetes.io/hostname"},
      {"      priorityClassName: high\n", "", "priorityClassName",
       "kueue.x-k8s.io/priority-class"},
      {"      runtimeClassName: nvidia\n", "", "runtimeClassName", "runc"},
      {"      terminationGracePeriodSeconds: 5\n", "",
       "terminationGracePeriodSeconds", "allot.dev/termination-grace-period"},
      {"      schedulerName: volcano\n", "", "schedulerName", "Allot is the scheduler"},
      {"      hostAliases: []\n", "", "hostAliases", "no DNS names"},
      {"      topologySpreadConstraints: []\n", "", "topologySpreadConstraints",
       "topology request"},
      {"      os: {name: linux}\n", "", "os", "unknown field \"os\""},
      {"      affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: []}}\n",
       "", "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
       "other pods' labels"},
      {"      securityContext: {fsGroup: 2000}\n", "", "securityContext.fsGroup",
       "changes no volume's owner"},
      {"      securityContext: {sysctls: []}\n", "", "securityContext.sysctls",
       "kernel parameters"},
      {"      securityContext: {seccompProfile: {type: Unconfined}}\n", "",
       "securityContext.seccompProfile.type", "only RuntimeDefault"},
      {"      securityContext: {runAsNonRoot: true}\n",
       "        securityContext: {runAsUser: 0}\n",
       "containers[0].securityContext.runAsUser", "0 (root) while runAsNonRoot"},
      {"      securityContext: {runAsUser: -1}\n", "", "securityContext.runAsUser",
       "must not be negative"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pod + c.container);
    ExpectError(Job(c), "spec.template.spec." + c.field, c.message);
  }
}

// The Job's own spec: the fields that change how it runs or ends are read
// or refused; the Kubernetes bookkeeping ones are accepted.
TEST(ManifestPodErrorsTest, JobSpecFieldsReadAcceptedOrRefused) {
  auto job = [](const std::string& lines) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: "
           "{kueue.x-k8s.io/queue-name: q}}\nspec:\n" + lines +
           "  template:\n    spec:\n      containers:\n      - name: main\n";
  };
  Config config;
  Status s = ParseManifests(job("  suspend: true\n  completionMode: Indexed\n"
                                "  ttlSecondsAfterFinished: 60\n  podReplacementPolicy: Failed\n"
                                "  managedBy: kubernetes.io/job-controller\n"),
                            "ok.yaml", &config);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ExpectError(job("  podFailurePolicy: {rules: []}\n"), "spec.podFailurePolicy",
              "restarts whole as backoffLimit says");
  ExpectError(job("  successPolicy: {rules: []}\n"), "spec.successPolicy", "every pod exits 0");
  ExpectError(job("  backoffLimitPerIndex: 2\n"), "spec.backoffLimitPerIndex", "backoffLimit");
  ExpectError(job("  managedBy: kueue.x-k8s.io/multikueue\n"), "spec.managedBy", "MultiKueue");
  ExpectError(job("  completionMode: Sparse\n"), "spec.completionMode",
              "only NonIndexed, Indexed");
  ExpectError(job("  paralelism: 2\n"), "spec.paralelism", "unknown field");
}

TEST(ManifestPodErrorsTest, RefusedContainerFields) {
  const std::vector<Case> cases = {
      {"", "        livenessProbe: {exec: {command: [true]}}\n", "livenessProbe",
       "does not probe"},
      {"", "        lifecycle: {preStop: {exec: {command: [true]}}}\n", "lifecycle",
       "no postStart or preStop"},
      {"", "        tty: true\n", "tty", "no terminal"},
      {"", "        ports: [{containerPort: 80, hostPort: 80}]\n", "ports[0].hostPort",
       "no host ports"},
      {"", "        resources: {claims: [{name: gpu}]}\n", "resources.claims",
       "dynamic resource claims"},
      {"", "        securityContext: {privileged: true}\n", "securityContext.privileged",
       "never grants"},
      {"", "        securityContext: {allowPrivilegeEscalation: true}\n",
       "securityContext.allowPrivilegeEscalation", "never grants"},
      {"", "        securityContext: {capabilities: {add: [SYS_ADMIN]}}\n",
       "securityContext.capabilities.add", "never grants"},
      {"", "        env: [{name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n",
       "env[0].valueFrom.fieldRef", "secretKeyRef only"},
      {"", "        env: [{name: A, valueFrom: {configMapKeyRef: {name: c, key: k}}}]\n",
       "env[0].valueFrom.configMapKeyRef", "secretKeyRef only"},
      {"", "        env: [{name: A, value: x, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n",
       "env[0].valueFrom", "not both"},
      {"", "        env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: ../k}}}]\n",
       "env[0].valueFrom.secretKeyRef.key", "not a valid key"},
      {"", "        env: [{name: A, valueFrom: {secretKeyRef: {name: S_1, key: k}}}]\n",
       "env[0].valueFrom.secretKeyRef.name", "DNS-1123 subdomain"},
      {"", "        envFrom: [{configMapRef: {name: c}}]\n", "envFrom[0].configMapRef",
       "secretRef only"},
      {"", "        envFrom: [{prefix: P_}]\n", "envFrom[0].secretRef",
       "required field is missing"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.container);
    ExpectError(Job(c), "spec.template.spec.containers[0]." + c.field, c.message);
  }
}

// Only the first container runs; the others count for resources only.
TEST(ManifestPodErrorsTest, ExtraContainersCarryOnlyResources) {
  const std::string second = "      - {name: side, image: fluent-bit}\n";
  ExpectError(Job({"", "        image: app\n" + second, "", ""}),
              "spec.template.spec.containers[1].image",
              "Allot runs only the first container");
  ExpectError(Job({"      initContainers: [{name: init, command: [setup]}]\n", "", "", ""}),
              "spec.template.spec.initContainers[0].command",
              "(and restartPolicy: Always)");
  ExpectError(Job({"      initContainers: [{name: i, restartPolicy: OnFailure}]\n", "", "",
                   ""}),
              "spec.template.spec.initContainers[0].restartPolicy", "must be Always");
}

TEST(ManifestPodErrorsTest, BadVolumesAndMounts) {
  const std::vector<Case> cases = {
      {"      volumes: [{name: c, configMap: {name: x}}]\n", "", "volumes[0].configMap",
       "emptyDir, hostPath, secret and persistentVolumeClaim"},
      {"      volumes: [{name: c, emptyDir: {}, hostPath: {path: /x}}]\n", "",
       "volumes[0].hostPath", "this one has emptyDir too"},
      {"      volumes: [{name: c}]\n", "", "volumes[0]", "has no source"},
      {"      volumes: [{name: Data, emptyDir: {}}]\n", "", "volumes[0].name",
       "DNS-1123 label"},
      {"      volumes: [{name: a, emptyDir: {}}, {name: a, emptyDir: {}}]\n", "",
       "volumes[1].name", "duplicate volume name a"},
      {"      volumes: [{name: a, emptyDir: {medium: HugePages}}]\n", "",
       "volumes[0].emptyDir.medium", "Memory"},
      {"      volumes: [{name: a, emptyDir: {sizeLimit: 0}}]\n", "",
       "volumes[0].emptyDir.sizeLimit", "above 0"},
      {"      volumes: [{name: a, hostPath: {path: data}}]\n", "",
       "volumes[0].hostPath.path", "absolute path"},
      {"      volumes: [{name: a, hostPath: {path: /srv/../etc}}]\n", "",
       "volumes[0].hostPath.path", ". or .. parts"},
      {"      volumes: [{name: a, hostPath: {path: /dev/nvidia0, type: CharDevice}}]\n",
       "", "volumes[0].hostPath.type", "binds no files, sockets or devices"},
      {"      volumes: [{name: a, hostPath: {path: /x, type: DirectoryOrCreate}}]\n", "",
       "volumes[0].hostPath.type", "creates none"},
      {"      volumes: [{name: a, secret: {secretName: s, items: []}}]\n", "",
       "volumes[0].secret.items", "subPath"},
      {"      volumes: [{name: a, persistentVolumeClaim: {claimName: ..}}]\n", "",
       "volumes[0].persistentVolumeClaim.claimName", "not a valid name"},
      {"      volumes: [{name: a, emptyDir: {}}]\n",
       "        volumeMounts: [{name: b, mountPath: /b}]\n",
       "containers[0].volumeMounts[0].name", "names no volume"},
      {"      volumes: [{name: a, emptyDir: {}}]\n",
       "        volumeMounts: [{name: a, mountPath: /a}, {name: a, mountPath: /a}]\n",
       "containers[0].volumeMounts[1].mountPath", "another mount is on /a"},
      {"      volumes: [{name: a, emptyDir: {}}]\n",
       "        volumeMounts: [{name: a, mountPath: /a, subPath: ../up}]\n",
       "containers[0].volumeMounts[0].subPath", "a relative path"},
      {"      volumes: [{name: a, emptyDir: {}}]\n",
       "        volumeMounts: [{name: a, mountPath: /a, mountPropagation: Bidirectional}]\n",
       "containers[0].volumeMounts[0].mountPropagation", "private to the pod"},
      {"      imagePullSecrets: [{}]\n", "", "imagePullSecrets[0].name",
       "required field is missing"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pod + c.container);
    ExpectError(Job(c), "spec.template.spec." + c.field, c.message);
  }
}

// The compact template and a Kueue Workload refuse alike.
TEST(ManifestPodErrorsTest, OtherKindsRefuseAlike) {
  ExpectError(R"(apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  podSets:
  - template:
      securityContext: {capabilities: {add: [NET_ADMIN]}}
)",
              "spec.podSets[0].template.securityContext.capabilities.add", "never grants");
  ExpectError(R"(apiVersion: allot.dev/v1
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  podSets:
  - template:
      volumes: [{name: n, nfs: {server: x, path: /}}]
)",
              "spec.podSets[0].template.volumes[0].nfs", "not supported");
  ExpectError(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w}
spec:
  queueName: q
  podSets:
  - name: main
    count: 1
    template:
      spec:
        hostIPC: true
        containers: [{name: c}]
)",
              "spec.podSets[0].template.spec.hostIPC", "IPC");
}

}  // namespace
}  // namespace allot::core
