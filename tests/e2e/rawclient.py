#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Raw memcached-over-UDP client for the xdpkv end-to-end tests.

Plain sockets, run inside the testbed's client namespace.  Every exchange is
checked byte for byte; replies of several datagrams are reassembled by
sequence number, and the frame header of every datagram is checked (request
id echoed, seq < total, same total everywhere, reserved 0).

With --status CMD (a shell command printing `xdpkv status --json`), each
fixture also asserts which path answered it, from the counters before and
after: "fast" = the XDP program replied (fast.replies grew, slow.requests did
not), "slow" = the slow path answered (slow.requests grew).

  rawclient.py suite --host ADDR [--port P] [--status CMD] [--tag T]
  rawclient.py req --host ADDR [--port P] TEXT      (TEXT: Python escapes, e.g. 'get k\\r\\n')

Exit status: 0 all passed, 1 a check failed, 2 usage.
"""

import argparse
import json
import os
import random
import shlex
import socket
import struct
import subprocess
import sys
import time

TIMEOUT = 2.0
QUIET_WAIT = 0.3  # how long "no reply" is waited for


class Fail(Exception):
    pass


# ---- wire ------------------------------------------------------------------

class Conn:
    def __init__(self, host, port):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_DGRAM)
        self.sock.connect((host, port))
        self.sock.settimeout(TIMEOUT)
        self.req_id = random.randrange(1, 0xFFFF)

    def send(self, text, seq=0, total=1):
        self.req_id = (self.req_id + 1) & 0xFFFF
        self.sock.send(struct.pack("!HHHH", self.req_id, seq, total, 0) + text)
        return self.req_id

    def recv_reply(self, req_id, timeout=TIMEOUT):
        """Gather datagrams of req_id until every seq of total arrived."""
        self.sock.settimeout(timeout)
        parts, total = {}, None
        while total is None or len(parts) < total:
            try:
                d = self.sock.recv(65536)
            except socket.timeout:
                if total is None:
                    raise Fail("no reply within %.1f s" % timeout)
                raise Fail("reply incomplete: got seq %s of %d" % (sorted(parts), total))
            if len(d) < 8:
                raise Fail("datagram of %d bytes, shorter than the frame header" % len(d))
            rid, seq, tot, rsv = struct.unpack("!HHHH", d[:8])
            if rid != req_id:
                continue  # a late reply to an earlier request
            if rsv != 0 or tot == 0 or seq >= tot:
                raise Fail("bad frame header id=%d seq=%d total=%d reserved=%d" % (rid, seq, tot, rsv))
            if total is not None and tot != total:
                raise Fail("datagrams disagree on total: %d vs %d" % (tot, total))
            if seq in parts:
                raise Fail("seq %d received twice" % seq)
            if len(d) > 1400:
                raise Fail("datagram of %d bytes exceeds 1400" % len(d))
            total = tot
            parts[seq] = d[8:]
        return b"".join(parts[i] for i in range(total)), total

    def expect_silence(self):
        self.sock.settimeout(QUIET_WAIT)
        try:
            d = self.sock.recv(65536)
        except socket.timeout:
            return
        raise Fail("expected no reply, got %r" % d[:80])

    def ask(self, text):
        return self.recv_reply(self.send(text))


# ---- counters ----------------------------------------------------------------

def read_counters(cmd):
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if p.returncode != 0:
        raise Fail("status command exited %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    try:
        j = json.loads(p.stdout)
    except ValueError as e:
        raise Fail("status output is not JSON (%s): %r" % (e, p.stdout[:200]))
    c = j.get("counters", j)
    return {"fast": dict(c["fast"]), "slow": dict(c["slow"])}


def delta(a, b, side, name):
    return b[side].get(name, 0) - a[side].get(name, 0)


def path_of(before, after):
    """(fast replies, datagrams the XDP program passed on, slow requests)."""
    passed = sum(delta(before, after, "fast", k) for k in after["fast"] if k.startswith("pass_"))
    return (delta(before, after, "fast", "replies"), passed,
            delta(before, after, "slow", "requests"))


def check_path(want, before, cmd):
    """fast: the XDP program replied and passed nothing on (its counters are
    exact at once: a datagram is either sent back or passed).  slow: the slow
    path read it and XDP sent nothing; the slow path pushes its counters every
    100 ms, so poll for up to 1 s.  A fragmented request never reaches the
    XDP program's counters, so "slow" does not require a pass_* count."""
    deadline = time.monotonic() + 1.0
    while True:
        fast, passed, slow = path_of(before, read_counters(cmd))
        if want == "fast" or slow >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if want == "fast" and (fast != 1 or passed != 0):
        raise Fail("expected the XDP fast path to answer: fast.replies +%d, fast.pass_* +%d"
                   % (fast, passed))
    if want == "slow" and (slow < 1 or fast != 0):
        raise Fail("expected the slow path to answer: slow.requests +%d, fast.replies +%d"
                   % (slow, fast))


