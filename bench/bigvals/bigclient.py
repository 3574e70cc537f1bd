#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The client of bench/bigvals/bigvals.sh: GETs of values of one size over one TCP
connection, `depth` requests in flight (pipelined), after a check that every
key reads back what was set.  Prints one JSON object: ops, duration_s.

  bigclient.py HOST PORT SIZE KEYS DURATION [DEPTH [PREFIX]]

PREFIX: the keys' prefix (default "big"); DURATION 0: set and check only.
"""
import json
import socket
import sys
import time


def value(n, k):
    return bytes((i * 131 + k * 17 + (i >> 11)) % 251 for i in range(n))


def recv_exact(s, buf, n):
    while len(buf) < n:
        d = s.recv(1 << 20)
        if not d:
            raise SystemExit("bigclient: the server closed the connection")
        buf += d
    return buf


def main():
    host, port, size, keys, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    depth = int(sys.argv[6]) if len(sys.argv) > 6 else 4
    pre = sys.argv[7].encode() if len(sys.argv) > 7 else b"big"
    s = socket.create_connection((host, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    vals = [value(size, k) for k in range(keys)]
    for k in range(keys):
        s.sendall(b"set %s%d 0 0 %d\r\n" % (pre, k, size) + vals[k] + b"\r\n")
        buf = recv_exact(s, b"", 8)
        if buf != b"STORED\r\n":
            raise SystemExit(f"bigclient: set big{k} of {size} bytes: {buf[:80]!r}")
    replies = [b"VALUE %s%d 0 %d\r\n" % (pre, k, size) + vals[k] + b"\r\nEND\r\n" for k in range(keys)]
    buf = b""
    # validated before timing: every key, byte for byte
    for k in range(keys):
        s.sendall(b"get %s%d\r\n" % (pre, k))
        buf = recv_exact(s, buf, len(replies[k]))
        if buf[:len(replies[k])] != replies[k]:
            raise SystemExit(f"bigclient: get big{k}: a wrong reply ({buf[:80]!r})")
        buf = buf[len(replies[k]):]
    ops, k, inflight = 0, 0, []
    t0 = time.monotonic()
    end = t0 + duration
    while True:
        now = time.monotonic()
        while len(inflight) < depth and now < end:
            s.sendall(b"get %s%d\r\n" % (pre, k))
            inflight.append(k)
            k = (k + 1) % keys
        if not inflight:
            break
        want = replies[inflight[0]]
        buf = recv_exact(s, buf, len(want))
        if buf[:len(want)] != want:  # checked while timed too: a few compares per reply
            raise SystemExit("bigclient: a wrong reply while timed")
        buf = buf[len(want):]
        inflight.pop(0)
        ops += 1
    print(json.dumps({"ops": ops, "duration_s": time.monotonic() - t0, "size": size, "keys": keys,
                      "depth": depth}))


if __name__ == "__main__":
    main()
