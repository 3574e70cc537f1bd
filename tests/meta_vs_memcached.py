#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The meta fixture table against the real memcached.

slowpath_unit checks xdpkv's slow path against the table of requests and
replies in tests/slowpath_meta.c (meta_fixtures).  This test checks the
table itself: it starts the memcached Debian ships (1.6.18) on loopback,
sends it every fixture in order on one connection and compares its reply
with the table's.  A fixture may differ only if it is listed in DIFFERS
below, with the reason (each one is said in docs/protocol.md); a listed
one that stops differing fails too, so the list stays true.

  tests/meta_vs_memcached.py [path/to/slowpath_meta.c]

{c:KEY} in a fixture is KEY's cas as the server under test reports it
(mg KEY c), as slowpath_unit expands it from the store.  Seconds left (t<n>,
exp=<n>) are compared within one second: memcached's clock ticks in whole
seconds.
"""
import ast
import os
import re
import shutil
import socket
import subprocess
import sys
import time

# request (after {c:} expansion is not needed: these have none) -> why
DIFFERS = {
    b"mg\r\n": "no key: xdpkv answers the format error, memcached ERROR",
    b"mg a\tb v\r\n": "the key rule: no control bytes (memcached takes a tab)",
    b"ms viv2 1 MA N40\r\nx\r\n": "ms N in append mode: 1.6.18 does not vivify (later releases do, as xdpkv)",
    b"mg viv2 v t\r\n": "follows from ms MA N40",
    b"ma viv2\r\n": "follows from ms MA N40",
    b"mg Zm9v b v k f\r\n": "k of a b key: xdpkv answers it encoded, then b",
    b"me Zm9v b\r\n": "me: cls fixed, size the value's bytes",
    b"me dbg\r\n": "me: cls fixed, size the value's bytes",
    b"me he\r\n": "me: cls fixed, size the value's bytes",
    b"mg Z=9v b\r\n": "base64 decoding is strict (padding only at the end)",
    b"mg YQk= b v\r\n": "a decoded key must pass the key rule too",
    b"ms foo 2\r\nabc\r\n": "a bad data chunk: memcached reads the rest of the block as a command (ERROR)",
}
# not sent: memcached (1 MiB items) would wait for the whole block
SKIP = {b"ms big9 99999\r\nab\r\n"}


def fixtures(path):
    src = open(path).read()
    blk = src[src.index("static const struct meta_fixture meta_fixtures[] = {"):]
    blk = blk[:blk.index("\n};")]
    lit = r'"(?:[^"\\]|\\.)*"'
    for req, want in re.findall(r'\{\s*((?:%s\s*)+),\s*((?:%s\s*)+)\}' % (lit, lit), blk):
        yield tuple(b"".join(ast.literal_eval("b" + m) for m in re.findall(lit, x)) for x in (req, want))


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def ask(self, req):
        """req, then mn: the reply up to (without) the MN that mn earned."""
        want = req.count(b"mn\r\n") + 1
        self.s.sendall(req + b"mn\r\n")
        out = b""
        while out.count(b"MN\r\n") < want or not out.endswith(b"MN\r\n"):
            chunk = self.s.recv(65536)
            if not chunk:
                raise RuntimeError("memcached closed the connection")
            out += chunk
        return out[:-4]

    def cas(self, key):
        m = re.search(rb" c(\d+)", self.ask(b"mg " + key + b" c\r\n"))
        return m.group(1) if m else b"0"


def expand(conn, text):
    return re.sub(rb"\{c:(\w+)\}", lambda m: conn.cas(m.group(1)), text)


def same(got, want):
    """equal, seconds-left numbers within one"""
    num = rb"(?<= t)-?\d+|(?<=exp=)-?\d+"
    if re.sub(num, b"#", got) != re.sub(num, b"#", want):
        return False
    return all(abs(int(a) - int(b)) <= 1 for a, b in zip(re.findall(num, got), re.findall(num, want)))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "slowpath_meta.c")
    mc = shutil.which("memcached") or "/usr/bin/memcached"
    if not os.access(mc, os.X_OK):
        print("FAIL memcached is not installed (tests/lib/install-deps.sh installs it)")
        return 1
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([mc, "-u", "nobody", "-U", "0", "-l", "127.0.0.1", "-p", str(port)])
    try:
        for _ in range(100):
            try:
                conn = Conn(port)
                break
            except OSError:
                time.sleep(0.05)
        else:
            print("FAIL memcached did not listen")
            return 1
        ver = conn.ask(b"version\r\n").decode().strip()
        print("against", ver)
        fails = n = 0
        listed_same = []
        for req, want in fixtures(path):
            if req in SKIP:
                continue
            n += 1
            got = conn.ask(expand(conn, req))
            ok = same(got, expand(conn, want))
            if req in DIFFERS:
                if ok:
                    listed_same.append(req)
                continue
            if not ok:
                fails += 1
                print("FAIL %r\n    table     %r\n    memcached %r" % (req, want, got))
        for req in listed_same:
            fails += 1
            print("FAIL listed as differing, but memcached agrees now: %r" % req)
        print("%s %d fixtures sent, %d agree with memcached, %d listed as differing (docs/protocol.md)"
              % ("FAIL" if fails else "PASS", n, n - len(DIFFERS) - fails + len(listed_same), len(DIFFERS)))
        return 1 if fails else 0
    finally:
        proc.terminate()
        proc.wait(timeout=5)


if __name__ == "__main__":
    sys.exit(main())
