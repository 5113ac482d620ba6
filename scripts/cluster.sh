#!/usr/bin/env bash
# `make cluster`: a private Redis and three lobbyd nodes sharing the ports of this box
# (docs/OPERATING.md "More than one process"), for trying a group out. Every node answers on
# UDP/TCP 4242 (SO_REUSEPORT); node N has instance ports 4N00-4N99 (node 1: 4300-4399) and
# its status page on 127.0.0.1:910N. Every node serves the Warzone master server on 9990 too
# (each lists every node's games); the TCP lobby and the general lobby run on node 1 only
# (parties and the general lobby stay on one node). Ctrl-C stops all.
# The Redis server is private: a unix socket in a temporary folder, no persistence.
# CLUSTER_ARGS="..." passes more flags to every node.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis-server not found: apt-get install redis-server" >&2
  exit 1
fi
cargo build --release --bin lobbyd

dir=$(mktemp -d /tmp/lobbyd-cluster.XXXXXX)
pids=()
trap 'stop_started "$dir"' EXIT
trap 'exit 0' INT TERM

start_private_redis "$dir"

for n in 1 2 3; do
  lo=$((4200 + 100 * n))
  only_on_one=()
  if [ "$n" -gt 1 ]; then
    only_on_one=(--tcp-port 0 --lobby-port 0 --lobby-ws-port 0)
  fi
  # shellcheck disable=SC2086 # CLUSTER_ARGS is a list of flags
  target/release/lobbyd --node-id "$n" --directory "redis+unix://$dir/r.sock" --reuse-port \
    --instance-ports "$lo-$((lo + 99))" --metrics "127.0.0.1:$((9100 + n))" \
    "${only_on_one[@]}" ${CLUSTER_ARGS:-} &
  pids+=($!)
done
echo "three nodes on UDP 4242 (status pages: http://127.0.0.1:9101/ 9102/ 9103/); Ctrl-C stops"
wait
