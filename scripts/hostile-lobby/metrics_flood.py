#!/usr/bin/env python3
"""Connect flood on lobbyd's metrics endpoint, measured by a scraper and a general lobby member.

Phases: QUIET seconds with only the member PINGing (its quiet PING figures), then FLOOD seconds
during which flooder processes connect and close at once, as fast as they can, from
--flood-addresses loopback addresses (127.20.0.1, 127.20.0.2, ...), while a scraper fetches
/metrics every 200 ms from its own address (127.0.0.9) and the member keeps PINGing every
20 ms. Prints one JSON line: connects made, scrapes ok/failed, the member's PING p50/p99/lost
quiet and during the flood. Standard library only; loopback only; stops by itself.
"""

import argparse
import json
import multiprocessing
import os
import socket
import struct
import sys
import threading
import time

SIGN_IN, WELCOME, SYNC_DONE, PING, PONG = 0x03, 0x04, 0x06, 0x60, 0x61
STR, BYTES = 3, 4


def frame(code, *params):
    payload = b"".join(struct.pack("<BH", kind, len(body)) + body for kind, body in params)
    return struct.pack("<II", code, len(payload)) + payload


class Member:
    """A general lobby member: signs in as a guest, then PINGs and times the PONGs."""

    def __init__(self, port, name):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.sock.sendall(frame(SIGN_IN, (STR, name.encode()), (STR, b""), (BYTES, b"")))
        self.wait_for(WELCOME, 5.0)
        self.wait_for(SYNC_DONE, 5.0)

    def next_frame(self, deadline):
        while True:
            if len(self.buf) >= 8:
                code, length = struct.unpack_from("<II", self.buf)
                if len(self.buf) >= 8 + length:
                    payload = self.buf[8 : 8 + length]
                    self.buf = self.buf[8 + length :]
                    return code, payload
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            if not chunk:
                raise ConnectionError("the lobby closed the member's connection")
            self.buf += chunk

    def wait_for(self, code, seconds):
        deadline = time.monotonic() + seconds
        while True:
            got = self.next_frame(deadline)
            if got is None:
                raise TimeoutError(f"no frame {code:#x} within {seconds} s")
            if got[0] == code:
                return got[1]

    def ping_for(self, seconds, every=0.02, lost_after=1.0):
        """PINGs every `every` s for `seconds`; round trips in ms, and how many were lost."""
        rtts, lost, seq = [], 0, 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            seq += 1
            tag = struct.pack("<I", seq)
            sent = time.monotonic()
            self.sock.sendall(frame(PING, (BYTES, tag)))
            deadline = sent + lost_after
            while True:
                got = self.next_frame(deadline)
                if got is None:
                    lost += 1
                    break
                if got[0] == PONG and got[1].endswith(tag):
                    rtts.append((time.monotonic() - sent) * 1000.0)
                    break
            pause = sent + every - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        return rtts, lost


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * p))], 3)


def flooder(port, addresses, seconds, counter):
    """Connects and closes at once from `addresses` in turn until `seconds` pass."""
    # On loopback the flood shares lobbyd's cores, which a remote crowd would not: take only
    # CPU time nothing else wants (as scripts/hostile.sh runs its attackers), unless told to
    # compete (METRICS_FLOOD_IDLE=0: a harsher flood on a machine busy with other work).
    if os.environ.get("METRICS_FLOOD_IDLE", "1") != "0":
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):
            os.nice(10)
    made, n = 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        source = addresses[n % len(addresses)]
        n += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # Close with a reset, as a flooder does: no TIME_WAIT piles up on our side.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.settimeout(0.5)
        try:
            s.bind((source, 0))
            s.connect(("127.0.0.1", port))
            made += 1
        except OSError:
            pass
        finally:
            s.close()
    with counter.get_lock():
        counter.value += made


def scraper(port, seconds, result):
    """Fetches /metrics from 127.0.0.9 every 200 ms; counts answers that were a whole 200."""
    ok = failed = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.monotonic()
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(5)
            s.bind(("127.0.0.9", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: scraper\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            if data.startswith(b"HTTP/1.1 200") and b"lobbyd_uptime_seconds" in data:
                ok += 1
            else:
                failed += 1
        except OSError:
            failed += 1
        pause = began + 0.2 - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    result.update(ok=ok, failed=failed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--lobby-port", type=int, required=True)
    parser.add_argument("--quiet", type=float, default=5.0)
    parser.add_argument("--flood", type=float, default=12.0)
    parser.add_argument("--flooders", type=int, default=2)
    parser.add_argument("--flood-addresses", type=int, default=16)
    args = parser.parse_args()

    member = Member(args.lobby_port, "pinger")
    quiet_rtts, quiet_lost = member.ping_for(args.quiet)

    counter = multiprocessing.Value("q", 0)
    addresses = [f"127.20.{n // 250}.{1 + n % 250}" for n in range(args.flood_addresses)]
    share = [addresses[i :: args.flooders] or addresses for i in range(args.flooders)]
    procs = [
        multiprocessing.Process(target=flooder, args=(args.metrics_port, s, args.flood, counter))
        for s in share
    ]
    for p in procs:
        p.start()
    scrapes = {}
    scrape_thread = threading.Thread(target=scraper, args=(args.metrics_port, args.flood, scrapes))
    scrape_thread.start()
    flood_rtts, flood_lost = member.ping_for(args.flood)
    scrape_thread.join()
    for p in procs:
        p.join()

    print(
        json.dumps(
            {
                "connects": counter.value,
                "flood_seconds": args.flood,
                "scrapes_ok": scrapes.get("ok", 0),
                "scrapes_failed": scrapes.get("failed", 0),
                "quiet_ping_ms": {
                    "p50": percentile(quiet_rtts, 0.5),
                    "p99": percentile(quiet_rtts, 0.99),
                    "n": len(quiet_rtts),
                    "lost": quiet_lost,
                },
                "flood_ping_ms": {
                    "p50": percentile(flood_rtts, 0.5),
                    "p99": percentile(flood_rtts, 0.99),
                    "n": len(flood_rtts),
                    "lost": flood_lost,
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, TimeoutError, ConnectionError) as e:
        print(f"metrics_flood: {e}", file=sys.stderr)
        sys.exit(1)
