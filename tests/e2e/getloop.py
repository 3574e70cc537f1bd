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
import sys
import time

import rawclient

host, port, key, value, out = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4].encode(), sys.argv[5]
stop = False


def on_term(sig, frm):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
conn = rawclient.Conn(host, port)  # connected: ICMP port unreachable is seen
want_tail = b"\r\n" + value + b"\r\nEND\r\n"
ok, late, failures, times = 0, 0, [], []
while not stop:
    t0 = time.monotonic()
    try:
        got, _ = conn.recv_reply(conn.send(b"get " + key + b"\r\n"), timeout=2.0)
        late += time.monotonic() - t0 > 0.25
        if got.startswith(b"VALUE " + key + b" ") and got.endswith(want_tail):
            ok += 1
            times.append(time.time())
        else:
            failures.append([time.time(), "wrong reply %r" % got[:52]])
    except rawclient.Fail as e:
        failures.append([time.time(), str(e)])
    except ConnectionRefusedError:
        failures.append([time.time(), "ICMP port unreachable (no XDP program answered)"])
        time.sleep(0.001)
    except InterruptedError:
        pass
json.dump({"ok": ok, "late": late, "fail": len(failures), "failures": failures[:20], "times": times},
          open(out, "w"))
