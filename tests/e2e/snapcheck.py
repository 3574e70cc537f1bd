#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers of tests/e2e/snapshot.sh.

  snapcheck.py gen FILE          items as JSON lines for `xdpkv import`: text and
                                 binary values (\\r\\n, NUL, 0xff inside), flags,
                                 no / far / 1-second expiry ("e*" keys)
  snapcheck.py same A B          two dumps hold the same items (key, value, flags, exptime, cas)
  snapcheck.py has DUMP GEN      the dump holds every generated item that should
                                 be there (no "e*" key), exactly
  snapcheck.py udp HOST PORT DUMP  get every item of DUMP over memcached UDP and
                                 compare value and flags

Exit status 0 when it holds, 1 with the differences printed.
"""
import base64
import json
import sys
import time

import rawclient


def load(path):
    items = {}
    for line in open(path, encoding="utf-8"):
        o = json.loads(line)
        k = base64.b64decode(o["key_b64"]) if "key_b64" in o else o["key"].encode()
        v = base64.b64decode(o["value_b64"]) if "value_b64" in o else o["value"].encode()
        items[k] = (v, o["flags"], o["exptime"], o.get("cas"))
    return items


def gen(path):
    far = int(time.time()) + 7200
    with open(path, "w") as f:
        for i in range(200):
            f.write(json.dumps({"key": "t%d" % i, "value": "text %d é ✓ " % i * (1 + i % 9),
                                "flags": i * 7, "exptime": far if i % 2 else 0}) + "\n")
        for i in range(60):
            v = bytes((i + j) % 256 for j in range(3 + i * 4)) + b"\r\n\x00end\r\n" + b"\xff" * (i % 5)
            f.write(json.dumps({"key": "b%d" % i, "value_b64": base64.b64encode(v).decode(),
                                "flags": 0xffffffff - i, "exptime": 0}) + "\n")
        for i in range(20):
            f.write(json.dumps({"key": "e%d" % i, "value": "soon gone", "flags": 1, "exptime": 1}) + "\n")


def diff(a, b, la, lb):
    bad = 0
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            bad += 1
            if bad <= 5:
                print("  %r: %s %r / %s %r" % (k, la, a.get(k), lb, b.get(k)))
    return bad


def udp_get(conn, key, tries=3):
    """One get over memcached UDP with rawclient's framing and checks (a late
    reply to an earlier request is skipped by its id); a datagram lost or late
    under load is asked for again, as memcached's UDP clients do."""
    for _ in range(tries):
        try:
            return conn.recv_reply(conn.send(b"get " + key + b"\r\n"))[0]
        except rawclient.Fail as e:
            err = b"(%s)" % str(e).encode()
    return err


def main():
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(sys.argv[2])
        return 0
    if cmd == "same":
        a, b = load(sys.argv[2]), load(sys.argv[3])
        bad = diff(a, b, "first", "second")
        print("%d items, %d differ" % (len(a), bad))
        return 1 if bad or not a else 0
    if cmd == "has":
        d, g = load(sys.argv[2]), load(sys.argv[3])
        want = {k: v[:3] for k, v in g.items() if not k.startswith(b"e")}
        # the generator's exptime is absolute or 0: the dump writes the same;
        # it gives no cas, the store makes one
        got = {k: d[k][:3] if k in d else None for k in want}
        bad = diff(want, got, "imported", "dumped")
        extra = [k for k in d if k not in want]
        print("%d wanted, %d differ, %d unexpected (%r)" % (len(want), bad, len(extra), extra[:3]))
        return 1 if bad or extra else 0
    if cmd == "udp":
        host, port, items = sys.argv[2], int(sys.argv[3]), load(sys.argv[4])
        conn = rawclient.Conn(host, port)
        bad = 0
        for k, (v, flags, _, _) in sorted(items.items()):
            want = b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (k, flags, len(v), v)
            got = udp_get(conn, k)
            if got != want:
                bad += 1
                print("  %r: want %r got %r" % (k, want[:80], got[:80]))
                if bad == 5:
                    break
        print("%d items over UDP, %d differ" % (len(items), bad))
        return 1 if bad or not items else 0
    print(__doc__)
    return 2


sys.exit(main())
