#!/usr/bin/env bash
# The remote JOIN round trip of a group (docs/OPERATING.md "More than one process"): a client
# asks node 2 to JOIN a room of node 1; node 2 asks node 1 through its Redis stream inbox,
# node 1 reserves the seat and answers into node 2's inbox, node 2 answers the client
# (target: p99 <= 2 ms on loopback). For scale, the same JOIN asked of node 1 itself.
#
# A private redis-server on a unix socket in a temporary folder (no persistence), two release
# lobbyd nodes on 127.0.0.1 (UDP lobby LOBBYD_PORT and LOBBYD_PORT+1, instance ranges
# 24300-24349 and 24350-24399), one room on node 1, then DIR_JOINS sequential JOIN_ROOMs from
# one client address (a repeated JOIN refreshes that address's seat, so every one is a
# JOIN_SUCCESS) through node 2, then as many asked of node 1. Each reply is awaited at most
# 1 s (`--udp-rate` is raised out of the way); the run stops by itself and stops what it
# started.
#
# Environment: DIR_JOINS (default 5000), LOBBYD_PORT etc. (scripts/lib.sh).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

JOINS="${DIR_JOINS:-5000}"
command -v redis-server >/dev/null 2>&1 || { log "redis-server not found: apt-get install redis-server"; exit 1; }
build_release

dir=$(mktemp -d /tmp/lobbyd-bench-directory.XXXXXX)
pids=()
trap 'stop_started "$dir"' EXIT

start_private_redis "$dir"

for n in 1 2; do
  lo=$((24250 + 50 * n))
  "$LOBBYD" --bind 127.0.0.1 --port $((PORT + n - 1)) --instance-ports "$lo-$((lo + 49))" \
    --tcp-port 0 --wz-port 0 --lobby-port 0 --lobby-ws-port 0 --log warn --udp-rate 100000 \
    --node-id "$n" --directory "redis+unix://$dir/r.sock" >"$dir/node$n.log" 2>&1 &
  pids+=($!)
done

log "remote JOIN round trip: $JOINS JOINs through node 2, then $JOINS asked of node 1 (loopback)"
timeout 300 python3 - "$PORT" "$JOINS" <<'PY'
import socket, struct, sys, time, zlib

port, joins = int(sys.argv[1]), int(sys.argv[2])
one, two = ("127.0.0.1", port), ("127.0.0.1", port + 1)

def frame(msg, seq, payload=b""):
    head = struct.pack(">BBHHH", 0x01, msg, seq, len(payload), len(payload))
    body = head + payload
    return body + struct.pack(">I", zlib.crc32(body))

def ask(sock, to, msg, seq, payload=b""):
    sock.sendto(frame(msg, seq, payload), to)
    while True:
        data, src = sock.recvfrom(4096)
        if src == to and struct.unpack(">H", data[2:4])[0] == seq:
            return data

creator = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
creator.bind(("127.0.0.2", 0))
creator.settimeout(1.0)
deadline = time.time() + 10
while True:
    try:
        reply = ask(creator, one, 0x42, 1)
        break
    except OSError:
        if time.time() > deadline:
            sys.exit("node 1 did not answer CREATE_ROOM")
room = struct.unpack(">I", reply[8:12])[0]
# Wait until node 2 lists the room (its directory is up and has read node 1's table).
while True:
    listed = ask(creator, two, 0x40, 2)
    if struct.pack(">I", room) in listed[8:-4]:
        break
    if time.time() > deadline:
        sys.exit("node 2 never listed node 1's room")
    time.sleep(0.05)

client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
client.bind(("127.0.0.3", 0))
client.settimeout(1.0)

def run(to, label):
    samples, failed = [], 0
    for i in range(joins):
        began = time.perf_counter()
        try:
            reply = ask(client, to, 0x44, i & 0xFFFF, struct.pack(">I", room))
        except OSError:
            failed += 1
            continue
        took = time.perf_counter() - began
        if reply[1] == 0x45:
            samples.append(took)
        else:
            failed += 1
    samples.sort()
    pct = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1e6
    print(f"{label}: {len(samples)} JOIN_SUCCESS, {failed} failed; round trip us: "
          f"p50 {pct(0.5):.0f}, p90 {pct(0.9):.0f}, p99 {pct(0.99):.0f}, "
          f"max {samples[-1] * 1e6:.0f}" if samples else f"{label}: no JOIN_SUCCESS")

run(two, "through node 2 (asked of node 1 over Redis)")
run(one, "asked of node 1 itself (local)")
PY
