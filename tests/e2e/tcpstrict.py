#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Segments the kernel's TCP would not take, and paths real clients take,
sent on a live connection to xdpkv's TCP port (tests/e2e/tcpstrict.sh).  A
raw AF_PACKET socket on the client's veth end learns the connection's
numbers from the frames it carries and sends the crafted ones.

  tcpstrict.py spoof HOST PORT DEV          RST (far, in the window) and SYN: the connection lives on
  tcpstrict.py flood HOST PORT DEV N        N handshake-less segments (no flow may come of them)
  tcpstrict.py inject HOST PORT DEV KIND KEY   "set KEY" as the next segment: KIND good|badsum|badip|paws|window
  tcpstrict.py keepalive HOST PORT DEV      1- and 0-byte probes at SND.NXT-1: each acknowledged
  tcpstrict.py mtu HOST PORT N              gets whose replies span the MSS, after a command serve answers
  tcpstrict.py idle HOST PORT SECONDS       a get every 0.3 s for SECONDS: the connection stays open
  tcpstrict.py noreply HOST PORT N          N noreply sets and deletes, raw and pymemcache's defaults: then read back
  tcpstrict.py hold HOST PORT N SECONDS     N connections, two gets each, then silent (never closed) for SECONDS

Prints one line per result; exits 0 when all held, 1 otherwise."""
import os
import random
import select
import socket
import struct
import sys
import time

from abuseclient import ones_sum

ETH_P_IP = 0x0800
ETH_P_ALL = 0x0003  # outgoing frames reach only packet sockets of every protocol


def csum(b):
    return 0xFFFF - ones_sum(b)


class Frame:
    """A TCP/IPv4 frame: its fields parsed."""

    def __init__(self, f):
        self.raw = f
        self.dst, self.src = f[0:6], f[6:12]
        ip = f[14:]
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack("!H", ip[2:4])[0]
        self.saddr, self.daddr = ip[12:16], ip[16:20]
        t = ip[ihl:tot]
        self.sport, self.dport, self.seq, self.ack = struct.unpack("!HHII", t[:12])
        doff = (t[12] >> 4) * 4
        self.flags = t[13]
        self.win = struct.unpack("!H", t[14:16])[0]
        self.payload = t[doff:]
        self.tsval = self.tsecr = None
        o, i = t[20:doff], 0
        while i < len(o):
            k = o[i]
            if k == 0:
                break
            if k == 1:
                i += 1
                continue
            if i + 1 >= len(o):
                break
            ln = o[i + 1]
            if k == 8 and ln == 10:
                self.tsval, self.tsecr = struct.unpack("!II", o[i + 2:i + 10])
            i += max(ln, 2)


def build(eth_dst, eth_src, saddr, daddr, sport, dport, seq, ack, flags, payload=b"", win=502,
          ts=None, bad_sum=False, bad_ip=False):
    opt = b""
    if ts is not None:
        opt = b"\x01\x01\x08\x0a" + struct.pack("!II", *ts)
    doff = 20 + len(opt)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (doff // 4) << 4,
                      flags, win, 0, 0) + opt + payload
    ph = saddr + daddr + struct.pack("!BBH", 0, 6, len(tcp))
    c = csum(ph + tcp) ^ (0x0101 if bad_sum else 0)
    tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.randrange(65536), 0x4000, 64, 6, 0,
                     saddr, daddr)
    ic = csum(ip) ^ (0x0101 if bad_ip else 0)
    ip = ip[:10] + struct.pack("!H", ic) + ip[12:]
    return eth_dst + eth_src + struct.pack("!H", ETH_P_IP) + ip + tcp


class Wire:
    """The client end's frames: sniffed and sent."""

    def __init__(self, dev):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.s.bind((dev, ETH_P_ALL))
        self.s.setblocking(False)

    def frames(self, wait=0.0):
        out, end = [], time.time() + wait
        while True:
            r, _, _ = select.select([self.s], [], [], max(0.0, end - time.time()))
            if not r:
                return out
            f = self.s.recv(65536)
            if len(f) >= 54 and f[12:14] == b"\x08\x00" and f[23] == 6:
                out.append(Frame(f))

    def send(self, f):
        self.s.send(f)


