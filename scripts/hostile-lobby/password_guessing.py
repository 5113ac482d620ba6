#!/usr/bin/env python3
"""Sign-in under attack against a general lobby with accounts (stdlib only, loopback only).

Modes:
  crowd  -- ADDRESSES source addresses (127.10.x.y) guess an account's password, each keeping
            CONNS wrong SIGN_INs in flight on as many connections (the server holds each address
            to its failed-check budget: refused guesses come back "try again" and are sent again
            200 ms later); meanwhile the account's owner, from 127.20.0.1, signs in with the right
            password every INTERVAL on a new connection, dropping the previous one without a
            word (so the name is still held, by an away member, at the next try). Prints the
            owner's tries, successes, p50/p99 time to WELCOME and the refusals it got.
  wrong  -- COUNT wrong sign-ins at once, each from its own address (127.11.x.y, so none is
            refused for its address's share), each answered before the mode returns.

Exits 0; the calling script judges the figures (one `key=value` line each on stdout).
"""

import argparse
import selectors
import socket
import struct
import threading
import time

CHALLENGE, SIGN_IN, WELCOME, ERROR = 0x02, 0x03, 0x04, 0x05
STR, BYTES = 3, 4
WRONG, TRY_AGAIN = "wrong name or password", "try again"


def frame(code, *params):
    payload = b"".join(struct.pack("<BH", k, len(v)) + v for k, v in params)
    return struct.pack("<II", code, len(payload)) + payload


def sign_in(name, password):
    return frame(SIGN_IN, (STR, name.encode()), (STR, password.encode()), (BYTES, b""))


def first_text(payload):
    """The first parameter of a payload, as text."""
    if len(payload) < 3:
        return ""
    _, length = struct.unpack_from("<BH", payload, 0)
    return payload[3 : 3 + length].decode("utf-8", "replace")


def frames(buf):
    """Splits whole frames off `buf`: ([(code, payload)], rest)."""
    out = []
    while len(buf) >= 8:
        code, length = struct.unpack_from("<II", buf)
        if len(buf) < 8 + length:
            break
        out.append((code, buf[8 : 8 + length]))
        buf = buf[8 + length :]
    return out, buf