# ---- fixtures ------------------------------------------------------------------

def value_of(n, seed):
    rnd = random.Random(seed)
    alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return bytes(rnd.choice(alphabet) for _ in range(n))


def setreq(key, val, flags=0, exptime=0, noreply=False):
    line = b"set %s %d %d %d%s\r\n" % (key, flags, exptime, len(val), b" noreply" if noreply else b"")
    return line + val + b"\r\n"


def hit(key, val, flags=0):
    return b"VALUE %s %d %d\r\n%s\r\n" % (key, flags, len(val), val)


def fixtures(tag, big_path, key_cap):
    """(name, request, expected reply | callable | None for silence, path, min datagrams)."""
    k = lambda s: ("%s-%s" % (tag, s)).encode()
    small = value_of(100, 1)
    v1000 = value_of(1000, 2)
    v3000 = value_of(3000, 3)
    return [
        ("get miss", b"get " + k("a") + b"\r\n", b"END\r\n", "fast", 1),
        ("set", setreq(k("a"), b"hello", flags=42), b"STORED\r\n", "fast", 1),
        ("get hit", b"get " + k("a") + b"\r\n", hit(k("a"), b"hello", 42) + b"END\r\n", "fast", 1),
        ("overwrite", setreq(k("a"), small, flags=4294967295), b"STORED\r\n", "fast", 1),
        ("get overwritten", b"get " + k("a") + b"\r\n",
         hit(k("a"), small, 4294967295) + b"END\r\n", "fast", 1),
        ("set second", setreq(k("b"), b"BB"), b"STORED\r\n", "fast", 1),
        ("multi-get with a miss", b"get %s %s %s\r\n" % (k("a"), k("zz"), k("b")),
         hit(k("a"), small, 4294967295) + hit(k("b"), b"BB") + b"END\r\n", "fast", 1),
        ("empty value", setreq(k("e"), b""), b"STORED\r\n", "fast", 1),
        ("get empty value", b"get " + k("e") + b"\r\n", hit(k("e"), b"") + b"END\r\n", "fast", 1),
        ("delete", b"delete " + k("a") + b"\r\n", b"DELETED\r\n", "fast", 1),
        ("delete again", b"delete " + k("a") + b"\r\n", b"NOT_FOUND\r\n", "fast", 1),
        ("get deleted", b"get " + k("a") + b"\r\n", b"END\r\n", "fast", 1),
        ("set noreply", setreq(k("n"), b"quiet", noreply=True), None, None, 0),
        ("get noreply'd", b"get " + k("n") + b"\r\n", hit(k("n"), b"quiet") + b"END\r\n", "fast", 1),
        # issue 7: passed on by XDP, answered by the slow path
        ("append", b"append " + k("n") + b" 0 0 2\r\n!!\r\n", b"STORED\r\n", "slow", 1),
        ("prepend", b"prepend " + k("n") + b" 0 0 1\r\n<\r\n", b"STORED\r\n", "slow", 1),
        ("get after append and prepend", b"get " + k("n") + b"\r\n", hit(k("n"), b"<quiet!!") + b"END\r\n",
         "fast", 1),
        ("append to a missing key", b"append " + k("zz") + b" 0 0 1\r\nx\r\n", b"NOT_STORED\r\n", "slow", 1),
        ("gets", b"gets " + k("n") + b"\r\n",
         lambda r: r.startswith(b"VALUE " + k("n") + b" 0 8 ") and r.endswith(b"\r\n<quiet!!\r\nEND\r\n") and
         r.split(b"\r\n")[0].split(b" ")[-1].isdigit(), "slow", 1),
        ("cas with a stale unique", b"cas " + k("n") + b" 0 0 1 1\r\nx\r\n", b"EXISTS\r\n", "slow", 1),
        ("cas of a missing key", b"cas " + k("zz") + b" 0 0 1 1\r\nx\r\n", b"NOT_FOUND\r\n", "slow", 1),
        ("touch", b"touch " + k("n") + b" 100\r\n", b"TOUCHED\r\n", "slow", 1),
        ("gat", b"gat 100 " + k("n") + b" " + k("zz") + b"\r\n", hit(k("n"), b"<quiet!!") + b"END\r\n",
         "slow", 1),
        ("verbosity", b"verbosity 1\r\n", b"OK\r\n", "slow", 1),
        ("touch with a bad exptime", b"touch " + k("n") + b" soon\r\n",
         b"CLIENT_ERROR invalid exptime argument\r\n", "fast", 1),
        ("version", b"version\r\n",
         lambda r: r.startswith(b"VERSION ") and r.endswith(b"\r\n") and r.count(b"\r\n") == 1,
         "slow", 1),
        ("stats", b"stats\r\n",
         lambda r: r.startswith(b"STAT ") and r.endswith(b"END\r\n") and
         all(l.startswith(b"STAT ") for l in r.split(b"\r\n")[:-2]), "slow", 1),
        ("unknown command", b"frobnicate " + k("a") + b"\r\n", b"ERROR\r\n", "fast", 1),
        ("bad flags", b"set " + k("x") + b" abc 0 1\r\n",
         b"CLIENT_ERROR bad command line format\r\n", "fast", 1),
        ("short data", b"set " + k("x") + b" 0 0 5\r\nabc\r\n", b"CLIENT_ERROR bad data chunk\r\n", "fast", 1),
        ("no CRLF", b"get " + k("a"), b"CLIENT_ERROR line not terminated by \\r\\n\r\n", "fast", 1),
        ("key over 250 bytes (memcached's error)", b"get " + b"k" * 251 + b"\r\n",
         b"CLIENT_ERROR bad command line format\r\n", "fast", 1),
        # over --key-size, not over 250: no item can have it (memcached would
        # hold it): the slow path answers a miss, refuses a write
        ("get of a key over --key-size: a miss", b"get " + b"k" * (key_cap + 1) + b"\r\n",
         b"END\r\n", "slow", 1),
        ("set of one: too large for this store", setreq(b"k" * (key_cap + 1), b"x"),
         b"SERVER_ERROR object too large for cache\r\n", "slow", 1),
        ("delete of one", b"delete " + b"k" * (key_cap + 1) + b"\r\n", b"NOT_FOUND\r\n", "slow", 1),
        ("key of --key-size", setreq(b"k" * key_cap, b"cap"), b"STORED\r\n", "fast", 1),
        ("get key of --key-size", b"get " + b"k" * key_cap + b"\r\n",
         hit(b"k" * key_cap, b"cap") + b"END\r\n", "fast", 1),
        ("set 1000 bytes", setreq(k("big"), v1000), b"STORED\r\n", "fast", 1),
        ("get 1000 bytes (too large for the frame)", b"get " + k("big") + b"\r\n",
         hit(k("big"), v1000) + b"END\r\n", big_path, 1),
        ("set 3000 bytes (IP fragments)", setreq(k("huge"), v3000), b"STORED\r\n", "slow", 1),
        ("get 3000 bytes (multi-datagram reply)", b"get " + k("huge") + b"\r\n",
         hit(k("huge"), v3000) + b"END\r\n", "slow", 3),
        ("delete 3000 bytes", b"delete " + k("huge") + b"\r\n", b"DELETED\r\n", "fast", 1),
    ]