class Conn:
    """A client connection whose numbers the wire shows."""

    def __init__(self, host, port, dev):
        self.w = Wire(dev)
        self.port = port
        self.c = socket.create_connection((host, port), timeout=3)
        self.c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.lport = self.c.getsockname()[1]
        self.last_out = self.last_in = None

    def request(self, req, want=b"\r\n"):
        self.c.sendall(req)
        got = b""
        while not got.endswith(want):
            d = self.c.recv(65536)
            if not d:
                break
            got += d
        self.learn(0.1)
        return got

    def learn(self, wait):
        for f in self.w.frames(wait):
            if f.sport == self.lport and f.dport == self.port:
                self.last_out = f
            elif f.dport == self.lport and f.sport == self.port:
                self.last_in = f

    def snd_nxt(self):
        f = self.last_out
        return f.seq + len(f.payload) + (1 if f.flags & 1 else 0)

    def rcv_nxt(self):
        f = self.last_in
        return f.seq + len(f.payload)

    def segment(self, seq, ack, flags, payload=b"", **kw):
        f = self.last_out
        ts = (f.tsval, f.tsecr) if f.tsval is not None else None
        if "ts" in kw:
            ts = kw.pop("ts")
        return build(f.dst, f.src, f.saddr, f.daddr, self.lport, self.port, seq, ack, flags, payload,
                     ts=ts, **kw)

    def abort(self):
        self.c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.c.close()


fails = 0


