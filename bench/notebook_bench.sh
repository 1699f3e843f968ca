#!/usr/bin/env bash
# Notebooks (docs/notebooks.md): a real `allot serve` and one `allot agent`
# (process runtime, 8 simulated GPUs) running Debian's jupyter-notebook,
# driven through the server's proxy by tests/e2e/jupyter_client.py as a
# browser would. Reports:
#
#  1. create: `apply` of a Notebook on an idle cluster to a cell's output
#     back through the proxy (REPS notebooks, each deleted after);
#  2. resume: a parked notebook's first visit (GET .../tree, which resumes
#     it) to a cell's output (REPS parks and visits);
#  3. a kernel round trip (a trivial cell: execute_request to the idle
#     status) through the proxy and straight to Jupyter's port on loopback,
#     alternated ROUNDS times x RTT cells each (the direct side needs the
#     pod's Jupyter token, which this script derives from the server key
#     file as the server does: an admin's measurement);
#  4. HOLD kernel WebSockets held open through the proxy (one kernel): the
#     server's RSS before and while they are held, and whether each still
#     answers; then ACTIVE kernels each running a cell every second for
#     ACTIVE_SECONDS s: the server's CPU seconds in that time, per 100 kernels.
#
#   REPS=5 ROUNDS=3 RTT=200 HOLD=200 ACTIVE=10 ACTIVE_SECONDS=30 bench/notebook_bench.sh
set -euo pipefail

BUILD=${BUILD:-build}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-3}
RTT=${RTT:-200}
HOLD=${HOLD:-200}
ACTIVE=${ACTIVE:-10}
SECONDS_ACTIVE=${ACTIVE_SECONDS:-30}
ALLOT=$BUILD/allot
HERE=$(cd "$(dirname "$0")" && pwd)
CLIENT="/usr/bin/python3 $HERE/../tests/e2e/jupyter_client.py"
[ -x "$ALLOT" ] || { echo "notebook_bench.sh: no $ALLOT; build it first" >&2; exit 2; }
command -v jupyter-notebook > /dev/null || { echo "notebook_bench.sh: make deps installs jupyter-notebook" >&2; exit 2; }
. "$HERE/agents_lib.sh"

start_server notebook-bench
chmod 711 "$DIR"  # The tenant's ids must reach their home under it.
"$ALLOT" agent --server "$URL" --token "$TOKEN" --name n1 --simulate-gpus 8xH100-80GB \
  --log-dir "$DIR/pods" --poll-seconds 1 > "$DIR/agent.log" 2>&1 &
AGENT_PID=$!
api() { curl -sf -H "Authorization: Bearer $TOKEN" "$@"; }
api -X POST -H 'Content-Type: application/yaml' --data-binary @- "$URL/api/v1/apply" > /dev/null <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: t}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: sim}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: sim
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: t}
spec: {clusterQueue: cq}
EOF
for _ in $(seq 1 100); do api "$URL/api/v1/nodes/n1" > /dev/null 2>&1 && break; sleep 0.1; done

