#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helper of tests/e2e/reattach.sh: get one key over memcached UDP as fast as
the answers come, one request at a time, until SIGTERM; then print JSON:

  getloop.py HOST PORT KEY VALUE OUT.json

  {"ok": N, "fail": N, "failures": [[t, why], ...], "times": [t of each answer]}

A failure is a request without the right answer: none within 2 s, a wrong
one, or ICMP port unreachable (the kernel's stack answered: no XDP program
ran).  An answer after 0.25 s is counted late ("late": N), not failed: on a
loaded machine the client itself may not run for that long.  The socket is
connected so that the last one is seen.
"""
import json
import signal
import socket
import struct
import sys
import time

host, port, key, value, out = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4].encode(), sys.argv[5]
stop = False


def on_term(sig, frm):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((host, port))
want_tail = b"\r\n" + value + b"\r\nEND\r\n"
ok, late, failures, times, rid = 0, 0, [], [], 0


def answer(rid):
    """The datagram answering rid (a late answer to an earlier request
    skipped) and whether it came late; socket.timeout after 2 s."""
    t0 = time.monotonic()
    while True:
        s.settimeout(max(t0 + 2.0 - time.monotonic(), 0.001))
        got = s.recv(65536)
        if struct.unpack("!H", got[:2])[0] == rid:
            return got, time.monotonic() - t0 > 0.25


while not stop:
    rid = (rid + 1) & 0xffff
    try:
        s.send(struct.pack("!HHHH", rid, 0, 1, 0) + b"get " + key + b"\r\n")
        got, was_late = answer(rid)
        late += was_late
        if got[8:].startswith(b"VALUE " + key + b" ") and got.endswith(want_tail):
            ok += 1
            times.append(time.time())
        else:
            failures.append([time.time(), "wrong reply %r" % got[8:60]])
    except socket.timeout:
        failures.append([time.time(), "no reply in 2 s"])
    except ConnectionRefusedError:
        failures.append([time.time(), "ICMP port unreachable (no XDP program answered)"])
        time.sleep(0.001)
    except InterruptedError:
        pass
json.dump({"ok": ok, "late": late, "fail": len(failures), "failures": failures[:20], "times": times},
          open(out, "w"))
