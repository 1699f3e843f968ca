#!/usr/bin/env bash
# The systemd units in deploy/systemd: `systemd-analyze verify` finds
# nothing to say about them (syntax, keys, the binary), and their command
# lines work: allot-serve's ExecStart serves on loopback, and
# allot-agent's, with a token that serve printed, registers its node.
#
# usage: systemd_units_test.sh /path/to/allot UNITS_DIR
# Exits 77 (skipped) where systemd-analyze is not installed.
set -euo pipefail
allot=$(realpath "$1")
units=$(realpath "$2")
command -v systemd-analyze > /dev/null || { echo "skipped: no systemd-analyze"; exit 77; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. verify, with the unit's binary pointed at the one under test.
for unit in "$units"/*.service; do
  name=$(basename "$unit")
  sed "s#/usr/local/bin/allot#$allot#g" "$unit" > "$work/$name"
  out=$(systemd-analyze verify "$work/$name" 2>&1) || fail "$name: $out"
  [ -z "$out" ] || fail "$name: systemd-analyze verify says: $out"
  echo "ok verify $name"
done

# The unit's ExecStart with $VAR expanded from its Environment= default
# (or from the caller's environment) and the paths moved under $work.
exec_start() {
  local unit=$1 line var default
  line=$(sed -n 's/^ExecStart=//p' "$unit")
  var=$(grep -o '\$[A-Z_]*' <<< "$line" | head -n 1 | tr -d '$')
  default=$(sed -n "s/^Environment=$var=//p" "$unit")
  line=${line//\$$var/${!var-$default}}
  echo "${line//\/var\/lib\/allot/$work}"
}

# 2. allot-serve's command line, on a free loopback port.
port=$((20000 + $$ % 20000))
ALLOT_SERVE_ARGS="--listen=127.0.0.1:$port"
bash -c "exec $(exec_start "$work/allot-serve.service")" > "$work/serve.out" 2>&1 &
pids+=($!)
export ALLOT_SERVER="http://127.0.0.1:$port" ALLOT_TOKEN=
for _ in $(seq 100); do
  ALLOT_TOKEN=$(grep -so 'allot_[0-9a-f]*' "$work/serve.out" | head -n 1 || true)
  [ -n "$ALLOT_TOKEN" ] && "$allot" whoami > /dev/null 2>&1 && break
  sleep 0.1
done
"$allot" whoami > /dev/null || fail "serve: $(cat "$work/serve.out")"
[ -f "$work/allot.db" ] || fail "serve kept no store at --store"
echo "ok allot-serve.service: serves, store $work/allot.db"

# 3. allot-agent's, configured as its EnvironmentFile would.
ALLOT_AGENT_ARGS="--name=unit-test --simulate-gpus=1xH100-80GB --cgroups=off \
--log-dir=$work/pods"
bash -c "exec $(exec_start "$work/allot-agent.service")" > "$work/agent.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
  "$allot" get nodes 2> /dev/null | grep -q unit-test && break
  sleep 0.1
done
"$allot" get nodes | grep -q unit-test || fail "agent: $(cat "$work/agent.out")"
echo "ok allot-agent.service: node unit-test registered"
