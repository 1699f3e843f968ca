#!/usr/bin/env bash
# GET /metrics against a large cluster: CQS ClusterQueues (each with its own
# tenant and LocalQueue, in cohorts of 10) and NODES simulated nodes of 8
# GPUs (`allot agent --simulate-nodes`, telemetry every second), one
# workload per LocalQueue holding GPUs. Reports the scrape's size and the
# median of RUNS scrape times (curl's time_total, loopback). Builds nothing.
#
#   CQS=1000 NODES=1250 bench/metrics_bench.sh    # 10,000 GPUs
#   DASHBOARD=1 ... bench/metrics_bench.sh         # and the dashboard's first loads
set -euo pipefail

BUILD=${BUILD:-build}
CQS=${CQS:-1000}
NODES=${NODES:-1250}
RUNS=${RUNS:-11}
ALLOT=$BUILD/allot
[ -x "$ALLOT" ] || { echo "metrics_bench.sh: no $ALLOT; build it first" >&2; exit 2; }
. "$(dirname "$0")/agents_lib.sh"

start_server metrics-bench
api() { curl -sf -H "Authorization: Bearer $TOKEN" "$@"; }

# The configuration: one flavor; CQS tenants, ClusterQueues and LocalQueues.
{
  printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n'
  for i in $(seq -w 0 $((CQS - 1))); do
    printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: t%s}\n' "$i"
    printf -- '---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq%s}\n' "$i"
    printf 'spec:\n  cohort: c%s\n  namespaceSelector: {}\n' "$((10#$i / 10))"
    printf '  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n'
    printf '    - name: h100\n      resources: [{name: nvidia.com/gpu, nominalQuota: 10, borrowingLimit: 5}]\n'
    printf -- '---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q, namespace: t%s}\nspec: {clusterQueue: cq%s}\n' "$i" "$i"
  done
} > "$DIR/cluster.yaml"
api -X POST -H 'Content-Type: application/yaml' --data-binary "@$DIR/cluster.yaml" \
  "$URL/api/v1/apply" > /dev/null
start_agents gpu "$NODES" --simulate-gpus 8xH100-80GB --sample-seconds ${SAMPLE_SECONDS:-1}
want=$((NODES * 8))
for _ in $(seq 1 600); do
  have=$(api "$URL/metrics" | grep -c '^DCGM_FI_DEV_GPU_UTIL{' || true)
  [ "$have" -ge "$want" ] && break
  sleep 1
done
echo "GPUs with telemetry: $have of $want"
# One workload per LocalQueue, 4 GPUs each (runs for an hour).
{
  for i in $(seq -w 0 $((CQS - 1))); do
    printf -- '---\napiVersion: allot.dev/v1\nkind: Workload\nmetadata: {name: w, namespace: t%s, annotations: {allot.dev/simulated-runtime: 1h}}\n' "$i"
    printf 'spec:\n  queueName: q\n  podSets:\n  - name: main\n    count: 1\n    template: {resources: {requests: {nvidia.com/gpu: 4}}, command: ["true"]}\n'
  done
} > "$DIR/workloads.yaml"
api -X POST -H 'Content-Type: application/yaml' --data-binary "@$DIR/workloads.yaml" \
  "$URL/api/v1/apply" > /dev/null
sleep 3
api "$URL/metrics" > "$DIR/metrics.txt"
echo "scrape: $(wc -c < "$DIR/metrics.txt") bytes, $(grep -vc '^#' "$DIR/metrics.txt") samples," \
  "$(grep -c '^DCGM_FI_DEV_GPU_UTIL{.*workload="w"' "$DIR/metrics.txt") GPUs held"
times=()
for _ in $(seq 1 "$RUNS"); do
  times+=("$(api -o /dev/null -w '%{time_total}' "$URL/metrics")")
done
printf '%s\n' "${times[@]}" | sort -n | awk -v n="$RUNS" '
  {t[NR] = $1} END {printf "GET /metrics: median %.1f ms, min %.1f ms, max %.1f ms over %d runs\n",
    t[int((n + 1) / 2)] * 1000, t[1] * 1000, t[n] * 1000, n}'
echo "server RSS: $(awk '/VmRSS/ {printf "%.1f MiB", $2 / 1024}' "/proc/$SERVER_PID/status")"
# DASHBOARD=1: the dashboard's first load of each page against this cluster
# (Debian's chromium; web/node_modules from `make web-deps`).
if [ "${DASHBOARD:-0}" = 1 ]; then
  # What the pages read, each on its own (median of 5).
  for path in /api/v1/overview "/api/v1/nodes?limit=200" "/api/v1/workloads?limit=200" \
              /api/v1/nodes /api/v1/workloads /api/v1/clusterqueues /api/v1/resourceflavors \
              "/api/v1/usage?by=tenant" "/api/v1/usage/idle?minutes=30" "/api/v1/telemetry?node=gpu-00000"; do
    for _ in 1 2 3 4 5; do api -o /dev/null -w '%{time_total} %{size_download}\n' "$URL$path"; done |
      sort -n | awk -v p="$path" 'NR == 3 {printf "GET %s: median %.1f ms, %d bytes\n", p, $1 * 1000, $2}'
  done
  for p in overview queues nodes workloads; do
    node "$(dirname "$0")/../web/test/load_bench.mjs" "$URL" "$TOKEN" "$p" "${RUNS_UI:-5}"
  done
fi
