#!/usr/bin/env bash
# Resume latency (docs/parking.md): a real `allot serve` and one agent
# process with NODES simulated nodes of 8 GPUs (simulated execution: a pod
# "runs" as soon as the agent starts it), N running one-GPU workloads. Each
# in turn is parked, then resumed, timing (1) the resume request itself,
# which places it (curl's time_total on loopback), and (2) request to
# Running, the agent told and its pod reported running (a GET with curl
# every 5 ms: each check costs a few ms, so this figure is coarse).
# Reports p50 and p99 of each. Builds nothing.
#
# BORROW=0: its GPU is free at the resume. BORROW=1: the other GPUs are
# held by fillers of another ClusterQueue, and one preemptible workload of
# a ClusterQueue without quota in the owners' cohort runs on each parked GPU
# before the resume (it is lent, and waits in its queue between rounds), so
# every resume evicts it first; reclaim grace 0 s and simulated execution,
# so the borrower's stop itself costs nothing (its grace is excluded).
#
#   N=50 NODES=8 BORROW=1 bench/resume_bench.sh
set -euo pipefail

BUILD=${BUILD:-build}
N=${N:-50}
NODES=${NODES:-8}
BORROW=${BORROW:-0}
ALLOT=$BUILD/allot
[ -x "$ALLOT" ] || { echo "resume_bench.sh: no $ALLOT; build it first" >&2; exit 2; }
. "$(dirname "$0")/agents_lib.sh"

start_server resume-bench
api() { curl -sf -H "Authorization: Bearer $TOKEN" "$@"; }
# cq NAME QUOTA [METADATA]: a ClusterQueue of h100 GPUs with LocalQueue
# t/NAME (t/q for cq), in cohort `all` unless NAME is fill.
cq() {
  printf -- '---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: %s%s}\n' "$1" "${3:-}"
  printf 'spec:\n'
  [ "$1" = fill ] || printf '  cohort: all\n'
  printf '  namespaceSelector: {}\n  resourceGroups:\n'
  printf '  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: h100\n'
  printf '      resources: [{name: nvidia.com/gpu, nominalQuota: %d}]\n' "$2"
  printf -- '---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: %s, namespace: t}\nspec: {clusterQueue: %s}\n' \
    "$([ "$1" = cq ] && echo q || echo "$1")" "$1"
}
{
  printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n'
  printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: t}\n'
  cq cq $((BORROW ? N : NODES * 8)) ', annotations: {allot.dev/reclaim-grace: 0s}'
  if [ "$BORROW" = 1 ]; then
    cq spot 0
    cq fill $((NODES * 8 - N))
  fi
} > "$DIR/cluster.yaml"
api -X POST -H 'Content-Type: application/yaml' --data-binary "@$DIR/cluster.yaml" \
  "$URL/api/v1/apply" > /dev/null
start_agents gpu "$NODES" --simulate-gpus 8xH100-80GB
{
  for i in $(seq -w 1 "$N"); do
    printf -- '---\napiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w%s, namespace: t, annotations: {allot.dev/simulated-runtime: 1h}}\n' "$i"
    printf 'spec:\n  queueName: q\n  podSets:\n  - name: main\n    count: 1\n    template: {resources: {requests: {nvidia.com/gpu: 1}}, command: ["true"]}\n'
  done
  if [ "$BORROW" = 1 ] && [ $((NODES * 8 - N)) -gt 0 ]; then
    printf -- '---\napiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: fill, namespace: t, annotations: {allot.dev/simulated-runtime: 1h}}\n'
    printf 'spec:\n  queueName: fill\n  podSets:\n  - name: main\n    count: %d\n    template: {resources: {requests: {nvidia.com/gpu: 1}}, command: ["true"]}\n' $((NODES * 8 - N))
  fi
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
[ "$BORROW" = 1 ] && until is fill Running; do sleep 0.1; done
placed=() running=()
for i in $(seq -w 1 "$N"); do
  api -X POST "$URL/api/v1/workloads/t/w$i/park" > /dev/null
  until is "w$i" Parked; do sleep 0.01; done
  if [ "$BORROW" = 1 ]; then
    if [ "$i" = "$(seq -w 1 "$N" | head -1)" ]; then
      printf 'apiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: spot, namespace: t, annotations: {allot.dev/simulated-runtime: 1h, allot.dev/preemptible: "true"}}\nspec:\n  queueName: spot\n  podSets:\n  - name: main\n    count: 1\n    template: {resources: {requests: {nvidia.com/gpu: 1}}, command: ["true"]}\n' |
        api -X POST -H 'Content-Type: application/yaml' --data-binary @- "$URL/api/v1/apply" > /dev/null
    fi
    until is spot Running; do sleep 0.01; done  # On w$i's GPU.
  fi
  t0=$(date +%s%N)
  placed+=("$(api -o "$DIR/resume.json" -w '%{time_total}' -X POST "$URL/api/v1/workloads/t/w$i/resume")")
  grep -q '"result":"resumed"' "$DIR/resume.json" || { cat "$DIR/resume.json"; exit 1; }
  until is "w$i" Running; do sleep 0.005; done
  running+=("$(( ($(date +%s%N) - t0) / 1000 ))")
done
pct() { sort -g | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p); if (i<1) i=1; if (i>NR) i=NR; print a[i]}'; }
echo "N=$N resumes, $NODES nodes x 8 simulated GPUs, agents polling every 5 s (held polls)," \
  "$([ "$BORROW" = 1 ] && echo "each evicting a borrower" || echo "no borrower to evict")"
printf 'resume request (placed): p50 %.2f ms, p99 %.2f ms\n' \
  "$(printf '%s\n' "${placed[@]}" | pct 0.5 | awk '{print $1*1000}')" \
  "$(printf '%s\n' "${placed[@]}" | pct 0.99 | awk '{print $1*1000}')"
printf 'request to Running (pod started and reported): p50 %.1f ms, p99 %.1f ms\n' \
  "$(printf '%s\n' "${running[@]}" | pct 0.5 | awk '{print $1/1000}')" \
  "$(printf '%s\n' "${running[@]}" | pct 0.99 | awk '{print $1/1000}')"
