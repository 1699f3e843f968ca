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
. "$(dirname "$0")/agents_lib.sh"

start_server kueue-baseline
start_agents kb "$NODES" --simulate-gpus 1xH100-80GB --cpus "$NODE_CPUS" --memory 1Ti
sleep 2
echo "kueue baseline: $NODES simulated nodes x $NODE_CPUS cpus, scale $SCALE"
python3 "$(dirname "$0")/kueue_baseline.py" --server "$URL" --token "$TOKEN" --scale "$SCALE"
