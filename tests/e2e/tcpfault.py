#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Verified mixed traffic over many TCP connections, for the fault test
(tests/e2e/tcpfault.sh, bench/tcpfault.sh): each connection owns its keys,
keeps what the server must hold for them, and checks every reply byte for
byte: set (values of 1..400 bytes, and now and then 3,000: more than one
segment, for serve), get of one key and of two, delete.  A reply that
differs is wrong; one that takes longer than --stall seconds is a stall; a
reset or an early close is counted too.  --clamped N more connections
advertise an MSS of 1260 (a client behind a tunnel: TCP_MAXSEG) and read
values around it; --slow N more are slow readers (a small receive buffer,
a window near closed): pipelined gets of 3,000-byte values left unread for
a while, then a delete, whose reply must say DELETED (run once); --pipelined
N more send batches of 2-8 requests in one write (gets, sets and deletes in
any order, some writes noreply: what a proxy or a client's set_many sends)
and check the replies in order.

  tcpfault.py HOST PORT --conns N --duration S [--clamped N] [--slow N] [--pipelined N]
              [--stall 20]

Prints one JSON line: ops, wrong, stalls, resets, the slowest reply;
exits 1 when any of the last four is not 0 (the slowest excepted)."""
import argparse
import json
import random
import socket
import sys
import threading
import time


STALLED = []


class Conn:
    def __init__(self, host, port, idx, stall, kind="mixed"):
        self.s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.s.settimeout(stall)
        if kind == "clamped":
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1260)
        if kind == "slow":
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        self.s.connect((host, port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.kind = kind
        self.buf = b""
        self.idx = idx
        self.state = {}
        self.rng = random.Random(idx * 7919 + 1)
        self.last = None

    def fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        ln, _, self.buf = self.buf.partition(b"\r\n")
        return ln + b"\r\n"

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def get_reply(self):
        """VALUE blocks up to END, as bytes."""
        out = b""
        while True:
            ln = self.line()
            out += ln
            if ln == b"END\r\n" or not ln.startswith(b"VALUE "):
                return out
            n = int(ln.split()[3])
            out += self.exact(n + 2)

    def value(self, k):
        if self.kind == "clamped":  # replies across the clamped MSS (1,248 bytes of data)
            n = self.rng.randrange(1180, 1260)
        else:
            n = self.rng.choice((1, 5, 16, 128, 300, 400)) if self.rng.random() > 0.02 else 3000
        return bytes(self.rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))

    def want_get(self, keys):
        out = b""
        for k in keys:
            if k in self.state:
                v = self.state[k]
                out += b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(v), v)
        return out + b"END\r\n"

    def slow_round(self):
        """A slow reader's round: its key set, gets of it pipelined and left
        unread (the window closes), a delete, a get; True when every reply
        was right and the delete ran once."""
        k = b"s%d" % self.idx
        v = bytes(self.rng.choice(b"abcdefgh") for _ in range(3000))
        self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
        ok = self.line() == b"STORED\r\n"
        self.last = (k, "slow")
        for _ in range(6):
            self.s.sendall(b"get %s\r\n" % k)
        self.s.sendall(b"delete %s\r\n" % k)
        self.s.sendall(b"get %s\r\n" % k)
        time.sleep(0.2)
        want = b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k, len(v), v)
        for _ in range(6):
            ok = self.get_reply() == want and ok
        d = self.line()
        if d != b"DELETED\r\n":
            sys.stderr.write("conn %d (slow reader): delete answered %r\n" % (self.idx, d))
        return ok and d == b"DELETED\r\n" and self.get_reply() == b"END\r\n"

    def pipe_round(self):
        """A batch of 2-8 requests in one write, its replies read and
        checked in order against the state the batch leaves step by step."""
        out, want = b"", b""
        for _ in range(self.rng.randrange(2, 9)):
            k = b"f%d-%d" % (self.idx, self.rng.randrange(40))
            r = self.rng.random()
            nr = self.rng.random() < 0.3
            if r < 0.3:
                v = self.value(k)
                out += b"set %s 0 0 %d%s\r\n%s\r\n" % (k, len(v), b" noreply" if nr else b"", v)
                want += b"" if nr else b"STORED\r\n"
                self.state[k] = v
            elif r < 0.4:
                out += b"delete %s%s\r\n" % (k, b" noreply" if nr else b"")
                want += b"" if nr else (b"DELETED\r\n" if k in self.state else b"NOT_FOUND\r\n")
                self.state.pop(k, None)
            else:
                out += b"get %s\r\n" % k
                want += self.want_get([k])
        # a last get, so that the batch always has a reply to wait for
        k = b"f%d-%d" % (self.idx, self.rng.randrange(40))
        out += b"get %s\r\n" % k
        want += self.want_get([k])
        self.last = (k, "pipelined")
        self.s.sendall(out)
        got = self.exact(len(want))
        if got != want:
            sys.stderr.write("conn %d (pipelined): batch %r\n  got  %r\n  want %r\n"
                             % (self.idx, out[:300], got[:300], want[:300]))
        return got == want

    def one(self):
        """One request and its check: True when the reply was right."""
        if self.kind == "slow":
            return self.slow_round()
        if self.kind == "pipelined":
            return self.pipe_round()
        k = b"f%d-%d" % (self.idx, self.rng.randrange(40))
        r = self.rng.random()
        self.last = (k, r)
        if r < 0.3:
            v = self.value(k)
            self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
            got, want = self.line(), b"STORED\r\n"
            self.state[k] = v
        elif r < 0.4:
            self.s.sendall(b"delete %s\r\n" % k)
            got = self.line()
            want = b"DELETED\r\n" if k in self.state else b"NOT_FOUND\r\n"
            self.state.pop(k, None)
        elif r < 0.5:
            k2 = b"f%d-%d" % (self.idx, self.rng.randrange(40))
            self.s.sendall(b"get %s %s\r\n" % (k, k2))
            got, want = self.get_reply(), self.want_get([k, k2])
        else:
            self.s.sendall(b"get %s\r\n" % k)
            got, want = self.get_reply(), self.want_get([k])
        if got != want:
            sys.stderr.write("conn %d: %r\n  got  %r\n  want %r\n" % (self.idx, k, got[:200], want[:200]))
        return got == want


def worker(a, idx, end, res, lock, kind="mixed"):
    ops = wrong = stalls = resets = 0
    slowest = 0.0
    try:
        c = Conn(a.host, a.port, idx, a.stall, kind)
        # nothing of before: every key of this connection deleted first
        for i in range(40):
            c.s.sendall(b"delete f%d-%d\r\n" % (idx, i))
            c.line()
        while time.time() < end:
            t0 = time.time()
            ok = c.one()
            slowest = max(slowest, time.time() - t0)
            ops += 1
            wrong += not ok
            if not ok:
                break
        c.s.close()
    except socket.timeout:
        stalls += 1
        sys.stderr.write("conn %d (port %d): no reply for %.0f s; last request %r, %d bytes buffered\n"
                         % (idx, c.s.getsockname()[1], a.stall, c.last, len(c.buf)))
        STALLED.append(c.s)  # left open: the caller looks at its socket
    except (ConnectionError, OSError) as e:
        sys.stderr.write("conn %d: %s\n" % (idx, e))
        resets += 1
    with lock:
        res["ops"] += ops
        res["wrong"] += wrong
        res["stalls"] += stalls
        res["resets"] += resets
        res["slowest_s"] = max(res["slowest_s"], round(slowest, 3))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--conns", type=int, default=32)
    p.add_argument("--duration", type=float, default=20)
    p.add_argument("--clamped", type=int, default=0, help="connections with an MSS of 1260")
    p.add_argument("--slow", type=int, default=0, help="slow-reader connections")
    p.add_argument("--pipelined", type=int, default=0, help="connections sending batches")
    p.add_argument("--stall", type=float, default=20, help="seconds a reply may take")
    a = p.parse_args()
    res = {"ops": 0, "wrong": 0, "stalls": 0, "resets": 0, "slowest_s": 0.0}
    lock = threading.Lock()
    end = time.time() + a.duration
    kinds = ["mixed"] * a.conns + ["clamped"] * a.clamped + ["slow"] * a.slow + ["pipelined"] * a.pipelined
    ts = [threading.Thread(target=worker, args=(a, i, end, res, lock, k)) for i, k in enumerate(kinds)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    res.update({"conns": a.conns, "clamped": a.clamped, "slow": a.slow, "pipelined": a.pipelined,
                "duration_s": a.duration})
    print(json.dumps(res), flush=True)
    sys.exit(1 if res["wrong"] or res["stalls"] or res["resets"] or not res["ops"] else 0)


if __name__ == "__main__":
    main()
