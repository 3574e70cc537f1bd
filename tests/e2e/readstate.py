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
compared line for line, order included.  Then stats sizes_enable, sizes
and sizes_disable, text and binary: memcached's size histogram of the
items stored since the enable.  Exit 0 when every reply matches.
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

# stats sizes: memcached's histogram of the items stored since
# sizes_enable, in 32-byte buckets of its item size (xdpkv walks its store
# for it); the items from before (o1, o2), touch's (keeps the cas) not
# counted, incr's (a new cas) and an XDP set's counted; one memcached serves
# every layout's run, so it starts disabled
o1, o2, s1, s2, s3 = key("o1"), key("o2"), key("s1"), key("s2"), key("s3")
both("stats sizes_disable (no END)", b"stats sizes_disable\r\n")
both("set o1, o2 before the enable", b"set %s 0 0 2\r\n10\r\nset %s 0 0 2\r\n10\r\n" % (o1, o2),
     ends=(b"STORED\r\nSTORED\r\n",))
both("stats sizes while disabled", b"stats sizes\r\n", ends=(b"END\r\n",))
both("stats sizes_enabled: not a group", b"stats sizes_enabled\r\n")
both("stats sizes_enable x (no END)", b"stats sizes_enable x\r\n")
both("stats sizes: none stored since", b"stats sizes\r\n", ends=(b"END\r\n",))
both("set s1 (5 bytes)", b"set %s 0 0 5\r\nhello\r\n" % s1)
both("set s2 (100 bytes, flags 123)", b"set %s 123 0 100\r\n%s\r\n" % (s2, b"x" * 100))
both("UDP set s3 (XDP's)", b"set %s 0 0 40\r\n%s\r\n" % (s3, b"y" * 40), udp=True)
both("touch o1, incr o2", b"touch %s 100\r\nincr %s 1\r\n" % (o1, o2), ends=(b"\r\n11\r\n",))
both("stats sizes: s1, s2, s3, o2", b"stats sizes\r\n", ends=(b"END\r\n",))
both("UDP stats sizes", b"stats sizes\r\n", udp=True, ends=(b"END\r\n",))
both("stats sizes_enable again: kept", b"stats sizes_enable\r\n")
both("delete s1", b"delete %s\r\n" % s1)
both("stats sizes: s1 gone", b"stats sizes\r\n", ends=(b"END\r\n",))
both("stats sizes_disable", b"stats sizes_disable\r\n")
both("stats sizes: disabled", b"stats sizes\r\n", ends=(b"END\r\n",))


def bin_stats(port, keys):
    """Binary STATs with these keys and a NOOP after them on a fresh
    connection: every response up to the NOOP's, as (opcode, status, key,
    value) (memcached ends sizes_enable and sizes_disable with no empty
    response: nothing else tells where they end)."""
    c = socket.create_connection((HOST, port), timeout=3)
    for k in keys + [b""]:
        c.sendall(struct.pack("!BBHBBHIIQ", 0x80, 0x0a if not k else 0x10, len(k), 0, 0, 0, len(k), 9, 0)
                  + k)
    out, buf = [], b""
    while True:
        while len(buf) < 24:
            buf += c.recv(65536)
        _, op, kl, el, _, st, bl, _, _ = struct.unpack("!BBHBBHIIQ", buf[:24])
        while len(buf) < 24 + bl:
            buf += c.recv(65536)
        body, buf = buf[24:24 + bl], buf[24 + bl:]
        out.append((op, st, body[el:el + kl], body[el + kl:]))
        if op == 0x0a:
            c.close()
            return out


def bin_both(what, keys):
    r = [bin_stats(port, keys) for port in (MC, XKV)]
    check(what, repr(r[0]).encode(), repr(r[1]).encode())


bin_both("binary STAT sizes, sizes_enable, sizes", [b"sizes", b"sizes_enable", b"sizes"])
both("set s1 again, s2 appended", b"set %s 0 0 5\r\nhello\r\nappend %s 0 0 1\r\nz\r\n" % (s1, s2),
     ends=(b"STORED\r\nSTORED\r\n",))
bin_both("binary STAT sizes, sizes_enablex, sizes_enable x", [b"sizes", b"sizes_enablex",
                                                               b"sizes_enable x"])
bin_both("binary STAT sizes_disable, sizes", [b"sizes_disable", b"sizes"])


# (not "detail" alone: memcached compares past the key, so the bytes left
# in its read buffer by an earlier request decide)
for k in (b"detail on", b"detail dump", b"detail off", b"detail x", b"detailx on", b"resetx", b"reset now"):
    bin_both("binary STAT %r" % k.decode(), [k])
    if k == b"detail on":
        both("set %s:b (counted: detail on over binary)" % RUN, b"set %s:b 0 0 1\r\nv\r\n" % p)
sys.exit(1 if failed else 0)
