#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helper of tests/e2e/migrate.sh: a memcached UDP client that keeps writing
and reading while the store migrates, until SIGTERM; then prints JSON.

  migload.py HOST PORT PREFIX OUT.json

One request at a time over rawclient.Conn (its framing and frame-header
checks), cycling over keys PREFIX0..PREFIX999: set a new value (must be
STORED), get it back (must be that value), and every 7th step delete a key
(DELETED or NOT_FOUND, as the last acknowledged write says; with
MIGLOAD_LOSSY=1, for array_fnv, NOT_FOUND too: another of its keys may have
taken the slot) and get it (a miss).  Any other answer, and any request without one in 2 s, is a failure.
OUT.json: {"ok": N, "fail": N, "failures": [...], "last": {key: value or
null}}: the last acknowledged state of every key touched, which the test
compares with the store afterwards.
"""
import json
import os
import random
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawclient import Conn, Fail  # noqa: E402

host, port, prefix, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
stop = False


def on_term(sig, frm):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
c = Conn(host, port)
rnd = random.Random(int(os.environ.get("MIGLOAD_SEED", "1")))
last, ok, failures, step = {}, 0, [], 0
lossy = os.environ.get("MIGLOAD_LOSSY") == "1"  # array_fnv: colliding keys replace each other


def ask(text, want):
    global ok
    try:
        got, _ = c.ask(text)
    except Fail as e:
        failures.append([step, text[:40].decode(errors="replace"), str(e)])
        return False
    if got != want and not (isinstance(want, tuple) and got in want):
        failures.append([step, text[:40].decode(errors="replace"), "got %r want %r" % (got[:80], want)])
        return False
    ok += 1
    return True


while not stop:
    step += 1
    key = ("%s%d" % (prefix, rnd.randrange(1000))).encode()
    if step % 7 == 0:
        had = last.get(key.decode()) is not None
        want = b"DELETED\r\n" if had else b"NOT_FOUND\r\n"
        if had and lossy:  # another key of ours may have taken its slot
            want = (want, b"NOT_FOUND\r\n")
        if ask(b"delete " + key + b"\r\n", want):
            last[key.decode()] = None
        ask(b"get " + key + b"\r\n", b"END\r\n")
        continue
    val = ("v%d-%d" % (step, rnd.randrange(1 << 30))).encode()
    if ask(b"set " + key + b" 5 0 %d\r\n" % len(val) + val + b"\r\n", b"STORED\r\n"):
        last[key.decode()] = val.decode()
    ask(b"get " + key + b"\r\n", b"VALUE " + key + b" 5 %d\r\n" % len(val) + val + b"\r\nEND\r\n")
json.dump({"ok": ok, "fail": len(failures), "failures": failures[:20], "last": last}, open(out, "w"))
