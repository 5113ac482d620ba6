#!/usr/bin/env python3
"""A small client of lobbyd's general lobby (docs/protocols/general-lobby.md), standard library only.

Signs in, prints what the server sends, chats in the lobby, creates a game and lists games:

    make run                                   # terminal 1: lobbyd on its defaults
    python3 examples/general_lobby_client.py   # terminal 2

Options: --host (127.0.0.1), --port (4243), --name (a random guest name), --password ("";
needed with --lobby-login required), --say TEXT (default "hello"), --game NAME (default
"my game"; "" creates none), --linger SECONDS (how long to print what arrives, default 1).

It is also a reference for writing a client: `frame()` and `params()` are the whole wire format.
"""

import argparse
import random
import socket
import struct
import sys
import time

# Message codes (server to client unless marked C).
HELLO, CHALLENGE, SIGN_IN, WELCOME, ERROR, SYNC_DONE = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
MEMBER_INFO, MEMBER_LEFT = 0x10, 0x11
CHAT, CHAT_FROM, PRIVATE_FROM = 0x20, 0x21, 0x23  # CHAT is C
CREATE_GAME, GAME_INFO, GAME_CLOSED = 0x30, 0x31, 0x32  # CREATE_GAME is C
GAME_STARTED, GAME_MESSAGE = 0x3B, 0x46
JOIN_ASK, JOIN_RESPONSE, KICKED, DATA_VALUE = 0x34, 0x36, 0x3D, 0x42
LIST_GAMES, GAME_LIST_END, PING, PONG = 0x50, 0x51, 0x60, 0x61  # LIST_GAMES and PING are C

NAMES = {v: k for k, v in list(globals().items()) if k.isupper() and isinstance(v, int)}

# Parameter kinds.
I32, U32, STR, BYTES = 1, 2, 3, 4


def param(kind, value):
    """One parameter: kind u8 | len u16 | bytes, little-endian."""
    if kind == I32:
        body = struct.pack("<i", value)
    elif kind == U32:
        body = struct.pack("<I", value)
    elif kind == STR:
        body = value.encode("utf-8")
    else:
        body = bytes(value)
    return struct.pack("<BH", kind, len(body)) + body


def frame(code, *params_):
    """One frame: code u32 | length u32 | payload (a run of parameters)."""
    payload = b"".join(param(kind, value) for kind, value in params_)
    return struct.pack("<II", code, len(payload)) + payload


def params(payload):
    """Decodes a payload into a list of Python values (int, str or bytes)."""
    out, at = [], 0
    while at < len(payload):
        kind, length = struct.unpack_from("<BH", payload, at)
        body = payload[at + 3 : at + 3 + length]
        at += 3 + length
        if kind == I32:
            out.append(struct.unpack("<i", body)[0])
        elif kind == U32:
            out.append(struct.unpack("<I", body)[0])
        elif kind == STR:
            out.append(body.decode("utf-8"))
        else:
            out.append(body)
    return out


class Connection:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def recv(self, timeout=5.0):
        """The next frame as (code, [values]), or None when nothing came within `timeout`."""
        self.sock.settimeout(timeout)
        while True:
            if len(self.buf) >= 8:
                code, length = struct.unpack_from("<II", self.buf)
                if len(self.buf) >= 8 + length:
                    payload = self.buf[8 : 8 + length]
                    self.buf = self.buf[8 + length :]
                    return code, params(payload)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk

    def expect(self, wanted):
        """Reads frames, printing them, until one with code `wanted` arrives."""
        while True:
            got = self.recv()
            if got is None:
                raise TimeoutError(f"no {NAMES.get(wanted, wanted)} from the server")
            show(got)
            if got[0] == wanted:
                return got[1]
            if got[0] == CHALLENGE and got[1][1] == 1:
                raise PermissionError(f"sign-in refused: {got[1][0]}")


def show(message):
    code, values = message
    print(f"<- {NAMES.get(code, hex(code))} {values}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4243)
    parser.add_argument("--name", default=f"guest{random.randint(1000, 9999)}")
    parser.add_argument("--password", default="")
    parser.add_argument("--say", default="hello")
    parser.add_argument("--game", default="my game")
    parser.add_argument("--linger", type=float, default=1.0)
    args = parser.parse_args()

    conn = Connection(args.host, args.port)
    conn.expect(HELLO)
    conn.expect(CHALLENGE)
    print(f"-> SIGN_IN {args.name}")
    conn.send(frame(SIGN_IN, (STR, args.name), (STR, args.password), (BYTES, b"")))
    member_id, token = conn.expect(WELCOME)
    conn.expect(SYNC_DONE)
    print(f"signed in as member {member_id} (resume token {token.hex()})")

    print(f"-> CHAT {args.say!r}")
    conn.send(frame(CHAT, (I32, 0), (STR, args.say)))
    conn.expect(CHAT_FROM)
    if args.game:
        print(f"-> CREATE_GAME {args.game!r}")
        conn.send(
            frame(
                CREATE_GAME,
                (U32, 4), (STR, "example"), (STR, "1.0"), (U32, 0), (STR, args.game), (STR, ""),
            )
        )
        conn.expect(GAME_INFO)
    print("-> LIST_GAMES")
    conn.send(frame(LIST_GAMES, (STR, ""), (U32, 0), (U32, 0)))
    conn.expect(GAME_LIST_END)
    conn.send(frame(PING, (BYTES, b"bye")))
    conn.expect(PONG)
    deadline = time.monotonic() + args.linger
    while time.monotonic() < deadline:
        got = conn.recv(timeout=max(0.0, deadline - time.monotonic()))
        if got is None:
            break
        show(got)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, PermissionError, TimeoutError) as e:
        print(f"general_lobby_client: {e}", file=sys.stderr)
        sys.exit(1)
