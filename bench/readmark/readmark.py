#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What marking an item's reads costs serve (docs/layouts-measured.md): N fresh
items, then three passes of pipelined `mg <key> v` over them, timed each:
the first read marks the item fetched, the second active with its time
(each one more write of the item), the third changes nothing (a check of
its state alone).  One JSON line per pass: ns per request.

  readmark.py HOST PORT LAYOUT [N]
"""
import json
import socket
import sys
import time

host, port, layout = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 20000
BATCH = 100
s = socket.create_connection((host, port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
tag = "m%d" % (time.time_ns() % 100000)


def run(lines):
    """Send lines in batches, each closed by mn; wait for its MN.  Returns
    the ns taken and the misses (EN: a lossy layout may have let an item go)."""
    t0, misses = time.perf_counter_ns(), 0
    for i in range(0, len(lines), BATCH):
        s.sendall(b"".join(lines[i:i + BATCH]) + b"mn\r\n")
        buf = b""
        while not buf.endswith(b"MN\r\n"):
            d = s.recv(1 << 20)
            if not d:
                sys.exit("connection closed")
            buf += d
        if b"ERROR" in buf:
            sys.exit("unexpected reply: %r" % buf[:200])
        misses += buf.count(b"EN\r\n")
    return time.perf_counter_ns() - t0, misses


keys = [b"%s:%d" % (tag.encode(), i) for i in range(n)]
run([b"set %s 0 0 8\r\nvaluexyz\r\n" % k for k in keys])
for p, what in enumerate(("first read: marks fetched (a write)",
                          "second read: marks active, takes the time (a write)",
                          "third read: nothing to mark")):
    ns, misses = run([b"mg %s v\r\n" % k for k in keys])
    print(json.dumps({"layout": layout, "pass": p + 1, "what": what, "requests": n,
                      "misses": misses, "ns_per_request": round(ns / n)}))
