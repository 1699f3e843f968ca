#!/usr/bin/env bash
# Many agents against one `allot serve`: `allot agent --simulate-nodes N`
# (simulated GPUs, simulated execution) in one process. Builds nothing: it
# runs $BUILD/allot and $BUILD/allot_loadgen.
#
#   NODES=2000 bench/nodes_bench.sh
#
# 1. Join: starts the server (fresh SQLite store, loopback, node timeout
#    NODE_TIMEOUT s, so agents' polls are held NODE_TIMEOUT/3 s) and one
#    agent process with NODES simulated nodes of 8 GPUs; times until every
#    node is registered and Ready.
# 2. Idle heartbeat: for IDLE s, the CPU time (utime + stime from
#    /proc/PID/stat) the server and the agent process use, and their RSS.
# 3. Churn: WORKLOADS one-GPU workloads (no runtime: each pod "exits" 0 at
#    once) from 32 clients; times until all are Succeeded, i.e. submitted,
#    admitted, started on a node, reported and finished.
set -euo pipefail

BUILD=${BUILD:-build}
NODES=${NODES:-2000}
NODE_TIMEOUT=${NODE_TIMEOUT:-15}
IDLE=${IDLE:-30}
WORKLOADS=${WORKLOADS:-20000}
ALLOT=$BUILD/allot
LOADGEN=$BUILD/allot_loadgen
for b in "$ALLOT" "$LOADGEN"; do
  [ -x "$b" ] || { echo "nodes_bench.sh: no $b; build it first" >&2; exit 2; }
done
. "$(dirname "$0")/agents_lib.sh"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
now() { date +%s.%N; }
api() { curl -sf -H "Authorization: Bearer $TOKEN" "$URL$1"; }

start_server nodes-bench --node-timeout "$NODE_TIMEOUT"
# Quota for every GPU the nodes bring (8 tenants in one cohort); no Nodes.
"$LOADGEN" --server "$URL" --token "$TOKEN" --nodes "$NODES" --agent-nodes \
  --workloads 0 --no-list > /dev/null 2> "$DIR/setup.log"

echo "nodes: $NODES simulated nodes x 8 GPUs, node timeout ${NODE_TIMEOUT} s"
t0=$(now)
start_agents sim "$NODES" --simulate-gpus 8xH100-80GB --poll-seconds 5 \
  --labels allot.dev/gpu-product=BENCH-GPU
set +e  # From here on a failed probe is retried, not fatal.
while :; do
  n=$(api "/api/v1/nodes" | grep -o '"name":"sim-[0-9]*"' | wc -l)
  [ "$n" -ge "$NODES" ] && break
  sleep 0.5
done
t1=$(now)
echo "join: all $NODES nodes registered in $(echo "$t1 - $t0" | bc) s"

hz=$(getconf CLK_TCK)
s0=$(cpu_ticks $SERVER_PID) a0=$(cpu_ticks $AGENT_PID)
sleep "$IDLE"
s1=$(cpu_ticks $SERVER_PID) a1=$(cpu_ticks $AGENT_PID)
echo "idle heartbeat over ${IDLE} s: server CPU $(echo "scale=1; 100 * ($s1 - $s0) / $hz / $IDLE" | bc) %," \
  "agent process CPU $(echo "scale=1; 100 * ($a1 - $a0) / $hz / $IDLE" | bc) %;" \
  "RSS server $(rss_mib $SERVER_PID) MiB, agent process $(rss_mib $AGENT_PID) MiB"
ready=$(api "/api/v1/nodes" | grep -o '"unschedulable":true' | wc -l || true)
echo "nodes NotReady/cordoned after idle: $ready"

t2=$(now)
"$LOADGEN" --server "$URL" --token "$TOKEN" --no-setup --no-list --clients 32 \
  --workloads "$WORKLOADS" --prefix churn > "$DIR/churn.json" 2> "$DIR/churn.log"
t3=$(now)
deadline=$(( $(date +%s) + 600 ))
while :; do
  done_n=$(api "/api/v1/workloads?state=Succeeded" | grep -o '"name":"churn-[0-9]*"' | wc -l)
  [ "$done_n" -ge "$WORKLOADS" ] && break
  [ "$(date +%s)" -ge "$deadline" ] && { echo "churn: only $done_n finished within 600 s"; break; }
  sleep 0.2
done
t4=$(now)
done_n=$(api "/api/v1/workloads?state=Succeeded" | grep -o '"name":"churn-[0-9]*"' | wc -l)
echo "churn: $WORKLOADS workloads submitted in $(echo "$t3 - $t2" | bc) s;" \
  "all finished (Succeeded: $done_n) $(echo "$t4 - $t2" | bc) s after the first submission" \
  "($(echo "scale=0; $done_n / ($t4 - $t2)" | bc) workloads/s end to end)"
echo "RSS after churn: server $(rss_mib $SERVER_PID) MiB, agent process $(rss_mib $AGENT_PID) MiB"
