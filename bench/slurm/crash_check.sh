#!/usr/bin/env bash
# What an acknowledged Slurm submission survives: submit N held jobs (with
# submit_api, sbatch's RPC from C threads), SIGKILL slurmctld as soon as the
# last one is acknowledged, restart it on the same StateSaveLocation and
# count the pending jobs it recovered. slurmctld answers a submission once
# the job is in its memory (the batch script is already a file under
# StateSaveLocation); the job table itself (job_state) is rewritten by a
# background thread that batches changes, so jobs acknowledged in the last
# seconds before a crash are lost and their script files purged.
#
#   bench/slurm/setup.sh && bench/slurm/crash_check.sh [N] [C]   (2000, 64)
#
# Needs libslurm-dev (for submit_api.c). Leaves Slurm running, queue empty.
set -euo pipefail

N=${1:-2000}
C=${2:-64}
export SLURM_CONF=${SLURM_CONF:-/tmp/allot-slurm/slurm.conf}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(dirname "$SLURM_CONF")
WORK=$(mktemp -d /tmp/slurm-crash.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

cc -O2 -pthread -o "$WORK/submit_api" "$HERE/submit_api.c" -lslurm
scancel --quiet --partition=bench || true
sleep 2
before=$(squeue -h -p bench -t PD | wc -l)
"$WORK/submit_api" "$N" "$C" > "$WORK/result.json"
kill -KILL "$(cat "$DIR/slurmctld.pid")"
echo "acknowledged: $(sed -n 's/.*"accepted":\([0-9]*\).*/\1/p' "$WORK/result.json") jobs; slurmctld SIGKILLed right after the last reply"
sleep 1
log_lines=$(wc -l < "$DIR/log/slurmctld.log")
slurmctld -f "$SLURM_CONF"
for _ in $(seq 1 60); do
  scontrol ping 2>/dev/null | grep -q 'is UP' && break
  sleep 1
done
sleep 2
after=$(squeue -h -p bench -t PD | wc -l)
echo "pending jobs before: $before; recovered after the restart: $after of $N acknowledged"
tail -n +"$((log_lines + 1))" "$DIR/log/slurmctld.log" |
  awk '/Recovered information about .* jobs/ {sub(/^.*\] /, ""); print "slurmctld: " $0}
       /Purged files for defunct batch/ {p++}
       END {print "slurmctld: purged the files of " p + 0 " defunct batch jobs"}'
scancel --quiet --partition=bench || true