def report(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    fails += not ok


def get_ok(c, key=b"strict-nothing"):
    try:
        return c.request(b"get " + key + b"\r\n", b"END\r\n").endswith(b"END\r\n")
    except OSError:
        return False


def spoof(host, port, dev):
    c = Conn(host, port, dev)
    for _ in range(3):
        get_ok(c)
    nxt, ack = c.snd_nxt(), c.rcv_nxt()
    cases = [("a RST with a sequence number far from the window", nxt + 0x40000000, 0x14),
             ("a RST in the window, not at its start", nxt + 1000, 0x14),
             ("a SYN with any sequence number", random.randrange(1 << 32), 0x02)]
    for what, seq, fl in cases:
        c.w.send(c.segment(seq, ack, fl))
        time.sleep(0.2)
        report(get_ok(c) and get_ok(c), "after %s: gets on the connection answered" % what)
    c.c.close()


def flood(host, port, dev, n):
    c = Conn(host, port, dev)
    get_ok(c)
    f = c.last_out
    other = f.daddr[:3] + bytes([(f.daddr[3] + 98) % 256])
    sent = 0
    for i in range(n):
        sp = 20000 + random.randrange(30000)
        fl = (0x08, 0x18)[i % 2]
        dst = other if i % 5 == 0 else f.daddr
        c.w.send(build(f.dst, f.src, f.saddr, dst, sp, port, random.randrange(1 << 32),
                       random.randrange(1 << 32), fl, b"get x\r\n"))
        sent += 1
    time.sleep(0.3)
    report(get_ok(c), "%d handshake-less segments sent; the live connection still answered" % sent)
    c.c.close()


def inject(host, port, dev, kind, key):
    c = Conn(host, port, dev)
    get_ok(c)
    get_ok(c)
    f = c.last_out
    seq, ack = c.snd_nxt(), c.rcv_nxt()
    kw = {}
    if kind == "badsum":
        kw["bad_sum"] = True
    elif kind == "badip":
        kw["bad_ip"] = True
    elif kind == "paws":
        kw["ts"] = ((f.tsval - 100000) & 0xFFFFFFFF, f.tsecr)
    elif kind == "window":
        seq += 0x20000000
    c.w.send(c.segment(seq, ack, 0x18, b"set " + key.encode() + b" 0 0 1\r\nX\r\n", **kw))
    time.sleep(0.4)
    c.abort()
    print("sent %s" % kind)


def keepalive(host, port, dev):
    c = Conn(host, port, dev)
    for _ in range(3):
        get_ok(c)
    nxt, ack = c.snd_nxt(), c.rcv_nxt()
    for what, pl in (("1-byte", b"\n"), ("0-byte", b"")):
        c.w.frames(0)
        c.w.send(c.segment(nxt - 1, ack, 0x10, pl))
        acked, end = False, time.time() + 1.0
        while not acked and time.time() < end:  # at once: serve's --idle-timeout runs meanwhile
            acked = any(g.dport == c.lport and g.ack == nxt and not g.payload for g in c.w.frames(0.05))
        report(acked, "a %s keepalive probe at SND.NXT-1 is acknowledged (ack %u)" % (what, nxt))
    report(get_ok(c), "... the connection answers after them")
    c.c.close()


def mtu(host, port, n):
    s = socket.create_connection((host, port), timeout=5)
    sizes = list(range(1180, 1180 + n))
    for i, v in enumerate(sizes):
        s.sendall(b"set mtu%d 0 0 %d\r\n%s\r\n" % (i, v, b"m" * v))
        got = b""
        while not got.endswith(b"\r\n"):
            got += s.recv(100)
    stalls = 0
    for i, v in enumerate(sizes):
        for _ in range(2):
            s.sendall(b"version\r\n")  # serve answers it: the next request's ACK is news to the kernel
            got = b""
            while not got.endswith(b"\r\n"):
                got += s.recv(1000)
            s.sendall(b"get mtu%d\r\n" % i)
            got, t0 = b"", time.time()
            try:
                while not got.endswith(b"END\r\n"):
                    d = s.recv(65536)
                    if not d:
                        break
                    got += d
            except socket.timeout:
                stalls += 1
                break
    report(stalls == 0, "gets of values of %d-%d bytes, each after a command serve answers: %d stalled"
           % (sizes[0], sizes[-1], stalls))
    s.close()


def idle(host, port, secs):
    s = socket.create_connection((host, port), timeout=2)
    end, n = time.time() + secs, 0
    try:
        while time.time() < end:
            s.sendall(b"get idle-nothing\r\n")
            got = b""
            while not got.endswith(b"END\r\n"):
                d = s.recv(100)
                if not d:
                    raise OSError("closed")
                got += d
            n += 1
            time.sleep(0.3)
        ok = True
    except OSError:
        ok = False
    report(ok, "a get every 0.3 s for %s s (%d answered): the connection stays open" % (secs, n))
    s.close()


def noreply(host, port, n):
    s = socket.create_connection((host, port), timeout=3)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(n):
        s.sendall(b"set nr%d 0 0 3 noreply\r\nabc\r\n" % i)
        time.sleep(0.002)
    for i in range(0, n, 2):
        s.sendall(b"delete nr%d noreply\r\n" % i)
        time.sleep(0.002)
    keys = b" ".join(b"nr%d" % i for i in range(n))
    s.sendall(b"get " + keys + b"\r\n")
    got = b""
    while not got.endswith(b"END\r\n"):
        got += s.recv(65536)
    want = b"".join(b"VALUE nr%d 0 3\r\nabc\r\n" % i for i in range(1, n, 2)) + b"END\r\n"
    report(got == want, "%d noreply sets and %d noreply deletes, read back" % (n, (n + 1) // 2))
    s.close()
    from pymemcache.client.base import Client
    c = Client((host, port), timeout=3)  # set and delete default to noreply
    for i in range(n):
        c.set("pm%d" % i, b"v%d" % i)
    for i in range(0, n, 3):
        c.delete("pm%d" % i)
    got = c.get_many(["pm%d" % i for i in range(n)])
    want = {"pm%d" % i: b"v%d" % i for i in range(n) if i % 3}
    report(got == want, "pymemcache's default set and delete (noreply), read back: %d of %d keys" % (len(got), len(want)))
    c.close()


def hold(host, port, n, secs):
    cs = [socket.create_connection((host, port), timeout=3) for _ in range(n)]
    for c in cs:
        for _ in range(2):  # the first may come before serve holds the connection (no flow yet)
            c.sendall(b"get hold-nothing\r\n")
            got = b""
            while not got.endswith(b"END\r\n"):
                got += c.recv(100)
    print("ready", flush=True)
    time.sleep(secs)
    for c in cs:
        c.close()


def main(a):
    cmd = a[0] if a else ""
    if cmd == "spoof":
        spoof(a[1], int(a[2]), a[3])
    elif cmd == "flood":
        flood(a[1], int(a[2]), a[3], int(a[4]))
    elif cmd == "inject":
        inject(a[1], int(a[2]), a[3], a[4], a[5])
    elif cmd == "keepalive":
        keepalive(a[1], int(a[2]), a[3])
    elif cmd == "mtu":
        mtu(a[1], int(a[2]), int(a[3]))
    elif cmd == "noreply":
        noreply(a[1], int(a[2]), int(a[3]))
    elif cmd == "hold":
        hold(a[1], int(a[2]), int(a[3]), float(a[4]))
    elif cmd == "idle":
        idle(a[1], int(a[2]), float(a[3]))
    else:
        print(__doc__)
        return 2
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
