#!/usr/bin/env bash
# Cancels every job of the bench Slurm, stops its slurmd, slurmctld and
# munged (by the pids in their pid files) and removes DIR.
#
#   bench/slurm/teardown.sh [DIR]   (default DIR: /tmp/allot-slurm)
#   KEEP=1 bench/slurm/teardown.sh  keeps DIR (logs, StateSaveLocation)
set -uo pipefail

DIR=${1:-/tmp/allot-slurm}
export SLURM_CONF="$DIR/slurm.conf"

if [ -e "$DIR/slurmctld.pid" ]; then
  scancel --quiet --partition=bench 2>/dev/null || true
fi

stop() {  # stop NAME PIDFILE
  local f=$2 pid
  [ -e "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null) || return 0
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
    sleep 0.1
  done
  echo "teardown.sh: $1 ($pid) ignored SIGTERM for 10 s; SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

stop slurmd "$DIR/slurmd.pid"
stop slurmctld "$DIR/slurmctld.pid"
stop munged "$DIR/munge/munged.pid"

if [ "${KEEP:-0}" = 1 ]; then
  echo "stopped; kept $DIR"
else
  rm -rf "$DIR"
  echo "stopped; removed $DIR"
fi
