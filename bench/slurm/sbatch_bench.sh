#!/usr/bin/env bash
# Slurm's submission rate, measured like allot_loadgen measures POST
# /api/v1/workloads: C concurrent submitters send N jobs in all; each call is
# timed, the rate is accepted jobs over the wall time of the whole batch.
# Jobs are submitted held (priority 0), so they queue and never run, like
# the benchmark's queued workloads.
#
# 1. sbatch: C concurrent submitters (xargs -P), one sbatch process per job,
#    each timed with bash's $EPOCHREALTIME around the call. This is what a
#    user or a workflow tool running sbatch gets.
# 2. libslurm (when Debian's libslurm-dev is installed): submit_api.c, C
#    threads calling slurm_submit_batch_job (the RPC sbatch sends) for
#    API_JOBS jobs: slurmctld and munge without sbatch's process start-up,
#    the counterpart of allot_loadgen's persistent clients.
# After each phase every job is cancelled (scancel) and the queue drained.
#
#   bench/slurm/setup.sh                       # a one-host Slurm
#   bench/slurm/sbatch_bench.sh [N] [C]        # N jobs (2000), C submitters (64)
#   API_JOBS=20000 bench/slurm/sbatch_bench.sh # libslurm phase size (default N; 0 skips)
#   bench/slurm/teardown.sh
#
# Environment: SLURM_CONF (default /tmp/allot-slurm/slurm.conf). Prints a
# summary on stderr and one JSON line per phase on stdout.
set -euo pipefail

N=${1:-2000}
C=${2:-64}
API_JOBS=${API_JOBS:-$N}
HERE=$(cd "$(dirname "$0")" && pwd)
export SLURM_CONF=${SLURM_CONF:-/tmp/allot-slurm/slurm.conf}
[ -r "$SLURM_CONF" ] || { echo "sbatch_bench.sh: no $SLURM_CONF; run setup.sh" >&2; exit 2; }
scontrol ping | grep -q 'is UP' || { echo "sbatch_bench.sh: slurmctld is not up" >&2; exit 2; }

WORK=$(mktemp -d /tmp/sbatch-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# Each xargs worker runs one bash for a batch of job numbers (so bash's own
# start-up is paid once per batch, not per job) and times every sbatch.
BATCH=$(( N / (C * 4) ))
[ "$BATCH" -ge 1 ] || BATCH=1
submit='
for i; do
  t0=$EPOCHREALTIME
  sbatch --hold --parsable --job-name="b$i" --output=/dev/null --chdir=/tmp \
    --wrap "sleep 3600" >/dev/null 2>>"$ERR"
  rc=$?
  t1=$EPOCHREALTIME
  echo "$rc ${t0/./} ${t1/./}"
done'
export ERR="$WORK/stderr"
: > "$ERR"

jobs_before=$(squeue -h -p bench | wc -l)
echo "sbatch: $N held jobs, $C concurrent submitters, batches of $BATCH" >&2
start=$EPOCHREALTIME
seq 1 "$N" | xargs -P "$C" -n "$BATCH" bash -c "$submit" _ > "$WORK/lat"
end=$EPOCHREALTIME
jobs_after=$(squeue -h -p bench | wc -l)

# Latencies in microseconds -> milliseconds, nearest-rank percentiles.
wall_us=$(( ${end/./} - ${start/./} ))
awk '$1 == 0 {print ($3 - $2) / 1000.0}' "$WORK/lat" | sort -g > "$WORK/ok_ms"
ok=$(wc -l < "$WORK/ok_ms")
failed=$(awk '$1 != 0' "$WORK/lat" | wc -l)
pct() { awk -v p="$1" -v n="$ok" 'BEGIN {k = int(p / 100 * n + 0.999999); if (k < 1) k = 1}
                                   NR == k {printf "%.2f", $1; exit}' "$WORK/ok_ms"; }
rate=$(awk -v ok="$ok" -v us="$wall_us" 'BEGIN {printf "%.1f", ok / (us / 1e6)}')
wall_s=$(awk -v us="$wall_us" 'BEGIN {printf "%.3f", us / 1e6}')
p50=$(pct 50); p90=$(pct 90); p99=$(pct 99); max=$(tail -1 "$WORK/ok_ms")
retries=$(grep -c 'retrying' "$ERR" || true)

echo "accepted $ok of $N in ${wall_s} s: ${rate}/s; latency ms p50 $p50 p90 $p90 p99 $p99 max $max" >&2
echo "failed sbatch calls: $failed; 'temporarily unable ... retrying' messages: $retries" >&2
echo "jobs in squeue: $jobs_before before, $jobs_after after" >&2
if [ -s "$ERR" ]; then
  echo "first sbatch error lines:" >&2
  sort "$ERR" | uniq -c | sort -rn | head -5 >&2
fi

drain() {  # Cancel everything and wait for the queue to empty.
  scancel --quiet --partition=bench || true
  for _ in $(seq 1 120); do
    [ "$(squeue -h -p bench -t PD,R,CG | wc -l)" -eq 0 ] && break
    sleep 1
  done
}
drain

printf '{"tool":"sbatch","jobs":%d,"clients":%d,"accepted":%d,"failed":%d,"retryMessages":%d,"wallS":%s,"submitPerS":%s,"p50Ms":%s,"p90Ms":%s,"p99Ms":%s,"maxMs":%s}\n' \
  "$N" "$C" "$ok" "$failed" "$retries" "$wall_s" "$rate" "${p50:-0}" "${p90:-0}" "${p99:-0}" "${max:-0}"

# ---- libslurm: the same RPC from C threads, no process per job ------------------
if [ "$API_JOBS" -gt 0 ]; then
  if [ -r /usr/include/slurm/slurm.h ]; then
    cc -O2 -pthread -o "$WORK/submit_api" "$HERE/submit_api.c" -lslurm
    echo "libslurm: $API_JOBS held jobs, $C threads" >&2
    "$WORK/submit_api" "$API_JOBS" "$C" || true
    drain
  else
    echo "libslurm phase skipped: no /usr/include/slurm/slurm.h (apt-get install libslurm-dev)" >&2
  fi
fi
