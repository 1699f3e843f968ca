#!/usr/bin/env bash
# End-to-end benchmark of `allot serve` over HTTP with allot_loadgen (see
# bench/README.md). Builds nothing: it runs $BUILD/allot and
# $BUILD/allot_loadgen (BUILD defaults to build).
#
#   bench/server_bench.sh
#   BUILD=build-bench RUNS=5 WORKLOADS=20000 bench/server_bench.sh
#
# 1. Submission: RUNS times, a fresh server (fresh SQLite store in a
#    temporary directory, on a free loopback port) gets the bench cluster and
#    then WORKLOADS workloads from CLIENTS concurrent keep-alive clients.
#    The median run (by rate) is reported.
# 2. Lists: on the last run's server (WORKLOADS workloads),
#    GET /api/v1/workloads?limit=10000 (median of 5) and the whole list.
# 3. Memory: a fresh server is filled with FILL workloads (100,000) by the
#    same clients; its VmRSS and VmHWM are read from /proc/PID/status before
#    and after, and the lists are timed again at that size. FILL=0 skips it.
#
# Nothing is pinned to a CPU; the load average is printed before and after,
# so that a noisy machine shows. Results: a summary on stdout, every JSON
# line loadgen printed in $OUTDIR (default: a temporary directory, kept).
set -euo pipefail

BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
WORKLOADS=${WORKLOADS:-20000}
CLIENTS=${CLIENTS:-64}
FILL=${FILL:-100000}
TENANTS=${TENANTS:-8}
NODES=${NODES:-16}
ALLOT=$BUILD/allot
LOADGEN=$BUILD/allot_loadgen
for b in "$ALLOT" "$LOADGEN"; do
  [ -x "$b" ] || { echo "server_bench.sh: no $b; build it first (cmake --build $BUILD --target allot allot_loadgen)" >&2; exit 2; }
done
OUTDIR=${OUTDIR:-$(mktemp -d /tmp/allot-server-bench.XXXXXX)}
mkdir -p "$OUTDIR"

SERVER_PID=
SERVER_DIR=
SERVER_URL=
TOKEN_FILE=

stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    for _ in $(seq 1 100); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "server $SERVER_PID ignored SIGTERM for 10 s; SIGKILL" >&2
      kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=
  if [ -n "$SERVER_DIR" ]; then
    cp "$SERVER_DIR/serve.log" "$OUTDIR/serve-$(basename "$SERVER_DIR").log" 2>/dev/null || true
    rm -rf "$SERVER_DIR"
  fi
  SERVER_DIR=
}
trap stop_server EXIT