def show(b, n=120):
    s = repr(b)
    return s if len(s) <= n else s[:n] + "...(%d bytes)" % len(b)


def run_suite(args):
    conn = Conn(args.host, args.port)
    failures = 0
    for name, req, want, path, min_dgrams in fixtures(args.tag, args.big_path, args.key_cap):
        try:
            before = read_counters(args.status) if args.status and path else None
            if want is None:
                conn.send(req)
                conn.expect_silence()
                print("PASS %-45s (no reply)" % name)
                continue
            got, ndgrams = conn.ask(req)
            ok = want(got) if callable(want) else got == want
            if not ok:
                raise Fail("reply differs\n   want %s\n    got %s" %
                           (show(want) if not callable(want) else "(predicate)", show(got)))
            if ndgrams < min_dgrams:
                raise Fail("reply in %d datagram(s), expected at least %d" % (ndgrams, min_dgrams))
            how = ""
            if before is not None and path != "any":
                check_path(path, before, args.status)
                how = " [%s path]" % path
            print("PASS %-45s %d bytes in %d datagram(s)%s" % (name, len(got), ndgrams, how))
        except Fail as e:
            failures += 1
            print("FAIL %-45s %s\n   request %s" % (name, e, show(req)))
    print("%s: %d failure(s)" % (args.host, failures))
    return 1 if failures else 0


def run_req(args):
    conn = Conn(args.host, args.port)
    text = args.text.encode().decode("unicode_escape").encode("latin-1")
    try:
        got, n = conn.ask(text)
    except Fail as e:
        print("FAIL:", e, file=sys.stderr)
        return 1
    sys.stdout.buffer.write(got)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["suite", "req"])
    ap.add_argument("text", nargs="?")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=11211)
    ap.add_argument("--status", help="shell command printing `xdpkv status --json`")
    ap.add_argument("--tag", default="raw%d" % os.getpid(), help="key prefix")
    ap.add_argument("--key-cap", type=int, default=64, help="the --key-size xdpkv was attached with")
    ap.add_argument("--big-path", default="slow", choices=["fast", "slow", "any"],
                    help="which path answers a get of 1000 bytes (slow in native mode)")
    args = ap.parse_intermixed_args()
    if args.mode == "req":
        if args.text is None:
            ap.error("req needs TEXT")
        return run_req(args)
    return run_suite(args)


if __name__ == "__main__":
    sys.exit(main())