now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
notebook() {
  api -X POST -H 'Content-Type: application/yaml' "$URL/api/v1/apply" --data-binary \
    "{apiVersion: allot.dev/v1, kind: Notebook, metadata: {name: $1, namespace: t}, spec: {queueName: q, gpus: 1, idleAfter: 0s}}" > /dev/null
}
state() { api "$URL/api/v1/workloads/t/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["state"])'; }
exec_cell() { $CLIENT "$URL/notebooks/t/$1/" "Authorization: Bearer $TOKEN" wait-exec 'print(1)' 120 > /dev/null; }

# 1. create -> output
: > "$DIR/create"
for i in $(seq 1 "$REPS"); do
  t0=$(now_ms)
  notebook "c$i"
  exec_cell "c$i"
  echo $(($(now_ms) - t0)) >> "$DIR/create"
  api -X DELETE "$URL/api/v1/workloads/t/c$i" > /dev/null
done
echo "create to a cell's output: median $(median < "$DIR/create") ms of $REPS ($(tr '\n' ' ' < "$DIR/create")ms)"

# 2. resume of a parked notebook
notebook r
exec_cell r
: > "$DIR/resume"
for _ in $(seq 1 "$REPS"); do
  api -X POST "$URL/api/v1/workloads/t/r/park" > /dev/null
  until [ "$(state r)" = Parked ]; do sleep 0.05; done
  sleep 1  # Its pod gone, its GPU back.
  t0=$(now_ms)
  api "$URL/notebooks/t/r/tree" > /dev/null
  exec_cell r
  echo $(($(now_ms) - t0)) >> "$DIR/resume"
done
echo "resume (first visit to a cell's output): median $(median < "$DIR/resume") ms of $REPS ($(tr '\n' ' ' < "$DIR/resume")ms)"

# 3. kernel round trip, proxied and direct
log=$(ls -t "$DIR"/pods/t_r_*notebook_0.log | head -1)
pod=$(basename "$log" .log | tr _ /)
port=$(grep -o 'http://127.0.0.1:[0-9]*/notebooks/t/r/' "$log" | tail -1 | sed 's|.*:\([0-9]*\)/.*|\1|')
jtoken=$(python3 -c 'import hmac,hashlib,sys; print(hmac.new(bytes.fromhex(open(sys.argv[1]).read().strip()), ("notebook-jupyter-token|" + sys.argv[2]).encode(), hashlib.sha256).hexdigest())' \
  "$DIR/allot.db.secret-key" "$pod")
: > "$DIR/proxied"; : > "$DIR/direct"
for _ in $(seq 1 "$ROUNDS"); do
  $CLIENT "$URL/notebooks/t/r/" "Authorization: Bearer $TOKEN" rtt "$RTT" | tee -a "$DIR/proxied.raw" |
    awk '{print $2, $5}' >> "$DIR/proxied"
  $CLIENT "http://127.0.0.1:$port/notebooks/t/r/" "Authorization: token $jtoken" rtt "$RTT" |
    tee -a "$DIR/direct.raw" | awk '{print $2, $5}' >> "$DIR/direct"
done
echo "kernel round trip through the proxy: p50 $(cut -d' ' -f1 "$DIR/proxied" | median) ms, p99 $(cut -d' ' -f2 "$DIR/proxied" | median) ms (median of $ROUNDS x $RTT)"
echo "kernel round trip to Jupyter directly: p50 $(cut -d' ' -f1 "$DIR/direct" | median) ms, p99 $(cut -d' ' -f2 "$DIR/direct" | median) ms"

# 4. WebSockets held, and active kernels
rss() { awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
cpu() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
before=$(rss)
$CLIENT "$URL/notebooks/t/r/" "Authorization: Bearer $TOKEN" hold "$HOLD" 10 > "$DIR/hold" &
hold_pid=$!
until grep -q held "$DIR/hold" 2>/dev/null; do sleep 0.2; done
sleep 2
held=$(rss)
wait "$hold_pid"
echo "$HOLD WebSockets held through the proxy: server RSS $before KiB -> $held KiB; $(tail -1 "$DIR/hold") of $HOLD answered a cell after 10 s"
c0=$(cpu)
$CLIENT "$URL/notebooks/t/r/" "Authorization: Bearer $TOKEN" active "$ACTIVE" "$SECONDS_ACTIVE" > "$DIR/active"
c1=$(cpu)
tick=$(getconf CLK_TCK)
echo "$ACTIVE kernels each running a cell every second for $SECONDS_ACTIVE s ($(tail -1 "$DIR/active")): server CPU $(python3 -c "print(round(($c1 - $c0) / $tick, 2))") s, $(python3 -c "print(round(($c1 - $c0) / $tick * 100 / $ACTIVE / $SECONDS_ACTIVE * 100, 2))") % of a core per 100 kernels"
