# Shared by nodes_bench.sh and kueue_baseline.sh (sourced, not run): a fresh
# `allot serve` on a random loopback port with its own SQLite store and
# admin token, and one `allot agent --simulate-nodes` process against it.
# Both are stopped (and DIR removed unless KEEP=1) when the script exits.

# start_server TAG [serve flags...]: sets DIR, TOKEN, URL, SERVER_PID.
start_server() {
  local tag=$1
  shift
  DIR=$(mktemp -d "/tmp/allot-$tag.XXXXXX")
  TOKEN="allot_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  echo "$TOKEN" > "$DIR/admin.token"
  local port=$((20000 + RANDOM % 20000))
  URL=http://127.0.0.1:$port
  SERVER_PID= AGENT_PID=
  trap stop_all EXIT
  "$ALLOT" serve --listen "127.0.0.1:$port" --store "sqlite:$DIR/allot.db" \
    --admin-token-file "$DIR/admin.token" "$@" > "$DIR/serve.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do curl -sf "$URL/healthz" > /dev/null && break; sleep 0.1; done
}

# start_agents NAME NODES [agent flags...]: NODES simulated nodes NAME-00000..
# (simulated execution) in one process; sets AGENT_PID.
start_agents() {
  local name=$1 nodes=$2
  shift 2
  "$ALLOT" agent --server "$URL" --token "$TOKEN" --name "$name" --simulate-nodes "$nodes" \
    --simulate-exec --log-dir "$DIR/pods" "$@" > "$DIR/agent.log" 2>&1 &
  AGENT_PID=$!
}

stop_all() {
  [ -n "$AGENT_PID" ] && kill -TERM "$AGENT_PID" 2>/dev/null || true
  [ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] && echo "kept $DIR" || rm -rf "$DIR"
}