# Starts a server on a free loopback port with a fresh store.
start_server() {
  SERVER_DIR=$(mktemp -d /tmp/allot-bench-srv.XXXXXX)
  TOKEN_FILE=$SERVER_DIR/admin.token
  echo "allot_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$TOKEN_FILE"
  "$ALLOT" serve --listen 127.0.0.1:0 --store "sqlite:$SERVER_DIR/allot.db" \
    --admin-token-file "$TOKEN_FILE" > "$SERVER_DIR/serve.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 200); do
    port=$(sed -n 's|.*serving on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$SERVER_DIR/serve.log")
    if [ -n "$port" ]; then
      SERVER_URL=http://127.0.0.1:$port
      return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_DIR/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "server_bench.sh: the server did not start in 20 s" >&2
  cat "$SERVER_DIR/serve.log" >&2
  exit 1
}

# A server that died under load is a finding: say so, with its log.
check_server() {
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    wait "$SERVER_PID" && rc=0 || rc=$?
    echo "SERVER DIED (exit status $rc) during: $1; its log:" >&2
    tail -50 "$SERVER_DIR/serve.log" >&2
    SERVER_PID=
    return 1
  fi
}

TICKS=$(getconf CLK_TCK)
server_cpu() {  # CPU seconds (user + system) the server has used so far
  sed 's/.*) //' "/proc/$SERVER_PID/stat" | awk -v t="$TICKS" '{printf "%.2f", ($12 + $13) / t}'
}

mem() {  # VmRSS and VmHWM of the server in MiB
  awk '/^VmRSS|^VmHWM/ {printf "%s %.1f MiB  ", $1, $2 / 1024}' "/proc/$SERVER_PID/status"
}

loadgen() {  # loadgen NAME ARGS...: runs it, keeps its JSON line
  local name=$1
  shift
  "$LOADGEN" --server "$SERVER_URL" --token-file "$TOKEN_FILE" --tenants "$TENANTS" \
    --nodes "$NODES" "$@" > "$OUTDIR/$name.json" 2> "$OUTDIR/$name.err" || {
    echo "loadgen $name reported errors (exit status $?):" >&2
    grep -E '^error|failed' "$OUTDIR/$name.err" >&2 || true
  }
  cat "$OUTDIR/$name.json"
}

field() {  # field FILE KEY -> the number
  sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"
}

echo "== machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== results in $OUTDIR"

# ---- 1. submission rate -------------------------------------------------------
for r in $(seq 1 "$RUNS"); do
  start_server
  echo "-- submit run $r: $WORKLOADS workloads, $CLIENTS clients, server $SERVER_PID at $SERVER_URL (load $(cut -d' ' -f1 /proc/loadavg))"
  cpu0=$(server_cpu)
  loadgen "submit-$r" --clients "$CLIENTS" --workloads "$WORKLOADS" --no-list
  check_server "submit run $r" || continue
  cpu1=$(server_cpu)
  awk -v a="$cpu0" -v b="$cpu1" -v n="$WORKLOADS" \
    'BEGIN {printf "%.0f\n", (b - a) * 1e6 / n}' > "$OUTDIR/submit-$r.server-cpu-us"
  echo "   server memory: $(mem); server CPU $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {print b - a}') s, $(cat "$OUTDIR/submit-$r.server-cpu-us") us per submission"
  if [ "$r" -lt "$RUNS" ]; then stop_server; fi
done

rates=()
for r in $(seq 1 "$RUNS"); do
  f=$OUTDIR/submit-$r.json
  [ -s "$f" ] && rates+=("$(field "$f" submitPerS) $r")
done
median_run=$(printf '%s\n' "${rates[@]}" | sort -g | awk '{a[NR] = $2} END {print a[int((NR + 1) / 2)]}')

# ---- 2. list timing on the last run's server ---------------------------------
if [ -n "$SERVER_PID" ]; then
  echo "-- lists at $WORKLOADS workloads"
  loadgen "list-$WORKLOADS" --no-setup --list-only --list-reps 5 --full-reps 3
fi
stop_server

# ---- 3. memory at FILL workloads (FILL=0 skips) -----------------------------------
if [ "$FILL" -gt 0 ]; then
  start_server
  echo "-- fill: $FILL workloads, server $SERVER_PID (load $(cut -d' ' -f1 /proc/loadavg))"
  echo "   server memory, empty: $(mem)"
  cpu0=$(server_cpu)
  loadgen fill --clients "$CLIENTS" --workloads "$FILL" --no-list
  if check_server "fill"; then
    sleep 2  # Let the last scheduling turns settle.
    cpu1=$(server_cpu)
    echo "   server CPU for the fill: $(awk -v a="$cpu0" -v b="$cpu1" -v n="$FILL" 'BEGIN {printf "%.1f s, %.0f us per submission", b - a, (b - a) * 1e6 / n}')"
    mem_fill=$(mem)
    echo "   server memory at $FILL workloads: $mem_fill"
    echo "$mem_fill" > "$OUTDIR/fill-mem.txt"
    echo "-- lists at $FILL workloads"
    loadgen "list-$FILL" --no-setup --list-only --list-reps 5 --full-reps 3
    check_server "lists at $FILL" || true
    [ -n "$SERVER_PID" ] && echo "   server memory after the lists: $(mem)"
  fi
  stop_server
fi

# ---- summary ---------------------------------------------------------------------
echo
echo "== summary ($(nproc) CPUs; load after: $(cut -d' ' -f1-3 /proc/loadavg))"
for r in $(seq 1 "$RUNS"); do
  f=$OUTDIR/submit-$r.json
  [ -s "$f" ] || { echo "submit run $r: no result"; continue; }
  printf 'submit run %d: %8.0f/s  p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %7.2f ms  errors %s  CPU us/submission: server %s, loadgen %.0f%s\n' \
    "$r" "$(field "$f" submitPerS)" "$(field "$f" p50Ms)" "$(field "$f" p90Ms)" \
    "$(field "$f" p99Ms)" "$(field "$f" maxMs)" "$(field "$f" errors)" \
    "$(cat "$OUTDIR/submit-$r.server-cpu-us" 2>/dev/null)" "$(field "$f" clientCpuUsPerSubmit)" \
    "$([ "$r" = "$median_run" ] && echo '   <- median')"
done
for n in "$WORKLOADS" "$FILL"; do
  f=$OUTDIR/list-$n.json
  [ -s "$f" ] || continue
  printf 'at %d workloads: list ?limit=%s median %.1f ms (%s items, %s bytes); whole list median %.1f ms (%s items)\n' \
    "$n" "$(field "$f" listLimit)" "$(field "$f" listMedianMs)" "$(field "$f" listItems)" \
    "$(field "$f" listBytes)" "$(field "$f" fullListMedianMs)" "$(field "$f" fullListItems)"
done
if [ -s "$OUTDIR/fill.json" ]; then
  printf 'fill %d: %.0f/s, p99 %.2f ms, errors %s; memory %s\n' "$FILL" \
    "$(field "$OUTDIR/fill.json" submitPerS)" "$(field "$OUTDIR/fill.json" p99Ms)" \
    "$(field "$OUTDIR/fill.json" errors)" "$(cat "$OUTDIR/fill-mem.txt" 2>/dev/null)"
fi
