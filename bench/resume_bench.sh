#!/usr/bin/env bash
# Resume latency (docs/parking.md): a real `allot serve` and one agent
# process with NODES simulated nodes of 8 GPUs (simulated execution: a pod
# "runs" as soon as the agent starts it), N running one-GPU workloads. Each
# in turn is parked, then resumed while its GPU is free (no borrower to
# evict; lending is not built yet), timing (1) the resume request itself,
# which places it (curl's time_total on loopback), and (2) request to
# Running, the agent told and its pod reported running (a GET with curl
# every 5 ms: each check costs a few ms, so this figure is coarse).
# Reports p50 and p99 of each. Builds nothing.
#
#   N=50 NODES=8 bench/resume_bench.sh
set -euo pipefail

BUILD=${BUILD:-build}
N=${N:-50}
NODES=${NODES:-8}
ALLOT=$BUILD/allot
[ -x "$ALLOT" ] || { echo "resume_bench.sh: no $ALLOT; build it first" >&2; exit 2; }
. "$(dirname "$0")/agents_lib.sh"

start_server resume-bench
api() { curl -sf -H "Authorization: Bearer $TOKEN" "$@"; }
cat > "$DIR/cluster.yaml" <<YAML
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: v1
kind: Namespace
metadata: {name: t}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: $((NODES * 8))}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: t}
spec: {clusterQueue: cq}
YAML
api -X POST -H 'Content-Type: application/yaml' --data-binary "@$DIR/cluster.yaml" \
  "$URL/api/v1/apply" > /dev/null
start_agents gpu "$NODES" --simulate-gpus 8xH100-80GB
{
  for i in $(seq -w 1 "$N"); do
    printf -- '---\napiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w%s, namespace: t, annotations: {allot.dev/simulated-runtime: 1h}}\n' "$i"
    printf 'spec:\n  queueName: q\n  podSets:\n  - name: main\n    count: 1\n    template: {resources: {requests: {nvidia.com/gpu: 1}}, command: ["true"]}\n'
  done
} > "$DIR/workloads.yaml"
for _ in $(seq 1 100); do
  api -X POST -H 'Content-Type: application/yaml' --data-binary "@$DIR/workloads.yaml" \
    "$URL/api/v1/apply" > /dev/null 2>&1 && break
  sleep 0.2  # Until the agents' nodes are registered.
done
is() { api "$URL/api/v1/workloads/t/$1" | grep -q "\"state\":\"$2\""; }
for _ in $(seq 1 600); do
  [ "$(api "$URL/api/v1/workloads?state=Running" | grep -o '"name":"w[0-9]*"' | wc -l)" -ge "$N" ] && break
  sleep 0.2
done
placed=() running=()
for i in $(seq -w 1 "$N"); do
  api -X POST "$URL/api/v1/workloads/t/w$i/park" > /dev/null
  until is "w$i" Parked; do sleep 0.01; done
  t0=$(date +%s%N)
  placed+=("$(api -o "$DIR/resume.json" -w '%{time_total}' -X POST "$URL/api/v1/workloads/t/w$i/resume")")
  grep -q '"result":"resumed"' "$DIR/resume.json" || { cat "$DIR/resume.json"; exit 1; }
  until is "w$i" Running; do sleep 0.005; done
  running+=("$(( ($(date +%s%N) - t0) / 1000 ))")
done
pct() { sort -g | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p); if (i<1) i=1; if (i>NR) i=NR; print a[i]}'; }
echo "N=$N resumes, $NODES nodes x 8 simulated GPUs, agents polling every 5 s (held polls)"
printf 'resume request (placed): p50 %.2f ms, p99 %.2f ms\n' \
  "$(printf '%s\n' "${placed[@]}" | pct 0.5 | awk '{print $1*1000}')" \
  "$(printf '%s\n' "${placed[@]}" | pct 0.99 | awk '{print $1*1000}')"
printf 'request to Running (pod started and reported): p50 %.1f ms, p99 %.1f ms\n' \
  "$(printf '%s\n' "${running[@]}" | pct 0.5 | awk '{print $1/1000}')" \
  "$(printf '%s\n' "${running[@]}" | pct 0.99 | awk '{print $1/1000}')"
