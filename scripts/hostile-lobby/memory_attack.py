#!/usr/bin/env python3
"""Memory attacks on lobbyd's general lobby, standard library only (run by the
scripts/hostile-lobby/{non-readers,mass-departure,partial-frames}.sh scenarios).

Modes (each bounded in count and time, loopback only; members connect from distinct
127.0.x.y source addresses, 50 per address, like a crowd of machines):
  non-readers     MEMBERS members sign in; NON_READERS of them never read again, TALKERS chat
                  at their per-member limit (5 lines/s, 512-byte lines) for SECONDS, the others
                  read everything.
  mass-departure  MEMBERS members sign in and idle; the lobby's RSS settles (the steady state),
                  its peak is reset (/proc/PID/clear_refs), then every member closes at once.
  partial-frames  MEMBERS members sign in, then each sends a frame header declaring FRAME bytes
                  and all of them but the last, and holds the frame unfinished for SECONDS.

Beside the attack a well-behaved member (another process, so the attackers' Python does not
delay it) PINGs every 20 ms and reports its round trips. Prints the figures as one JSON line:
RSS peak of the lobbyd process (VmHWM, kB) and its steady RSS, the pinger's p50/p99/lost.
"""

import argparse
import json
import os
import resource
import selectors
import socket
import struct
import subprocess
import sys
import time

SIGN_IN, SYNC_DONE, CHAT, PING, PONG = 0x03, 0x06, 0x20, 0x60, 0x61
I32, STR, BYTES = 1, 3, 4
PER_ADDRESS = 50


def param(kind, value):
    body = struct.pack("<i", value) if kind == I32 else (
        value.encode() if kind == STR else bytes(value))
    return struct.pack("<BH", kind, len(body)) + body


def frame(code, *params):
    payload = b"".join(param(k, v) for k, v in params)
    return struct.pack("<II", code, len(payload)) + payload


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def source(i):
    if i < 0:
        return "127.0.0.1"
    n = i // PER_ADDRESS
    return f"127.0.{1 + n // 250}.{1 + n % 250}"


class Member:
    def __init__(self, port, i):
        self.sock = socket.socket()
        self.sock.bind((source(i), 0))
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.buf = b""
        self.name = f"m{i}"

    def frames(self):
        """Whole frames in the buffer, as (code, payload)."""
        out = []
        while len(self.buf) >= 8:
            code, length = struct.unpack_from("<II", self.buf)
            if len(self.buf) < 8 + length:
                break
            out.append((code, self.buf[8:8 + length]))
            self.buf = self.buf[8 + length:]
        return out


