#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Raw sockets against a server that requires SASL (serve --sasl-pwdb,
memcached -S): every path refuses an unauthenticated client, an
authenticated one is served.

  binraw.py sasl HOST PORT USER PASSWORD   a TCP binary get before auth (0x20,
      closed), a TCP text get (closed, no reply: the kernel's TCP path would
      have answered it), UDP text and binary gets (no reply: XDP would have
      answered the text one), a wrong password (0x20); then PLAIN auth and a
      set/get on that connection
  binraw.py open HOST PORT                 no SASL: a UDP text get is answered
  binraw.py udp HOST PORT                  binary over UDP: a set, then a getk
      and a get miss in one datagram, both answered with the request id
      echoed (memcached -U sends each response in a datagram of its own)
  binraw.py udpget HOST PORT               get, getk, getq, getkq alone in a
      datagram each (what XDP answers): hits of values set in text, misses,
      an expired item, an empty value; prints every reply datagram whole, in
      hex, its cas replaced by CC.. when not 0 (memcached's and xdpkv's cas
      values differ by design), "empty" for a datagram of the frame header
      alone, "-" for none: two servers agree when their outputs do

Prints PASS/FAIL lines; exit 1 on a FAIL."""
import socket
import struct
import sys

fails = 0


def check(what, ok):
    global fails
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        fails += 1


def frame(op, key=b"", ext=b"", val=b"", opaque=0, cas=0):
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(ext), 0, 0,
                       len(ext) + len(key) + len(val), opaque, cas) + ext + key + val


def read_res(s):
    """One response (status, body) or None when the connection ends first."""
    h = b""
    while len(h) < 24:
        b = s.recv(24 - len(h))
        if not b:
            return None
        h += b
    _, op, kl, el, _, status, bl, opq, cas = struct.unpack(">BBHBBHIIQ", h)
    body = b""
    while len(body) < bl:
        b = s.recv(bl - len(body))
        if not b:
            return None
        body += b
    return status, body[el + kl:]


def closed_after(s, timeout=2.0):
    """Whatever comes until the peer closes: (bytes, closed)."""
    s.settimeout(timeout)
    got = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                return got, True
            got += b
    except socket.timeout:
        return got, False
    except ConnectionResetError:
        return got, True


def tcp(host, port):
    s = socket.create_connection((host, port), timeout=3)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def udp_ask(host, port, payload, timeout=1.0):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(timeout)
    u.sendto(struct.pack(">HHHH", 7, 0, 1, 0) + payload, (host, port))
    try:
        return u.recvfrom(65536)[0]
    except OSError:  # a timeout, or no UDP at all (memcached -S)
        return None
    finally:
        u.close()


def sasl(host, port, user, password):
    s = tcp(host, port)
    s.sendall(frame(0x00, b"k"))
    r = read_res(s)
    rest, closed = closed_after(s)
    check("tcp binary get before auth: 0x20 (got %r), then closed" % (r,),
          r is not None and r[0] == 0x20 and closed and not rest)
    s = tcp(host, port)
    s.sendall(b"get k\r\n" + b" " * 17)  # 24 bytes: memcached reads a whole header first
    got, closed = closed_after(s)
    check("tcp text get: closed without a reply (got %r)" % got, closed and got == b"")
    s = tcp(host, port)
    s.sendall(b"set k 0 0 1\r\nx\r\n" + b" " * 8)
    got, closed = closed_after(s)
    check("tcp text set: closed without a reply (got %r)" % got, closed and got == b"")
    check("udp text get: no reply", udp_ask(host, port, b"get k\r\n") is None)
    check("udp binary get: no reply", udp_ask(host, port, frame(0x00, b"k")) is None)
    s = tcp(host, port)
    s.sendall(frame(0x20))
    r = read_res(s)
    check("sasl list mechs: PLAIN (got %r)" % (r,), r is not None and r[0] == 0 and b"PLAIN" in r[1])
    s.sendall(frame(0x21, b"PLAIN", val=b"\0" + user.encode() + b"\0" + password.encode() + b"x"))
    r = read_res(s)
    check("a wrong password: 0x20 (got %r)" % (r,), r is not None and r[0] == 0x20)
    s.sendall(frame(0x21, b"PLAIN", val=b"\0" + user.encode() + b"\0" + password.encode()))
    r = read_res(s)
    check("PLAIN auth: ok (got %r)" % (r,), r is not None and r[0] == 0)
    s.sendall(frame(0x01, b"rawk", ext=struct.pack(">II", 5, 0), val=b"rawv") + frame(0x00, b"rawk"))
    r1, r2 = read_res(s), read_res(s)
    check("authenticated: set and get served (got %r %r)" % (r1, r2),
          r1 is not None and r1[0] == 0 and r2 is not None and r2[0] == 0 and r2[1] == b"rawv")
    s.close()


def open_(host, port):
    r = udp_ask(host, port, b"get nokey\r\n")
    check("no SASL: udp text get answered (got %r)" % r, r is not None and r[8:] == b"END\r\n")


def udp(host, port):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(2)
    key = b"udpbin-%d" % (id(u) & 0xFFFFFF)

    def ask(rid, payload, want):
        """want responses, from one datagram or several (memcached sends
        each response in a datagram of its own, each numbered 0 of 1)"""
        u.sendto(struct.pack(">HHHH", rid, 0, 1, 0) + payload, (host, port))
        out, hdr = [], None
        while len(out) < want:
            d = u.recvfrom(65536)[0]
            hdr = hdr or struct.unpack(">HHHH", d[:8])
            body = d[8:]
            if struct.unpack(">HHHH", d[:8])[0] != rid or body[:1] != b"\x81":
                return struct.unpack(">HHHH", d[:8]), out + [body[:40]]
            while len(body) >= 24:
                _, op, kl, el, _, st, bl, opq, cas = struct.unpack(">BBHBBHIIQ", body[:24])
                out.append((op, st, body[24 + el:24 + el + kl], body[24 + el + kl:24 + bl], opq))
                body = body[24 + bl:]
        return hdr, out

    try:
        hdr, rs = ask(41, frame(0x01, key, struct.pack(">II", 3, 0), b"over-udp", opaque=1), 1)
        check("udp binary set: stored, request id echoed (got %r %r)" % (hdr, rs),
              hdr[0] == 41 and hdr[2] == 1 and len(rs) == 1 and rs[0][1] == 0 and rs[0][4] == 1)
        hdr, rs = ask(42, frame(0x0C, key, opaque=2) + frame(0x00, key + b"-none", opaque=3), 2)
        check("udp binary getk + get miss in one datagram (got %r %r)" % (hdr, rs),
              hdr[0] == 42 and len(rs) == 2 and rs[0][:4] == (0x0C, 0, key, b"over-udp") and
              rs[1][:2] == (0x00, 1) and rs[1][4] == 3)
    except socket.timeout:
        check("udp binary: answered", False)


def udpget(host, port):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    key = {"hit": b"bq-hit", "none": b"bq-none", "exp": b"bq-exp", "empty": b"bq-empty"}
    rid = [100]

    def ask(what, payload, wait=1.0):
        rid[0] += 1
        u.sendto(struct.pack(">HHHH", rid[0], 0, 1, 0) + payload, (host, port))
        u.settimeout(wait)
        try:
            while True:
                d = u.recvfrom(65536)[0]
                if struct.unpack(">H", d[:2])[0] == rid[0]:
                    break
        except socket.timeout:
            print("%s -" % what, flush=True)
            return
        if len(d) == 8:  # the frame header alone
            print("%s empty" % what, flush=True)
            return
        if len(d) >= 32 and d[8] == 0x81 and d[24:32] != bytes(8):
            d = d[:24] + b"\xcc" * 8 + d[32:]
        print("%s %s" % (what, d.hex()), flush=True)

    ask("set", b"set bq-hit 3735928559 0 5\r\nhello\r\n")
    ask("set-exp", b"set bq-exp 0 -1 1\r\nx\r\n")
    ask("set-empty", b"set bq-empty 7 0 0\r\n\r\n")
    for name, op in (("get", 0x00), ("getk", 0x0C), ("getq", 0x09), ("getkq", 0x0D)):
        for k in ("hit", "none", "exp", "empty"):
            quiet = op in (0x09, 0x0D) and k in ("none", "exp")
            ask("%s-%s" % (name, k), frame(op, key[k], opaque=0x0A0B0C00 | op), 0.5 if quiet else 1.0)


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "sasl":
        sasl(host, port, sys.argv[4], sys.argv[5])
    elif mode == "open":
        open_(host, port)
    elif mode == "udp":
        udp(host, port)
    elif mode == "udpget":
        udpget(host, port)
    else:
        sys.exit("usage: binraw.py sasl|open|udp|udpget HOST PORT ...")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
