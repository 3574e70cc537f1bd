#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pipelined TCP traffic for tests/e2e/tcppipe.sh.

  tcppipeclient.py oracle HOST PORT MCHOST MCPORT
      Fixed batches of several requests in one write (text: gets, multi-key
      gets, sets and deletes with and without noreply, an unknown command
      among gets, 16 and 20 gets; binary: the quiet-get multi-get
      libmemcached and Dalli send, getq misses and a noop; meta: mg, ms, md
      and mn with their return flags, some left to serve), each on a new
      connection (its first bytes: before serve's accept) and then all on
      one connection, to memcached and to xdpkv from the same starting
      state: the reply bytes must be memcached's (binary and meta: but the
      cas, whose numbering is each server's own).
  tcppipeclient.py clients HOST PORT [--rounds N]
      pymemcache set_many (noreply, its default) and get_many, set_many with
      replies, delete_many; python-memcache set_multi, get_multi,
      delete_multi: every value checked.
  tcppipeclient.py stream HOST PORT --rounds N
      Each round one write of about 8 KB of noreply sets (values of 1 to
      150 bytes) and deletes, which TCP cuts at segment ends inside
      requests, then (50 ms later) a multi-key get of the round's keys,
      which serve answers: every value checked (a deleted key missing).
  tcppipeclient.py fanin HOST PORT --clients N --seconds S
      N threads of pymemcache single gets and sets (each its own 50 keys,
      9 gets to a set once they are there, every value checked): through a
      proxy that batches them.
Exits 1 on the first difference, printing both sides."""
import re
import socket
import struct
import sys
import threading
import time

TEXT = [
    b"get a\r\nget b\r\nget zz\r\n",
    b"get a b c zz\r\nget a\r\n",
    b"get a\r\nget b\r\nset x 5 0 3\r\nxyz\r\ndelete c\r\n",
    b"set y 0 0 2\r\nyy\r\nset x 1 0 1 noreply\r\nq\r\ndelete zz\r\ndelete y noreply\r\n",
    b"set n1 0 0 1 noreply\r\na\r\nset n2 0 0 1 noreply\r\nb\r\ndelete n1 noreply\r\n",
    b"get n1 n2 x\r\n",
    b"set x 0 0 1\r\nq\r\nget x\r\n",
    b"get a\r\nbogus\r\nget b\r\n",
    b"get a\r\n" * 16,
    b"get b\r\n" * 20,
    b"get a\r\nget b",  # cut: the rest never comes
]


# meta commands: the forms the driver hook answers (mg v f s c t k O q; ms F
# T MS q O k c; md q O k; mn), mixed with classic gets, and some it leaves
# to serve (a touch, base64 keys, a flag twice, add mode, a read after a write)
META = [
    b"mg a v f s k O1\r\nmg zz v\r\nmg zz k O2 q\r\nmg b s f q\r\nmg c v t\r\nmn\r\n",
    b"ms x 3 F5 T0 O7 k c\r\nabc\r\nms y 2 q MS\r\nyy\r\nmd a q\r\nmd zz q O3 k\r\nmd b k\r\nmn\r\n",
    b"mg x v f c\r\nmg y v f k q s\r\nmg a v f k q s\r\nmn\r\n",
    b"get x y\r\nmg x k v\r\nms n1 1 c F0 T0 MS\r\n1\r\n",
    b"mg n1 v f\r\nmd n1\r\nmd n1 q\r\n",
    b"mg x v T30\r\nmg eA== b v\r\nmg y v v\r\nms y 1 ME\r\nq\r\nms n2 1\r\nz\r\nmg n2 v\r\n",
]


def mask_meta_cas(b):
    """Meta replies with their cas (return flag c) zeroed."""
    return re.sub(rb" c[0-9]+", b" c0", b)


def binreq(op, key=b"", opaque=0, val=None, flags=0):
    ext = b"" if val is None else struct.pack(">II", flags, 0)
    val = val or b""
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(ext), 0, 0, len(ext) + len(key) + len(val),
                       opaque, 0) + ext + key + val


BIN = [
    binreq(0x0D, b"a", 1) + binreq(0x0D, b"zz", 2) + binreq(0x0C, b"b", 3) + binreq(0x00, b"zz", 4) +
    binreq(0x0A, b"", 5),
    binreq(0x09, b"zz", 6) + binreq(0x09, b"qq", 7) + binreq(0x0D, b"x", 8) + binreq(0x0A, b"", 9),
    # Dalli's set_multi: setq ..., noop
    binreq(0x11, b"x", 10, b"xx", 3) + binreq(0x11, b"y", 11, b"yyy") + binreq(0x0A, b"", 12),
    binreq(0x0C, b"a", 13) + binreq(0x01, b"x", 14, b"v", 9) + binreq(0x04, b"y", 15) +
    binreq(0x14, b"zz", 16) + binreq(0x14, b"x", 17) + binreq(0x0A, b"", 18),
    binreq(0x0D, b"x", 19) + binreq(0x0D, b"y", 20) + binreq(0x0A, b"", 21),
]


def conn(host, port):
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def drain(s, quiet=0.5, least=0, wait=10.0):
    """Everything the server sends until it is quiet for `quiet` seconds,
    waiting up to `wait` seconds for `least` bytes first (a loaded machine
    can be slower than `quiet`)."""
    out = b""
    end = time.time() + wait
    while True:
        s.settimeout(quiet if len(out) >= least else max(0.05, end - time.time()))
        try:
            d = s.recv(65536)
        except socket.timeout:
            if len(out) >= least or time.time() >= end:
                return out
            continue
        if not d:
            return out
        out += d


def mask_cas(b):
    """Binary responses with their cas zeroed."""
    out, i = bytearray(b), 0
    while i + 24 <= len(out):
        body = struct.unpack(">I", bytes(out[i + 8:i + 12]))[0]
        out[i + 16:i + 24] = bytes(8)
        i += 24 + body
    return bytes(out)


def preload(host, port):
    s = conn(host, port)
    s.sendall(b"".join(b"delete %s\r\n" % k for k in (b"x", b"y", b"zz", b"n1", b"n2", b"qq")))
    drain(s, 0.1, 6 * len(b"DELETED\r\n"))
    for k, f, v in ((b"a", 0, b"hello"), (b"b", 7, b"bee"), (b"c", 42, b"")):
        s.sendall(b"set %s %d 0 %d\r\n%s\r\n" % (k, f, len(v), v))
        drain(s, 0.05, len(b"STORED\r\n"))
    s.close()


def run_batches(host, port, batches, fresh, want=None):
    """Each batch's reply bytes; with want (the oracle's), each read until it
    has as many bytes, then until quiet."""
    out = []
    s = None if fresh else conn(host, port)
    for i, b in enumerate(batches):
        c = conn(host, port) if fresh else s
        c.sendall(b)
        # memcached's side (no want): up to 3 s for its first byte (a loaded
        # suite delayed it past the quiet time once), then until quiet; a
        # batch with no reply at all costs those 3 s
        out.append(drain(c, 0.2, len(want[i])) if want else drain(c, 0.5, 1, 3.0))
        if fresh:
            c.close()
    if s:
        s.close()
    return out


def oracle(host, port, mchost, mcport):
    bad = 0
    for fresh in (True, False):
        for name, batches, fix in (("text", TEXT, lambda x: x), ("binary", BIN, mask_cas),
                                   ("meta", META, mask_meta_cas)):
            preload(mchost, mcport)
            want = run_batches(mchost, mcport, batches, fresh)
            preload(host, port)
            got = run_batches(host, port, batches, fresh, want)
            for b, w, g in zip(batches, want, got):
                if fix(w) != fix(g):
                    bad += 1
                    print("%s batch %r (%s connection):\n  memcached %r\n  xdpkv     %r"
                          % (name, b[:80], "a new" if fresh else "one", w[:300], g[:300]))
    print("oracle: %d batches differ" % bad)
    return bad == 0


def clients(host, port, rounds):
    from pymemcache.client.base import Client
    import memcache
    ok = True
    pc = Client((host, port), timeout=5)
    mc = memcache.Client(["%s:%d" % (host, port)])
    for r in range(rounds):
        vals = {"p%d-%d" % (r, i): ("v%d" % (r * 100 + i)).encode() * (1 + i % 5) for i in range(10)}
        pc.set_many(vals)  # noreply: one segment of noreply sets
        got = pc.get_many(list(vals))
        ok &= got == vals
        failed = pc.set_many({k: v + b"!" for k, v in vals.items()}, noreply=False)
        ok &= failed == [] and pc.get_many(list(vals)) == {k: v + b"!" for k, v in vals.items()}
        pc.delete_many(list(vals)[:5], noreply=False)
        ok &= pc.get_many(list(vals)) == {k: v + b"!" for k, v in list(vals.items())[5:]}
        mvals = {"m%d-%d" % (r, i): "w%d" % i for i in range(8)}
        ok &= mc.set_multi(mvals) == []
        ok &= mc.get_multi(list(mvals)) == mvals
        mc.delete_multi(list(mvals)[:4])
        ok &= mc.get_multi(list(mvals)) == dict(list(mvals.items())[4:])
        if not ok:
            print("clients: round %d: a wrong value" % r)
            return False
    print("clients: %d rounds, every value right" % rounds)
    return True


def stream(host, port, rounds):
    s = conn(host, port)
    for r in range(rounds):
        want, buf, i = {}, b"", 0
        while len(buf) < 8000:
            k = "st%d-%d" % (r, i % 40)
            if i % 7 == 6:
                buf += b"delete %s noreply\r\n" % k.encode()
                want[k] = None
            else:
                v = (b"%d:%d:" % (r, i) + b"v" * 150)[:1 + (i * 37) % 150]
                buf += b"set %s %d 0 %d noreply\r\n%s\r\n" % (k.encode(), i % 5, len(v), v)
                want[k] = (i % 5, v)
            i += 1
        # after serve's reply to the last round's get has been published
        # (tcp_paid), and the get in a segment of its own
        time.sleep(0.05)
        s.sendall(buf)
        time.sleep(0.05)
        s.sendall(b"get " + " ".join(sorted(want)).encode() + b"\r\n")
        got, out = {}, b""
        while not out.endswith(b"END\r\n"):
            s.settimeout(10)
            d = s.recv(65536)
            if not d:
                break
            out += d
        for m in re.finditer(rb"VALUE (\S+) (\d+) (\d+)\r\n", out):
            n = int(m.group(3))
            got[m.group(1).decode()] = (int(m.group(2)), out[m.end():m.end() + n])
        if got != {k: v for k, v in want.items() if v is not None}:
            print("stream: round %d: the values differ (%d sent, %d got)" % (r, len(want), len(got)))
            return False
    print("stream: %d rounds of about 8 KB of noreply writes, every value right" % rounds)
    return True


def fanin(host, port, nclients, seconds):
    from pymemcache.client.base import Client
    end = time.time() + seconds
    res = {"ops": 0, "wrong": 0}
    lock = threading.Lock()

    def one(i):
        c = Client((host, port), timeout=10)
        ops = wrong = 0
        n = 0
        vals = {}
        while time.time() < end:
            k = "f%d-%d" % (i, n % 50)
            if k not in vals or n % 10 == 0:  # 9 gets to a set, once the keys are there
                vals[k] = ("%d:%d" % (i, n)).encode()
                c.set(k, vals[k], noreply=False)
            else:
                wrong += c.get(k) != vals[k]
            ops += 1
            n += 1
        with lock:
            res["ops"] += ops
            res["wrong"] += wrong

    ts = [threading.Thread(target=one, args=(i,)) for i in range(nclients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("fanin: %d clients, %d requests, %d wrong" % (nclients, res["ops"], res["wrong"]))
    return res["wrong"] == 0 and res["ops"] > 0


def main():
    a = sys.argv[1:]
    if len(a) >= 5 and a[0] == "oracle":
        return oracle(a[1], int(a[2]), a[3], int(a[4]))
    if len(a) >= 3 and a[0] == "clients":
        return clients(a[1], int(a[2]), int(a[4]) if len(a) > 4 and a[3] == "--rounds" else 5)
    if len(a) == 5 and a[0] == "stream" and a[3] == "--rounds":
        return stream(a[1], int(a[2]), int(a[4]))
    if len(a) == 7 and a[0] == "fanin":
        return fanin(a[1], int(a[2]), int(a[4]), float(a[6]))
    print(__doc__)
    sys.exit(2)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
