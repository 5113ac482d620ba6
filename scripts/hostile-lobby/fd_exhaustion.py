#!/usr/bin/env python3
"""lobbyd out of file descriptors: does every TCP listener still answer a newcomer?

Against a lobbyd already running on loopback under a low RLIMIT_NOFILE: creates --rooms rooms
over UDP (8 per address, from 127.30.0.x: each holds a game instance socket), then opens
--crowd connections to the TCP lobby that never sign in (from 127.30.1.1), more than the
descriptors left, so lobbyd runs out. Then --probes newcomers per listener (from 127.30.2.1):
a TCP lobby, Warzone or general lobby newcomer must be answered, here closed at once (their
refusal at the limit), within --wait seconds; a metrics newcomer must get a whole 200.
Prints one JSON line (answered/unanswered per listener, the slowest answer in ms, lobbyd's
open descriptors); exits 1 when any newcomer went unanswered. Standard library only.
"""

import argparse
import json
import os
import socket
import struct
import sys
import time
import zlib


def udp_frame(message_type, seq):
    """A UDP lobby request with no payload: packetType 1, type, seq, payload size 0,
    original size 0, CRC-32 of what precedes it."""
    head = struct.pack(">BBHHH", 0x01, message_type, seq, 0, 0)
    return head + struct.pack(">I", zlib.crc32(head))


def create_rooms(udp_port, rooms):
    created = 0
    for n in range(rooms):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((f"127.30.0.{1 + n // 8}", 0))
        s.settimeout(2)
        s.sendto(udp_frame(0x42, 1), ("127.0.0.1", udp_port))
        try:
            reply = s.recv(2048)
            created += reply[1] == 0x43
        except socket.timeout:
            pass
        s.close()
    return created


def connect(port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


def answered(sock, wait, request=b""):
    """Seconds until the server closed `sock` (after sending it `request`); its bytes; or
    (None, bytes) when it was still open after `wait` seconds."""
    began = time.monotonic()
    if request:
        sock.sendall(request)
    sock.settimeout(wait)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return time.monotonic() - began, data
            data += chunk
    except ConnectionResetError:
        return time.monotonic() - began, data
    except socket.timeout:
        return None, data


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--udp-port", type=int, required=True)
    parser.add_argument("--tcp-port", type=int, required=True)
    parser.add_argument("--wz-port", type=int, required=True)
    parser.add_argument("--lobby-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--rooms", type=int, required=True)
    parser.add_argument("--crowd", type=int, required=True)
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--wait", type=float, default=2.0)
    args = parser.parse_args()

    rooms = create_rooms(args.udp_port, args.rooms)
    crowd = []
    for _ in range(args.crowd):
        try:
            crowd.append(connect(args.tcp_port, "127.30.1.1"))
        except OSError:
            break
    time.sleep(0.5)
    descriptors = len(os.listdir(f"/proc/{args.pid}/fd"))

    result = {"rooms": rooms, "crowd": len(crowd), "lobbyd_descriptors": descriptors}
    failed = False
    listeners = [
        ("tcp_lobby", args.tcp_port, b""),
        ("wz", args.wz_port, b""),
        ("general_lobby", args.lobby_port, b""),
        ("metrics", args.metrics_port, b"GET /metrics HTTP/1.1\r\nHost: probe\r\n\r\n"),
    ]
    for name, port, request in listeners:
        ok, slowest, tried = 0, 0.0, 0
        for _ in range(args.probes):
            if tried - ok >= 3:
                break  # this listener is not answering: enough waiting on it
            tried += 1
            try:
                s = connect(port, "127.30.2.1")
                took, data = answered(s, args.wait, request)
                s.close()
            except OSError:
                took, data = None, b""
            if name == "metrics":
                good = took is not None and data.startswith(b"HTTP/1.1 200")
            else:
                # Served, a general lobby newcomer would get HELLO; refused, nothing.
                good = took is not None and data == b""
            ok += good
            if took is not None:
                slowest = max(slowest, took)
        result[name] = {
            "answered": ok,
            "unanswered": tried - ok,
            "slowest_ms": round(slowest * 1000, 1),
        }
        failed |= ok < tried
    for s in crowd:
        s.close()
    print(json.dumps(result))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
