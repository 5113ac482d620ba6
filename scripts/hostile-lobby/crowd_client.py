#!/usr/bin/env python3
"""Attack and witness clients of the general lobby's crowd scenarios (standard library only).

Roles (docs/protocols/general-lobby.md for the wire format):

  talkers  N members from --sources (round robin), each sending lobby CHAT lines of --size
           bytes at --rate lines per second for --duration seconds, reading and discarding all
           they receive. Prints one JSON line: lines sent, refused (ERROR 10), slow-mode notices.
  pinger   one well-behaved member from --source: a PING every --every seconds for --duration
           seconds, reading everything; a PONG later than --lost-after seconds (or never) is
           lost. Prints one JSON line: pings, lost, p50_ms, p99_ms, max_ms.
  hoarders N members from --sources (round robin), each creating games (with --data bytes of
           STORE_DATA each) until refused; prints games created and refusals by text.
  creator  one member from --source creating one game; prints whether it was created.

Every role signs in first (the name is --prefix plus an index), stops by itself, and targets
127.0.0.1 only.
"""

import argparse
import json
import os
import selectors
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
# The wire format: the example client's frame() and params() are the whole of it.
from general_lobby_client import (  # noqa: E402
    BYTES, CHALLENGE, CHAT, CHAT_FROM, CREATE_GAME, ERROR, GAME_INFO, I32, PING, PONG, SIGN_IN,
    STR, SYNC_DONE, U32, frame, params,
)

STORE_DATA = 0x40


