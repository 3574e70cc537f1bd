#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What memcached keeps of an item's reads, against memcached itself.

  readstate.py HOST MC_PORT XKV_PORT

Sends the same requests, at the same moments, to memcached (MC_PORT: the
oracle) and to xdpkv (XKV_PORT), over TCP and UDP (where xdpkv's XDP
program answers a get itself), and compares the replies: mg's h (read
before) and l (seconds since the last access), me's la and fetch, with
seconds slept between the reads so that l counts from where each server
took its time (the write, the second read).  l and la may differ by one
second (memcached's clock ticks in whole seconds); everything else must
be the same bytes.  Then stats detail: per-prefix counts over TCP and UDP
(every request then goes to xdpkv's slow path, which counts it), the dump
compared line for line, order included.  Exit 0 when every reply matches.
"""
import re
import socket
import struct
import sys
import time

HOST, MC, XKV = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
RUN = "r%d" % (time.time_ns() % 1000000)  # fresh keys for every run
failed = 0


class Server:
    def __init__(self, port):
        self.tcp = socket.create_connection((HOST, port), timeout=3)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.settimeout(2)
        self.udp.connect((HOST, port))
        self.rid = 0

    def ask(self, req, ends=(b"\r\n",)):
        """One request over TCP; the reply up to one of its endings."""
        self.tcp.sendall(req)
        buf = b""
        while not any(buf.endswith(e) for e in ends):
            d = self.tcp.recv(65536)
            if not d:
                break
            buf += d
        return buf

    def udp_ask(self, req, ends):
        """One request in one datagram (memcached's 8-byte frame header);
        the reply's datagrams gathered up to an ending (memcached sends a
        get's hits in one each, all "1 of 1": memcached-udp-facts.md)."""
        self.rid += 1
        self.udp.send(struct.pack("!HHHH", self.rid, 0, 1, 0) + req)
        buf = b""
        while not any(buf.endswith(e) for e in ends):
            d = self.udp.recv(65536)
            if struct.unpack("!H", d[:2])[0] == self.rid:
                buf += d[8:]
        return buf


def check(what, mc, xk, ages=False):
    """xk as mc; with ages, the numbers of l<n> and la=<n> within 1."""
    global failed
    ok = mc == xk
    if not ok and ages:
        pat = rb"( l|la=)(\d+)"
        m1, m2 = re.findall(pat, mc), re.findall(pat, xk)
        ok = (re.sub(pat, rb"\1#", mc) == re.sub(pat, rb"\1#", xk) and len(m1) == len(m2) and
              all(a[0] == b[0] and abs(int(a[1]) - int(b[1])) <= 1 for a, b in zip(m1, m2)))
    print("%s %s: %r%s" % ("PASS" if ok else "FAIL", what, xk, "" if ok else " (memcached: %r)" % mc))
    failed |= not ok


def both(what, req, udp=False, ages=False, ends=(b"\r\n",)):
    r = [s.udp_ask(req, ends) if udp else s.ask(req, ends) for s in (mc, xk)]
    check(what, r[0], r[1], ages)
    return r


def me_line(what, k):
    """me: la and fetch compared (cas, cls and size are each server's own)."""
    r = [s.ask(b"me %s\r\n" % k) for s in (mc, xk)]
    pat = rb" (la=\d+|fetch=\w+)"
    check(what, b"".join(re.findall(pat, r[0])), b"".join(re.findall(pat, r[1])), ages=True)


def key(k):
    return (RUN + k).encode()


def age(reply):
    m = re.search(rb" l(\d+)", reply)
    return int(m.group(1)) if m else -1


mc, xk = Server(MC), Server(XKV)
# one memcached serves every layout's run: its prefixes from the last one go
for srv in (mc, xk):
    srv.ask(b"stats detail off\r\nstats reset\r\n", ends=(b"RESET\r\n",))
a, b, c, d = key("a"), key("b"), key("c"), key("d")

# t = 0: four items; b read once over UDP (XDP), c once over TCP, d by mg
for k in (a, b, c, d):
    both("set " + k.decode(), b"set %s 0 0 1\r\nx\r\n" % k)
both("UDP get b (XDP's)", b"get %s\r\n" % b, udp=True, ends=(b"END\r\n",))
both("get c", b"get %s\r\n" % c, ends=(b"END\r\n",))
both("mg d h: not read before", b"mg %s h\r\n" % d)
both("mg d h: read once before", b"mg %s h l\r\n" % d, ages=True)
me_line("me d: fetched", d)
time.sleep(2.2)
# t = 2: a read for the first and second time (the second takes the time);
# b and c a second time (the time taken by XDP's get and serve's)
r = both("mg a h l: unread, 2 s after its write", b"mg %s h l\r\n" % a, ages=True)
check("... l is about 2", b"2", b"%d" % min(max(age(r[1]), 1), 3) if age(r[1]) in (1, 2, 3) else b"x")
both("mg a h l: read once", b"mg %s h l\r\n" % a, ages=True)
both("UDP get b again (XDP's)", b"get %s\r\n" % b, udp=True, ends=(b"END\r\n",))
both("get c again", b"get %s\r\n" % c, ends=(b"END\r\n",))
both("mg b u h: read before (XDP marked it)", b"mg %s u h\r\n" % b)
time.sleep(2.2)
# t = 4: each l counts from its second read (2 s), not from the write (4 s);
# me reads nothing.  (A third read may move memcached's time as well, once
# its LRU maintainer has cleared the item's ACTIVE bit, at its own pace:
# xdpkv moves it once a minute, so no la is compared after one.)
me_line("me a: la, fetched", a)
for k, what in ((a, "a (mg's second read)"), (b, "b (XDP's second get)"), (c, "c (serve's second get)")):
    r = both("mg %s h l" % what, b"mg %s h l\r\n" % k, ages=True)
    check("... %s: l is about 2, not 4" % what, b"2",
          b"2" if age(r[1]) in (1, 2, 3) else b"%d" % age(r[1]))
both("mg d u l: 4 s after its write", b"mg %s u l\r\n" % d, ages=True)

# reads while a flush_all is still walking the store: marked as ever
f = key("f")
both("flush_all, then a new item read three times", b"flush_all\r\nset %s 0 0 1\r\nv\r\n"
     b"mg %s h\r\nmg %s h\r\nget %s\r\nmg %s h\r\n" % (f, f, f, f, f),
     ends=(b"END\r\nHD h1\r\n", b"END\r\nHD h0\r\n"))

# stats detail: counts by prefix (the key up to its first ':')
both("stats detail on", b"stats detail on\r\n")
p = RUN.encode()
for i, k in enumerate((b"%s:1" % p, b"%s:2" % p, b"%sx:1" % p, b"%s" % p, b":%s" % p)):
    both("set %s" % k.decode(), b"set %s 0 0 1\r\nv\r\n" % k)
    both("UDP get %s (counted by serve)" % k.decode(), b"get %s %s:none\r\n" % (k, p), udp=True,
         ends=(b"END\r\n",))
both("delete %s:2" % RUN, b"delete %s:2\r\n" % p)
both("delete %s:9 (a miss counts too)" % RUN, b"delete %s:9\r\n" % p)
both("mg, ms, md, incr, touch: not counted", b"mg %s:1 v\r\nms %s:1 1\r\nz\r\nmd %s:1 q\r\nmn\r\n"
     % (p, p, p), ends=(b"MN\r\n",))
both("stats detail dump", b"stats detail dump\r\n", ends=(b"END\r\n",))
both("stats detail off", b"stats detail off\r\n")
both("UDP get while off: not counted", b"get %s:1\r\n" % p, udp=True, ends=(b"END\r\n",))
both("stats detail dump: kept", b"stats detail dump\r\n", ends=(b"END\r\n",))
both("stats detail: usage", b"stats detail\r\n")
both("stats detail ON: usage", b"stats detail ON\r\n")
both("stats reset clears it", b"stats reset\r\nstats detail dump\r\n", ends=(b"END\r\n",))


def bin_stat(port, key):
    """A binary STAT with key on a fresh connection: its responses as
    (status, key, value) up to the end (an empty key), or a lone error."""
    c = socket.create_connection((HOST, port), timeout=3)
    c.sendall(struct.pack("!BBHBBHIIQ", 0x80, 0x10, len(key), 0, 0, 0, len(key), 7, 0) + key)
    out, buf = [], b""
    while True:
        while len(buf) < 24:
            buf += c.recv(65536)
        _, _, kl, el, _, st, bl, _, _ = struct.unpack("!BBHBBHIIQ", buf[:24])
        while len(buf) < 24 + bl:
            buf += c.recv(65536)
        body, buf = buf[24:24 + bl], buf[24 + bl:]
        out.append((st, body[el:el + kl], body[el + kl:]))
        if st or not kl:
            c.close()
            return out


# (not "detail" alone: memcached compares past the key, so the bytes left
# in its read buffer by an earlier request decide)
for k in (b"detail on", b"detail dump", b"detail off", b"detail x", b"detailx on", b"resetx", b"reset now"):
    r = [bin_stat(port, k) for port in (MC, XKV)]
    if k == b"detail on":
        both("set %s:b (counted: detail on over binary)" % RUN, b"set %s:b 0 0 1\r\nv\r\n" % p)
    check("binary STAT %r" % k.decode(), repr(r[0]).encode(), repr(r[1]).encode())
sys.exit(1 if failed else 0)
