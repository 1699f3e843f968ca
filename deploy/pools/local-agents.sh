#!/bin/bash
# An exec provider for an autoscaled NodePool (docs/autoscaling.md) that
# runs each node as an `allot agent` process with simulated GPUs on this
# machine: for demos and tests. `allot serve` calls it with the verb last
# and the request (JSON) on stdin:
#
#   provider:
#     type: exec
#     command: [/path/to/local-agents.sh, --server, "http://127.0.0.1:8470",
#               --token-file, /etc/allot/pool-node.token]
#
# Options: --server URL (required), --token-file FILE (a node token: `allot
# token create --role node`; required), --dir DIR (pid files and agents'
# logs; default /tmp/allot-pool), --bin PATH (default: allot on PATH),
# --boot-delay SECONDS (wait before the agent starts, as a machine would;
# default 0). Each node gets the pool's GPU count and product from the
# request; the server puts the pool's labels and taints on its Node.
set -euo pipefail
server="" token_file="" dir=/tmp/allot-pool bin=allot delay=0
while [ $# -gt 1 ]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --token-file) token_file=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --boot-delay) delay=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
verb=${1:-}
if [ -z "$server" ] || [ -z "$token_file" ]; then
  echo "give --server URL and --token-file FILE" >&2
  exit 2
fi
req=$(cat)
mkdir -p "$dir"
gpus=$(echo "$req" | grep -o '"gpus":[0-9]*' | head -1 | cut -d: -f2)
product=$(echo "$req" | grep -o '"product":"[^"]*"' | head -1 | cut -d'"' -f4)
for n in $(echo "$req" | grep -o '"name":"[^"]*"' | cut -d'"' -f4); do
  case "$verb" in
    resume)
      mkdir -p "$dir/$n"
      (sleep "$delay"; exec "$bin" agent --server "$server" --token "$(cat "$token_file")" \
         --name "$n" --simulate-gpus "${gpus}x${product:-H100-80GB}" --poll-seconds 1 \
         --log-dir "$dir/$n") > "$dir/$n/agent.out" 2>&1 < /dev/null &
      echo $! > "$dir/$n.pid"
      echo "resume $n (pid $!)"
      ;;
    suspend)
      if [ -f "$dir/$n.pid" ]; then
        kill "$(cat "$dir/$n.pid")" 2>/dev/null || true
        rm -f "$dir/$n.pid"
      fi
      echo "suspend $n"
      ;;
    *)
      echo "unknown verb '$verb' (expected resume or suspend)" >&2
      exit 2
      ;;
  esac
  echo "$verb $n" >> "$dir/calls.log"
done