class Member:
    """One signed-in connection; frames are cut from `buf` as they arrive."""

    def __init__(self, port, source, name):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind((source, 0))
        self.sock.settimeout(30)
        self.sock.connect(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.sock.sendall(frame(SIGN_IN, (STR, name), (STR, ""), (BYTES, b"")))
        while True:
            code, values = self.next_blocking()
            if code == CHALLENGE and values[1] == 1:
                raise PermissionError(f"{name}: sign-in refused: {values[0]}")
            if code == SYNC_DONE:
                break
        self.sock.setblocking(False)

    def next_blocking(self):
        while True:
            got = self.cut()
            if got is not None:
                return got
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buf += chunk

    def cut(self):
        if len(self.buf) < 8:
            return None
        code, length = struct.unpack_from("<II", self.buf)
        if len(self.buf) < 8 + length:
            return None
        payload = bytes(self.buf[8 : 8 + length])
        del self.buf[: 8 + length]
        return code, params(payload)

    def pump(self):
        """Reads what is there; returns the whole frames, or None once the server closed."""
        try:
            while True:
                chunk = self.sock.recv(1 << 18)
                if not chunk:
                    return None
                self.buf += chunk
                if len(chunk) < (1 << 18):
                    break
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return None
        frames = []
        while (got := self.cut()) is not None:
            frames.append(got)
        return frames


def sources(spec):
    """127.0.1.1-127.0.1.50 or a single address."""
    if "-" not in spec:
        return [spec]
    first, last = spec.split("-")
    a, b = first.rsplit(".", 1), last.rsplit(".", 1)
    return [f"{a[0]}.{n}" for n in range(int(a[1]), int(b[1]) + 1)]


def talkers(args):
    addrs = sources(args.sources)
    members = [Member(args.port, addrs[i % len(addrs)], f"{args.prefix}{i}") for i in range(args.count)]
    sel = selectors.DefaultSelector()
    for i, m in enumerate(members):
        sel.register(m.sock, selectors.EVENT_READ, i)
    text = ("x" * args.size)[: args.size]
    line = frame(CHAT, (I32, 0), (STR, text))
    sent = refused = notices = closed = 0
    start = time.monotonic()
    interval = 1.0 / args.rate
    # Stagger the talkers over one interval.
    due = [start + interval * i / len(members) for i in range(len(members))]
    alive = [True] * len(members)
    while (now := time.monotonic()) < start + args.duration:
        for i, m in enumerate(members):
            if alive[i] and due[i] <= now:
                try:
                    m.sock.send(line)
                    sent += 1
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    alive[i] = False
                due[i] += interval
        wait = max(0.0, min(min(due), start + args.duration) - time.monotonic())
        for key, _ in sel.select(timeout=wait):
            i = key.data
            frames = members[i].pump()
            if frames is None:
                if alive[i]:
                    closed += 1
                alive[i] = False
                sel.unregister(key.fileobj)
                continue
            for code, values in frames:
                if code == ERROR and values and values[0] == 10:
                    refused += 1
                elif code == CHAT_FROM and i == 0 and values[1] == 0:
                    notices += 1
    print(json.dumps({"talkers": len(members), "sent": sent, "refused": refused,
                      "slow_mode_notices": notices, "closed": closed}))


def pinger(args):
    m = Member(args.port, args.source, args.prefix)
    sel = selectors.DefaultSelector()
    sel.register(m.sock, selectors.EVENT_READ)
    sent_at = {}
    rtts = []
    seq = 0
    start = time.monotonic()
    next_ping = start
    end = start + args.duration
    while True:
        now = time.monotonic()
        if now >= end + args.lost_after or (now >= end and not sent_at):
            break
        if now >= next_ping and now < end:
            seq += 1
            sent_at[seq] = now
            m.sock.sendall(frame(PING, (BYTES, struct.pack("<Q", seq))))
            next_ping += args.every
        deadline = next_ping if now < end else end + args.lost_after
        for _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
            frames = m.pump()
            if frames is None:
                print(json.dumps({"error": "the server closed the pinger"}))
                sys.exit(2)
            got = time.monotonic()
            for code, values in frames:
                if code == PONG and len(values[0]) == 8:
                    n = struct.unpack("<Q", values[0])[0]
                    at = sent_at.pop(n, None)
                    if at is not None:
                        rtts.append(got - at)
    late = [r for r in rtts if r > args.lost_after]
    lost = len(sent_at) + len(late)
    kept = sorted(r for r in rtts if r <= args.lost_after)

    def pct(p):
        if not kept:
            return None
        return round(kept[min(len(kept) - 1, int(p * len(kept)))] * 1000, 2)

    print(json.dumps({"pings": seq, "lost": lost, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
                      "max_ms": pct(1.0)}))


def create_game(m, name, data):
    """CREATE_GAME then, if created, STORE_DATA; returns None or the refusal text."""
    m.sock.setblocking(True)
    m.sock.settimeout(30)
    m.sock.sendall(frame(CREATE_GAME, (U32, 2), (STR, "hoard"), (STR, "1"), (U32, 0),
                         (STR, name), (STR, "")))
    while True:
        code, values = m.next_blocking()
        if code == ERROR and values[1] == CREATE_GAME:
            return values[2]
        if code == GAME_INFO and values[3] == name:
            game = values[0]
            break
    if data:
        m.sock.sendall(frame(STORE_DATA, (I32, game), (STR, "k"), (BYTES, b"d" * data)))
    return None


def hoarders(args):
    addrs = sources(args.sources)
    members = [Member(args.port, addrs[i % len(addrs)], f"{args.prefix}{i}") for i in range(args.count)]
    created, refusals = 0, {}
    for i, m in enumerate(members):
        for g in range(args.games_each):
            why = create_game(m, f"{args.prefix}{i}g{g}", args.data)
            if why is None:
                created += 1
            else:
                refusals[why] = refusals.get(why, 0) + 1
                break
    print(json.dumps({"members": len(members), "created": created, "refusals": refusals}))
    # Hold the games while the witness tries, then leave.
    time.sleep(args.hold)


def creator(args):
    m = Member(args.port, args.source, args.prefix)
    why = create_game(m, f"{args.prefix}-game", 0)
    print(json.dumps({"created": why is None, "refusal": why}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["talkers", "pinger", "hoarders", "creator"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=50)
    p.add_argument("--sources", default="127.0.1.1-127.0.1.50")
    p.add_argument("--source", default="127.0.2.1")
    p.add_argument("--prefix", default="m")
    p.add_argument("--rate", type=float, default=5.0)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--every", type=float, default=0.02)
    p.add_argument("--lost-after", type=float, default=1.0)
    p.add_argument("--games-each", type=int, default=4)
    p.add_argument("--data", type=int, default=0)
    p.add_argument("--hold", type=float, default=0.0)
    args = p.parse_args()
    {"talkers": talkers, "pinger": pinger, "hoarders": hoarders, "creator": creator}[args.role](args)


if __name__ == "__main__":
    main()
