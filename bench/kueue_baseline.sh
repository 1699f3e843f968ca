#!/usr/bin/env bash
# Kueue's baseline scheduler scenario end to end (bench/kueue_baseline.py):
# a fresh `allot serve`, one `allot agent --simulate-nodes NODES` process
# (simulated execution; each node offers NODE_CPUS cpus, 600 in all by
# default, the scenario's nominal quota), then the driver. Builds nothing.
#
#   bench/kueue_baseline.sh              # the whole scenario (15,000 workloads)
#   SCALE=0.1 bench/kueue_baseline.sh    # a tenth of the work
set -euo pipefail

BUILD=${BUILD:-build}
NODES=${NODES:-5}
NODE_CPUS=${NODE_CPUS:-120}
SCALE=${SCALE:-1}
ALLOT=$BUILD/allot
[ -x "$ALLOT" ] || { echo "kueue_baseline.sh: no $ALLOT; build it first" >&2; exit 2; }
command -v python3 > /dev/null || { echo "kueue_baseline.sh: needs python3 (apt-get install python3)" >&2; exit 2; }
DIR=$(mktemp -d /tmp/allot-kueue-baseline.XXXXXX)
TOKEN="allot_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$TOKEN" > "$DIR/admin.token"
PORT=$((20000 + RANDOM % 20000))
URL=http://127.0.0.1:$PORT
SERVER_PID= AGENT_PID=
cleanup() {
  [ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null || true
  [ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] && echo "kept $DIR" || rm -rf "$DIR"
}
trap cleanup EXIT

"$ALLOT" serve --listen 127.0.0.1:$PORT --store "sqlite:$DIR/allot.db" \
  --admin-token-file "$DIR/admin.token" > "$DIR/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do curl -sf "$URL/healthz" > /dev/null && break; sleep 0.1; done
"$ALLOT" agent --server "$URL" --token "$TOKEN" --name kb --simulate-nodes "$NODES" \
  --simulate-gpus 1xH100-80GB --simulate-exec --cpus "$NODE_CPUS" --memory 1Ti \
  --log-dir "$DIR/pods" > "$DIR/agent.log" 2>&1 &
AGENT_PID=$!
sleep 2
echo "kueue baseline: $NODES simulated nodes x $NODE_CPUS cpus, scale $SCALE"
python3 "$(dirname "$0")/kueue_baseline.py" --server "$URL" --token "$TOKEN" --scale "$SCALE"
