#!/usr/bin/env bash
# allot simulate speed: the full Philly trace (82,247 jobs, 2,816 GPUs) and a
# synthetic 1,000,000-job trace on 10,000 GPUs, RUNS times each; prints the
# wall time, events/s and peak RSS of every run (medians go to
# bench/RESULTS.md by hand). Usage: BUILD=build RUNS=5 bench/sim_bench.sh
set -euo pipefail
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
TRACES=${TRACES:-/work/shared/traces}
ALLOT=$BUILD/allot
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$ALLOT simulate --synthetic-config 10000:20 > "$tmp/syn.yaml"
run() {  # name, args...
  local name=$1; shift
  for i in $(seq "$RUNS"); do
    /usr/bin/time -f "rss_kib=%M wall_s=%e" $ALLOT simulate "$@" -o /dev/null 2> "$tmp/err" || { cat "$tmp/err"; exit 1; }
    echo "$name run $i: $(grep -E 'events/s' "$tmp/err" | sed 's/^allot: //') $(tail -1 "$tmp/err")"
  done
}
run philly-as-given -f examples/sim/philly.yaml --trace "philly:$TRACES/philly_vc/philly_jobs.csv"
run synthetic-1m -f "$tmp/syn.yaml" --trace synthetic:1000000:1:10000:20