class Guesser:
    """One connection of the crowd: SIGN_IN after the greeting and after every refusal."""

    def __init__(self, crowd, source):
        self.crowd, self.source = crowd, source
        self.open()

    def open(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((self.source, 0))
        s.setblocking(False)
        s.connect_ex((self.crowd.host, self.crowd.port))
        self.sock, self.buf, self.greeted, self.resend_at = s, b"", False, None
        self.crowd.sel.register(s, selectors.EVENT_READ, self)

    def reopen(self):
        self.crowd.sel.unregister(self.sock)
        self.sock.close()
        self.crowd.reconnects += 1
        self.open()

    def guess(self):
        self.crowd.guesses += 1
        try:
            self.sock.send(sign_in(self.crowd.victim, f"guess{self.crowd.guesses}"))
        except OSError:
            self.reopen()

    def readable(self):
        try:
            chunk = self.sock.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.reopen()
            return
        got, self.buf = frames(self.buf + chunk)
        for code, payload in got:
            if code != CHALLENGE:
                continue
            text = first_text(payload)
            if not self.greeted:
                self.greeted = True
                self.guess()
            elif text == TRY_AGAIN:
                self.crowd.try_again += 1
                self.resend_at = time.monotonic() + 0.2
            else:
                self.crowd.wrong += 1
                self.guess()


class Crowd:
    def __init__(self, host, port, victim, addresses, conns):
        self.host, self.port, self.victim = host, port, victim
        self.sel = selectors.DefaultSelector()
        self.guesses = self.wrong = self.try_again = self.reconnects = 0
        self.guessers = [
            Guesser(self, f"127.10.{1 + i // 250}.{1 + i % 250}")
            for i in range(addresses)
            for _ in range(conns)
        ]

    def run(self, until):
        while time.monotonic() < until:
            for key, _ in self.sel.select(timeout=0.05):
                key.data.readable()
            now = time.monotonic()
            for g in self.guessers:
                if g.resend_at is not None and now >= g.resend_at:
                    g.resend_at = None
                    g.guess()


def recv_frame(sock, buf, deadline):
    """The next frame before `deadline`: (code, payload, rest of buf); code None on silence,
    "closed" when the server closed."""
    while True:
        if len(buf) >= 8:
            code, length = struct.unpack_from("<II", buf)
            if len(buf) >= 8 + length:
                return code, buf[8 : 8 + length], buf[8 + length :]
        left = deadline - time.monotonic()
        if left <= 0:
            return None, b"", buf
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return None, b"", buf
        if not chunk:
            return "closed", b"", buf
        buf += chunk


def owner_try(host, port, name, password, wait):
    """One sign-in from the owner's address: (answer, seconds to it, socket kept open)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.20.0.1", 0))
    s.settimeout(wait)
    s.connect((host, port))
    buf, deadline = b"", time.monotonic() + wait
    for _ in range(2):  # HELLO, CHALLENGE
        code, _, buf = recv_frame(s, buf, deadline)
        if code is None or code == "closed":
            s.close()
            return "no greeting", wait, None
    started = time.monotonic()
    s.sendall(sign_in(name, password))
    code, payload, buf = recv_frame(s, buf, started + wait)
    took = time.monotonic() - started
    if code == WELCOME:
        return "welcome", took, s
    s.close()
    if code == CHALLENGE:
        return first_text(payload), took, None
    if code is None:
        return "no answer", took, None
    return f"code {code}", took, None


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def crowd_mode(args):
    crowd = Crowd(args.host, args.port, args.victim, args.addresses, args.conns)
    results, stop = [], time.monotonic() + args.warmup + args.duration

    def owner():
        time.sleep(args.warmup)
        held = None
        while time.monotonic() < stop:
            began = time.monotonic()
            answer, took, sock = owner_try(args.host, args.port, args.owner, args.password, 5.0)
            results.append((answer, took))
            if held is not None:
                # Dropped without a word: the member is away (or taken over already).
                held.close()
            held = sock
            time.sleep(max(0.0, args.interval - (time.monotonic() - began)))
        if held is not None:
            held.close()

    t = threading.Thread(target=owner)
    t.start()
    crowd.run(stop)
    t.join()
    times = [took for answer, took in results if answer == "welcome"]
    refusals = {}
    for answer, _ in results:
        if answer != "welcome":
            refusals[answer] = refusals.get(answer, 0) + 1
    print(f"owner_tries={len(results)}")
    print(f"owner_signed_in={len(times)}")
    print(f"owner_p50_ms={percentile([r[1] for r in results], 50) * 1000:.0f}")
    print(f"owner_p99_ms={percentile([r[1] for r in results], 99) * 1000:.0f}")
    print(f"owner_refusals={refusals}")
    print(f"crowd_guesses={crowd.guesses} crowd_wrong={crowd.wrong} "
          f"crowd_try_again={crowd.try_again} crowd_reconnects={crowd.reconnects}")


def wrong_mode(args):
    socks = []
    for i in range(args.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((f"127.11.{1 + i // 250}.{1 + i % 250}", 0))
        s.settimeout(10)
        s.connect((args.host, args.port))
        socks.append([s, b""])
    deadline = time.monotonic() + 30
    for entry in socks:
        for _ in range(2):
            _, _, entry[1] = recv_frame(entry[0], entry[1], deadline)
    for i, (s, _) in enumerate(socks):
        s.sendall(sign_in(args.victim, f"wrong{i}"))
    answers = {}
    for s, buf in socks:
        code, payload, _ = recv_frame(s, buf, deadline)
        text = first_text(payload) if code == CHALLENGE else str(code)
        answers[text] = answers.get(text, 0) + 1
        s.close()
    print(f"wrong_answers={answers}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["crowd", "wrong"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--victim", default="victim")
    p.add_argument("--owner", default="owner")
    p.add_argument("--password", default="correct horse")
    p.add_argument("--addresses", type=int, default=64)
    p.add_argument("--conns", type=int, default=3)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--count", type=int, default=60)
    args = p.parse_args()
    crowd_mode(args) if args.mode == "crowd" else wrong_mode(args)


if __name__ == "__main__":
    main()