def sign_in_all(port, count, deadline):
    """Connects and signs in `count` members, a batch at a time; returns them."""
    members = []
    sel = selectors.DefaultSelector()
    batch = 200
    for start in range(0, count, batch):
        pending = {}
        for i in range(start, min(count, start + batch)):
            m = Member(port, i)
            m.sock.sendall(frame(SIGN_IN, (STR, m.name), (STR, ""), (BYTES, b"")))
            m.sock.setblocking(False)
            sel.register(m.sock, selectors.EVENT_READ, m)
            pending[m.sock] = m
        while pending:
            if time.monotonic() > deadline:
                raise SystemExit(f"sign-ins: {len(pending)} not done in time")
            for key, _ in sel.select(1.0):
                m = key.data
                try:
                    chunk = m.sock.recv(1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise SystemExit(f"{m.name}: closed during sign-in")
                m.buf += chunk
                for code, _ in m.frames():
                    if code == SYNC_DONE:
                        sel.unregister(m.sock)
                        del pending[m.sock]
                        members.append(m)
                        break
    return members, sel


def drain(members, sel, until):
    """Reads and discards what `members` get until `until` (monotonic)."""
    for m in members:
        m.buf = b""
        sel.register(m.sock, selectors.EVENT_READ, m)
    while time.monotonic() < until:
        for key, _ in sel.select(0.05):
            try:
                if not key.data.sock.recv(1 << 20):
                    sel.unregister(key.data.sock)
            except (BlockingIOError, ConnectionError):
                pass


def start_pinger(port, seconds):
    return subprocess.Popen(
        [sys.executable, __file__, "ping", "--port", str(port), "--seconds", str(seconds)],
        stdout=subprocess.PIPE, text=True)


def pinger(port, seconds):
    """A well-behaved member: PING every 20 ms, round trips in ms; a PONG later than 1 s is
    lost."""
    m = Member(port, -1)
    m.sock.sendall(frame(SIGN_IN, (STR, "pinger"), (STR, ""), (BYTES, b"")))
    while True:
        m.buf += m.sock.recv(1 << 20)
        if any(code == SYNC_DONE for code, _ in m.frames()):
            break
    m.sock.setblocking(False)
    sent, rtts, lost = {}, [], 0
    seq, end = 0, time.monotonic() + seconds
    next_ping = time.monotonic()
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_ping:
            m.sock.sendall(frame(PING, (BYTES, struct.pack("<I", seq))))
            sent[seq] = now
            seq += 1
            next_ping += 0.02
        try:
            chunk = m.sock.recv(1 << 20)
            if not chunk:
                break
            m.buf += chunk
        except BlockingIOError:
            time.sleep(0.001)
        for code, payload in m.frames():
            if code == PONG and len(payload) >= 7:
                n = struct.unpack_from("<I", payload, 3)[0]
                if n in sent:
                    rtts.append((time.monotonic() - sent.pop(n)) * 1000)
        for n in [n for n, at in sent.items() if time.monotonic() - at > 1.0]:
            del sent[n]
            lost += 1
    rtts.sort()
    pick = lambda q: round(rtts[min(len(rtts) - 1, int(q * len(rtts)))], 2) if rtts else None
    print(json.dumps({"pings": seq, "p50_ms": pick(0.5), "p99_ms": pick(0.99), "lost": lost}))


def non_readers(args):
    deadline = time.monotonic() + 120
    members, sel = sign_in_all(args.port, args.members, deadline)
    ping = start_pinger(args.port, args.seconds + 2)
    time.sleep(1)
    silent = members[:args.non_readers]
    talkers = members[args.non_readers:args.non_readers + args.talkers]
    readers = members[args.non_readers:]
    for m in readers:
        sel.register(m.sock, selectors.EVENT_READ, m)
    line = "x" * 500
    end = time.monotonic() + args.seconds
    next_round = time.monotonic()
    while time.monotonic() < end:
        if time.monotonic() >= next_round:
            for t in talkers:
                try:
                    t.sock.send(frame(CHAT, (I32, 0), (STR, line)))
                except (BlockingIOError, ConnectionError):
                    pass
            next_round += 0.2
        for key, _ in sel.select(0.01):
            try:
                if not key.data.sock.recv(1 << 20):
                    sel.unregister(key.data.sock)
            except (BlockingIOError, ConnectionError):
                sel.unregister(key.data.sock)
    del silent
    return ping


def mass_departure(args):
    deadline = time.monotonic() + 180
    members, sel = sign_in_all(args.port, args.members, deadline)
    drain(members, sel, time.monotonic() + 3)
    steady = status_kb(args.pid, "VmRSS")
    with open(f"/proc/{args.pid}/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    ping = start_pinger(args.port, args.seconds + 1)
    time.sleep(1)
    for m in members:
        m.sock.close()
    time.sleep(args.seconds)
    return ping, steady


def partial_frames(args):
    deadline = time.monotonic() + 120
    members, sel = sign_in_all(args.port, args.members, deadline)
    ping = start_pinger(args.port, args.seconds + 1)
    time.sleep(1)
    body = b"\0" * (args.frame - 1)
    header = struct.pack("<II", CHAT, args.frame)
    for m in members:
        m.sock.setblocking(True)
        m.sock.settimeout(5)
        try:
            m.sock.sendall(header + body)
        except (socket.timeout, ConnectionError):
            pass  # the server dropped it (or stopped reading it): its cost, not ours
    time.sleep(args.seconds)
    return ping


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["non-readers", "mass-departure", "partial-frames", "ping"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int)
    p.add_argument("--members", type=int, default=1000)
    p.add_argument("--non-readers", type=int, default=200)
    p.add_argument("--talkers", type=int, default=20)
    p.add_argument("--frame", type=int, default=1 << 20)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--max-peak-mb", type=float, help="target: VmHWM at most this")
    p.add_argument("--max-above-steady-mb", type=float, help="target: VmHWM - steady RSS")
    p.add_argument("--max-p99-ms", type=float, help="target: the pinger's p99")
    args = p.parse_args()
    if args.mode == "ping":
        pinger(args.port, args.seconds)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 20_000)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    idle = status_kb(args.pid, "VmRSS")
    steady = None
    if args.mode == "non-readers":
        ping = non_readers(args)
    elif args.mode == "mass-departure":
        ping, steady = mass_departure(args)
    else:
        ping = partial_frames(args)
    out, _ = ping.communicate(timeout=60)
    result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    result.update({
        "mode": args.mode,
        "members": args.members,
        "idle_rss_kb": idle,
        "steady_rss_kb": steady,
        "peak_rss_kb": status_kb(args.pid, "VmHWM"),
    })
    print(json.dumps(result))
    missed = []
    peak_mb = result["peak_rss_kb"] / 1024
    if args.max_peak_mb is not None and peak_mb > args.max_peak_mb:
        missed.append(f"RSS peak {peak_mb:.1f} MB > {args.max_peak_mb} MB")
    if args.max_above_steady_mb is not None and steady is not None:
        above = (result["peak_rss_kb"] - steady) / 1024
        if above > args.max_above_steady_mb:
            missed.append(f"RSS peak {above:.1f} MB above steady > {args.max_above_steady_mb} MB")
    if args.max_p99_ms is not None:
        p99 = result.get("p99_ms")
        if p99 is None or p99 > args.max_p99_ms:
            missed.append(f"PING p99 {p99} ms > {args.max_p99_ms} ms")
    for why in missed:
        print(f"target missed: {why}", file=sys.stderr)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
