#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile and background clients for tests/e2e/abuse.sh.

Runs inside one of the testbed's namespaces.  Every reply is seen on the wire:
an AF_PACKET socket on the namespace's interface captures the UDP datagrams
the server sends to the address and port a case used (spoofed ones included),
so "no reply" means nothing came back at all, and "bytes out" is every reply
datagram's UDP payload (frame header included), the unit of
--max-amplification.  Requests go out through a plain UDP socket where one
can send them, otherwise as whole Ethernet frames (AF_PACKET): spoofed
sources, source port 0, foreign destination MACs and addresses.

  abuseclient.py keys                          the seeded keys, then the keys an attacker tries to create
  abuseclient.py seed --dev D --server4 A ...  store the seeded items (a trusted client)
  abuseclient.py background --server4 A --stop-file F --out F --ready-file F
                                               verified gets and sets until F exists
  abuseclient.py phase NAME --dev D ...        run a table of abuse cases (closed, reader,
                                               spoof, ports, notlocal, shape, loop)

A phase prints PASS/FAIL per check; a FAIL of a check marked "slow path" is
one that only the slow path can pass (the request or the reply goes through
`xdpkv serve`).  With --amp-log FILE each measured case appends
"name|bytes in|bytes out|datagrams|limit".  Exit status: 0 all passed,
1 a check failed, 2 usage.
"""

import argparse
import json
import os
import random
import select
import socket
import struct
import sys
import time

import rawclient
from rawclient import Fail, hit, setreq, value_of

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33  # Linux; not in the socket module
BROADCAST = "ff:ff:ff:ff:ff:ff"
FOREIGN_MAC = "02:00:00:00:00:77"

XKV_R_AMP = b"SERVER_ERROR reply too large for an unverified source\r\n"

SILENCE_WAIT = 0.3  # how long "no reply" is waited for
REPLY_WAIT = 1.5    # the longest a reply may take
COUNTER_LAG = 3.0   # how long a counter may trail the request (checked by polling)
QUIET_AFTER = 0.2   # a reply is complete after this long without a datagram

# The items the test stores, and the keys an attacker tries to create.
SEEDS = [
    (b"abuse-small", b"small-value"),
    (b"m", value_of(150, 11)),           # fits the XDP reply, 12x a "get m"
    (b"abuse-big", value_of(1000, 12)),  # a get reply too large for the frame: slow path
    (b"abuse-huge", value_of(3000, 13)), # a 3-datagram reply
    (b"ctr", b"100"),
]
SEED = dict(SEEDS)
EVIL_KEYS = [b"evil-set", b"evil-v6", b"evil-noreply", b"evil-add", b"evil-multi",
             b"evil-frag", b"evil-frag2", b"evil-victim", b"evil-acl"]


# ---- frames ------------------------------------------------------------------

def ones_sum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def udp_frame(src_mac, dst_mac, src, dst, sport, dport, payload):
    """Ethernet + IPv4 (DF) or IPv6 + UDP, both checksums computed."""
    v6 = ":" in src
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s, d = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    ulen = 8 + len(payload)
    if v6:
        pseudo = s + d + struct.pack("!I3xB", ulen, 17)
    else:
        pseudo = s + d + struct.pack("!xBH", 17, ulen)
    ck = 0xFFFF - ones_sum(pseudo + struct.pack("!HHHH", sport, dport, ulen, 0) + payload)
    udp = struct.pack("!HHHH", sport, dport, ulen, ck or 0xFFFF) + payload
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, ulen, 17, 64) + s + d
        etype = ETH_P_IPV6
    else:
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, random.randrange(65536),
                          0x4000, 64, 17, 0, s, d)
        ip = hdr[:10] + struct.pack("!H", 0xFFFF - ones_sum(hdr)) + hdr[12:]
        etype = ETH_P_IP
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack("!H", etype) + ip + udp


def parse_udp(f):
    """(src, dst, sport, dport, payload) of an unfragmented UDP frame, or None."""
    if len(f) < 14:
        return None
    etype = struct.unpack("!H", f[12:14])[0]
    if etype == ETH_P_IP and len(f) >= 34:
        ihl = (f[14] & 15) * 4
        tot = struct.unpack("!H", f[16:18])[0]
        if f[23] != 17 or struct.unpack("!H", f[20:22])[0] & 0x3FFF:
            return None
        src, dst = socket.inet_ntop(socket.AF_INET, f[26:30]), socket.inet_ntop(socket.AF_INET, f[30:34])
        u = 14 + ihl
        end = 14 + tot
    elif etype == ETH_P_IPV6 and len(f) >= 54:
        if f[20] != 17:
            return None
        src, dst = socket.inet_ntop(socket.AF_INET6, f[22:38]), socket.inet_ntop(socket.AF_INET6, f[38:54])
        u = 54
        end = 54 + struct.unpack("!H", f[18:20])[0]
    else:
        return None
    if len(f) < u + 8:
        return None
    sport, dport, ulen = struct.unpack("!HHH", f[u:u + 6])
    return src, dst, sport, dport, f[u + 8:min(u + ulen, end)]


def norm(addr):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    return socket.inet_ntop(fam, socket.inet_pton(fam, addr))


class Tap:
    """An AF_PACKET socket on the namespace's interface: sends whole frames and
    sees every UDP datagram that arrives (and, marked out=True, leaves)."""

    def __init__(self, dev):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:  # root: past rmem_max, for the 100-datagram replies of a broken server
            self.s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
        except OSError:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.s.bind((dev, ETH_P_ALL))
        self.s.setblocking(False)
        self.mac = ":".join("%02x" % b for b in self.s.getsockname()[4][:6])

    def send(self, frame):
        self.s.send(frame)

    def drain(self):
        while True:
            try:
                self.s.recv(65536)
            except BlockingIOError:
                return

    def collect(self, keep, limit, quiet=QUIET_AFTER):
        """UDP datagrams (src, dst, sport, dport, payload, out) for which keep()
        holds, until `quiet` seconds pass after the last one, or `limit` in all."""
        got = []
        start = time.monotonic()
        last = None
        while True:
            now = time.monotonic()
            if now - start >= limit or (last is not None and quiet and now - last >= quiet):
                return got
            wait = limit - (now - start)
            if last is not None and quiet:
                wait = min(wait, quiet - (now - last))
            r, _, _ = select.select([self.s], [], [], max(wait, 0.001))
            if not r:
                continue
            while True:
                try:
                    f, addr = self.s.recvfrom(65536)
                except BlockingIOError:
                    break
                p = parse_udp(f)
                if p is None:
                    continue
                p = p + (addr[2] == PACKET_OUTGOING,)
                if keep(p):
                    got.append(p)
                    last = time.monotonic()


# ---- counters ------------------------------------------------------------------

def counters(cmd):
    if not cmd:
        return None
    return rawclient.read_counters(cmd)


def fast_delta(before, after, name):
    return after["fast"].get(name, 0) - before["fast"].get(name, 0)


def served(before, after):
    """Replies a server sent (both paths).  The slow path pushes its counters
    every 100 ms: call after at least that long."""
    return sum(after[side].get("replies", 0) - before[side].get("replies", 0) for side in ("fast", "slow"))


# ---- cases -------------------------------------------------------------------------

class Case:
    """One request and what must come of it.

    expect: "silent" (no datagram at all), ("exact", bytes), ("capped", full):
    at most --amplification times the request's bytes, and either `full` (when
    it fits that), the SERVER_ERROR line or nothing; full None: any reply under
    the cap; ("nowrite", word): under the cap and without `word` (the reply to
    a write); ("info",): print what came.
    """

    def __init__(self, name, text, expect, counters=None, src=None, sport=None, raw=False,
                 dst=None, dst_mac=None, src_mac=None, hdr=(0, 1), slow=False, amp=False):
        self.name, self.text, self.expect = name, text, expect
        self.counters = counters or {}
        self.src, self.sport, self.raw = src, sport, raw
        self.dst, self.dst_mac, self.src_mac = dst, dst_mac, src_mac
        self.hdr, self.slow, self.amp = hdr, slow, amp


SILENT = "silent"


def exact(b):
    return ("exact", b)


def capped(full):
    return ("capped", full)


def show(b, n=100):
    s = repr(b)
    return s if len(s) <= n else s[:n] + "...(%d bytes)" % len(b)


class Runner:
    def __init__(self, args):
        self.a = args
        self.tap = Tap(args.dev)
        self.failures = 0
        self.slow_failures = 0
        self.amp_rows = []

    def say(self, ok, c, msg):
        tag = " [slow path]" if c.slow else ""
        if ok:
            print("PASS %-52s %s" % (c.name, msg))
        else:
            print("FAIL%s %-52s %s\n   request %s" % (tag, c.name, msg, show(c.text)))
            self.failures += 1
            self.slow_failures += c.slow

    def run(self, c):
        a = self.a
        src = c.src or a.src4
        dst = c.dst or (a.server6 if ":" in src else a.server4)
        req_id = random.randrange(1, 0xFFFF)
        payload = struct.pack("!HHHH", req_id, c.hdr[0], c.hdr[1], 0) + c.text
        before = counters(a.status) if c.counters else None
        self.tap.drain()
        sock = None
        if c.raw:
            # below the ephemeral range: no client of this namespace uses it
            sport = c.sport if c.sport is not None else random.randrange(5000, 30000)
            self.tap.send(udp_frame(c.src_mac or self.tap.mac, c.dst_mac or a.server_mac,
                                    src, dst, sport, a.port, payload))
        else:
            sock = socket.socket(socket.AF_INET6 if ":" in src else socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((src, c.sport or 0))
            sport = sock.getsockname()[1]
            sock.sendto(payload, (dst, a.port))
        # a reply: from the service port to the request's source, from any
        # address (a frame not for the server must not be answered by anyone)
        to = norm(src)
        keep = lambda p: not p[5] and p[2] == a.port and p[3] == sport and norm(p[1]) == to
        silent = c.expect == SILENT
        got = self.tap.collect(keep, SILENCE_WAIT if silent else REPLY_WAIT)
        if sock:
            sock.close()
        after = counters(a.status) if c.counters else None
        n_in = len(payload)
        n_out = sum(len(p[4]) for p in got)
        # the reply text, datagrams in sequence order
        parts = sorted((p[4] for p in got if len(p[4]) >= 8), key=lambda d: struct.unpack("!H", d[2:4])[0])
        text = b"".join(d[8:] for d in parts)
        limit = a.amplification * n_in
        if c.amp:
            self.amp_rows.append("%s|%d|%d|%d|%d" % (c.name, n_in, n_out, len(got), limit))
        errs = []
        kind = c.expect if isinstance(c.expect, str) else c.expect[0]
        if kind == SILENT:
            if got:
                errs.append("expected no reply, got %d datagram(s): %s" % (len(got), show(text)))
        elif kind == "exact":
            if text != c.expect[1]:
                errs.append("reply differs\n   want %s\n    got %s" % (show(c.expect[1]), show(text)))
        elif kind in ("capped", "nowrite"):
            if n_out > limit:
                errs.append("%d bytes out for %d in: over %dx" % (n_out, n_in, a.amplification))
            if kind == "nowrite" and c.expect[1] in text:
                errs.append("the write was done: %s" % show(text))
            full = c.expect[1] if kind == "capped" else None
            if full is not None and text not in (b"", XKV_R_AMP, full):
                errs.append("the reply is neither the whole answer under the cap, the SERVER_ERROR"
                            " line nor nothing: %s" % show(text))
        for name, want in c.counters.items():
            d = fast_delta(before, after, name)
            # a counter may lag the silence we waited for (an IPv6 source's
            # first datagram waits for neighbour discovery): poll a little
            deadline = time.monotonic() + COUNTER_LAG
            while d < want and time.monotonic() < deadline:
                time.sleep(0.1)
                after = counters(a.status)
                d = fast_delta(before, after, name)
            if d != want:
                errs.append("fast.%s +%d, expected +%d" % (name, d, want))
        detail = "%d bytes in, %d out in %d datagram(s)" % (n_in, n_out, len(got))
        if c.counters:
            detail += " [%s]" % " ".join("%s+%d" % (k, v) for k, v in c.counters.items())
        if kind == "info":
            print("INFO %-52s reply: %s" % (c.name, show(text) if got else "none"))
            if not c.counters:
                return
        self.say(not errs, c, detail if not errs else "; ".join(errs))


# ---- phases ------------------------------------------------------------------------

def multiget(key, n):
    return b"get " + b" ".join([key] * n) + b"\r\n"


def full_get(*keys):
    return b"".join(hit(k, SEED[k]) for k in keys) + b"END\r\n"


def phase_closed(a):
    """A source outside the allow list: no reply to anything, nothing stored."""
    drop = {"drop_acl": 1}
    big3000 = b"x" * 3000
    return [
        Case("outsider get", b"get abuse-small\r\n", SILENT, drop),
        Case("outsider set", setreq(b"evil-set", b"evil"), SILENT, drop),
        Case("outsider overwrite", setreq(b"abuse-small", b"evil"), SILENT, drop),
        Case("outsider delete", b"delete abuse-small\r\n", SILENT, drop),
        Case("outsider incr", b"incr ctr 5\r\n", SILENT, drop),
        Case("outsider add", setreq(b"evil-add", b"x").replace(b"set", b"add", 1), SILENT, drop),
        Case("outsider flush_all", b"flush_all\r\n", SILENT, drop),
        Case("outsider stats", b"stats\r\n", SILENT, drop),
        Case("outsider version", b"version\r\n", SILENT, drop),
        Case("outsider multi-get x100", multiget(b"abuse-big", 100), SILENT, drop),
        Case("outsider get (IPv6)", b"get abuse-small\r\n", SILENT, drop, src=a.src6),
        Case("outsider set (IPv6)", setreq(b"evil-v6", b"evil"), SILENT, drop, src=a.src6),
        # IP fragments: the XDP program passes them, the kernel reassembles
        # them for the slow path
        Case("outsider set of 3000 bytes (IP fragments)", setreq(b"evil-frag", big3000), SILENT,
             slow=True),
        Case("outsider overwrite of 3000 bytes (IP fragments)", setreq(b"abuse-small", big3000),
             SILENT, slow=True),
        Case("outsider multi-get x150 (IP fragments)", multiget(b"abuse-big", 150), SILENT, slow=True),
    ]


def reads(a, tag, **kw):
    """Reads from an allowed, untrusted source: small ones answered, the rest
    at most --max-amplification times the request."""
    return [
        Case("%s get small" % tag, b"get abuse-small\r\n", exact(full_get(b"abuse-small")), **kw),
        # 180 bytes for 15: the XDP program cuts it to the SERVER_ERROR line
        Case("%s get 150 bytes (12x)" % tag, b"get m\r\n", exact(XKV_R_AMP), {"amp_capped": 1},
             amp=True, **kw),
        # cut by the XDP program too: the cap is applied before the room check
        Case("%s get 1000 bytes" % tag, b"get abuse-big\r\n", exact(XKV_R_AMP), {"amp_capped": 1},
             amp=True, **kw),
        Case("%s multi-get of 1000 bytes x100" % tag, multiget(b"abuse-big", 100),
             capped(full_get(*[b"abuse-big"] * 100)), slow=True, amp=True, **kw),
        Case("%s get 3000 bytes" % tag, b"get abuse-huge\r\n", capped(full_get(b"abuse-huge")),
             slow=True, amp=True, **kw),
        Case("%s stats" % tag, b"stats\r\n", capped(None), slow=True, amp=True, **kw),
        # a multi-get whose whole answer is under the cap (3.1x): answered
        Case("%s multi-get of 11 bytes x100 (3x)" % tag, multiget(b"abuse-small", 100),
             capped(full_get(*[b"abuse-small"] * 100)), amp=True, **kw),
        Case("%s version" % tag, b"version\r\n", capped(None), amp=True, **kw),
    ]


def phase_reader(a):
    """Allowed, not in the write list, not trusted: reads() and no write done."""
    w = {"drop_write_acl": 1}
    return reads(a, "reader") + [
        Case("reader set", setreq(b"evil-set", b"evil"), SILENT, w),
        Case("reader overwrite", setreq(b"abuse-small", b"evil"), SILENT, w),
        Case("reader set noreply", setreq(b"evil-noreply", b"evil", noreply=True), SILENT, w),
        Case("reader delete", b"delete abuse-small\r\n", SILENT, w),
        Case("reader incr", b"incr ctr 5\r\n", SILENT, w),
        Case("reader decr", b"decr ctr 5\r\n", SILENT, w),
        Case("reader add", setreq(b"evil-add", b"x").replace(b"set", b"add", 1), SILENT, w),
        Case("reader replace", setreq(b"abuse-small", b"x").replace(b"set", b"replace", 1), SILENT, w),
        Case("reader flush_all", b"flush_all\r\n", SILENT, w),
        Case("reader flush_all noreply", b"flush_all noreply\r\n", SILENT, w),
        # a write behind a read in one datagram: the XDP program hands the
        # datagram to the slow path, which must refuse the write too
        Case("reader get + set in one datagram",
             b"get abuse-small\r\n" + setreq(b"evil-multi", b"evil"), ("nowrite", b"STORED"), slow=True),
        Case("reader get + incr in one datagram", b"get abuse-small\r\nincr ctr 1\r\n",
             ("nowrite", b"101\r\n"), slow=True),
        Case("reader set of 3000 bytes (IP fragments)", setreq(b"evil-frag", b"y" * 3000), SILENT,
             slow=True),
        Case("reader get (IPv6: not allowed)", b"get abuse-small\r\n", SILENT, {"drop_acl": 1},
             src=a.src6),
        # last: if it is obeyed, it empties the store
        Case("reader get + flush_all in one datagram", b"get abuse-small\r\nflush_all\r\n",
             ("nowrite", b"OK\r\n"), slow=True),
    ]


def phase_spoof(a):
    """Raw frames from the evil host's MAC with forged source addresses: a
    victim's (allowed, untrusted: what comes back is what a reflection
    attack gets), one in no list, one inside the server's subnet."""
    v = dict(src=a.victim4, raw=True)
    return reads(a, "victim", **v) + [
        Case("victim set", setreq(b"evil-victim", b"evil"), SILENT, {"drop_write_acl": 1}, **v),
        Case("victim flush_all", b"flush_all\r\n", SILENT, {"drop_write_acl": 1}, **v),
        Case("forged source in no list: get", b"get abuse-small\r\n", SILENT, {"drop_acl": 1},
             src=a.outside4, raw=True),
        Case("forged source in no list: set", setreq(b"evil-acl", b"evil"), SILENT,
             {"drop_acl": 1}, src=a.outside4, raw=True),
        # inside the server's own subnet: allowed and trusted by address;
        # forging on one's own L2 segment is outside the threat model
        Case("forged source inside the server's subnet (L2-local)", b"get m\r\n", ("info",),
             src=a.inside4, raw=True),
    ]


def phase_ports(a):
    """An allowed, trusted client sending from ports a reflector would use."""
    d = {"drop_port": 1}
    g = b"get abuse-small\r\n"
    return [
        Case("source port 0", g, SILENT, d, sport=0, raw=True),
        Case("source port 11211 (the service port)", g, SILENT, d, sport=a.port),
        Case("source port 53", g, SILENT, d, sport=53),
        Case("source port 123", b"stats\r\n", SILENT, d, sport=123),
        Case("source port 1023", g, SILENT, d, sport=1023),
        Case("source port 0 (IPv6)", g, SILENT, d, sport=0, raw=True, src=a.src6),
        Case("source port 19 (IPv6)", g, SILENT, d, sport=19, src=a.src6),
        Case("source port 1024 is served", g, exact(full_get(b"abuse-small")), sport=1024),
        # IP fragments reach the slow path only
        Case("source port 53, IP fragments", multiget(b"abuse-small", 200), SILENT, sport=53, slow=True),
        Case("source port 11211, IP fragments", multiget(b"abuse-small", 200), SILENT, sport=a.port,
             slow=True),
    ]


def phase_notlocal(a):
    """Frames that are not for this host: the XDP program leaves them alone."""
    n = {"pass_not_local": 1}
    g = b"get abuse-small\r\n"
    return [
        Case("to another MAC, the server's address", g, SILENT, n, raw=True, dst_mac=FOREIGN_MAC),
        Case("to the broadcast MAC, another address", g, SILENT, n, raw=True, dst_mac=BROADCAST,
             dst=a.other4),
        Case("to a multicast MAC, another address", g, SILENT, n, raw=True,
             dst_mac="01:00:5e:00:00:fb", dst=a.other4),
        Case("to the server's MAC, another address", g, SILENT, n, raw=True, dst=a.other4),
        Case("to another MAC (IPv6)", g, SILENT, n, raw=True, dst_mac=FOREIGN_MAC, src=a.src6),
        Case("to the server's MAC, another address (IPv6)", g, SILENT, n, raw=True, src=a.src6,
             dst=a.other6),
        # the XDP program passes it (pass_not_local); the host stack then
        # delivers a unicast IP datagram to the slow path's socket
        Case("to the broadcast MAC, the server's address", g, ("info",), n, raw=True, dst_mac=BROADCAST),
    ]


def phase_shape(a):
    """Datagrams that read as replies or carry a bad frame header: silence."""
    r = {"drop_reply": 1}
    f = {"drop_frame": 1}
    g = b"get abuse-small\r\n"
    value3000 = b"VALUE k 0 3000\r\n" + b"v" * 3000 + b"\r\nEND\r\n"
    return [
        Case("ERROR", b"ERROR\r\n", SILENT, r),
        Case("END", b"END\r\n", SILENT, r),
        Case("STORED", b"STORED\r\n", SILENT, r),
        Case("NOT_FOUND", b"NOT_FOUND\r\n", SILENT, r),
        Case("VALUE ... END", b"VALUE k 0 1\r\nx\r\nEND\r\n", SILENT, r),
        Case("a number (incr reply)", b"12345\r\n", SILENT, r),
        Case("VERSION", b"VERSION 1.6.21\r\n", SILENT, r),
        Case("STAT ... END", b"STAT pid 1\r\nEND\r\n", SILENT, r),
        Case("SERVER_ERROR", b"SERVER_ERROR out of memory\r\n", SILENT, r),
        Case("CLIENT_ERROR", b"CLIENT_ERROR bad data chunk\r\n", SILENT, r),
        Case("frame seq 1 of 2", g, SILENT, f, hdr=(1, 2)),
        Case("frame seq 0 of 2", g, SILENT, f, hdr=(0, 2)),
        Case("frame total 0", g, SILENT, f, hdr=(0, 0)),
        Case("VALUE of 3000 bytes (IP fragments)", value3000, SILENT, slow=True),
        Case("frame seq 0 of 2, 3000 bytes (IP fragments)", setreq(b"evil-frag2", b"z" * 3000),
             SILENT, hdr=(0, 2), slow=True),
    ]


PHASES = {
    "closed": phase_closed, "reader": phase_reader, "spoof": phase_spoof, "ports": phase_ports,
    "notlocal": phase_notlocal, "shape": phase_shape,
}


# ---- the two-server loop ------------------------------------------------------------

LOOP_MAX = 4      # datagrams a loop may exchange before it dies out: "a few"
LOOP_WINDOW = 0.5  # seconds; then as long again, in which nothing may come


def phase_loop(a):
    """One frame to server A, forged from server B (its MAC, address and
    port): every datagram A and B then exchange is counted on the client veth
    end, which both directions cross.  At most LOOP_MAX in LOOP_WINDOW, then
    none in as long again."""
    r = Runner(a)
    A, B = norm(a.server4), norm(a.peer4)
    cases = [
        ("version", b"version\r\n"),
        ("ERROR", b"ERROR\r\n"),
        ("get 150 bytes", b"get m\r\n"),
        ("unknown command", b"hello\r\n"),
        ("get 1000 bytes", b"get abuse-big\r\n"),
        ("get 3000 bytes", b"get abuse-huge\r\n"),
        ("stats", b"stats\r\n"),
    ]
    between = lambda p: ((norm(p[0]) == A and norm(p[1]) == B and p[2] == a.port and p[3] == a.peer_port) or
                         (norm(p[0]) == B and norm(p[1]) == A and p[2] == a.peer_port and p[3] == a.port))
    for name, text in cases:
        c = Case("loop (B port %d): %s" % (a.peer_port, name), text, None, slow=a.peer_port != a.port)
        payload = struct.pack("!HHHH", random.randrange(1, 0xFFFF), 0, 1, 0) + text
        before_a = counters(a.status)
        before_b = counters(a.peer_status)
        r.tap.drain()
        r.tap.send(udp_frame(a.peer_mac, a.server_mac, a.peer4, a.server4, a.peer_port, a.port, payload))
        first = r.tap.collect(between, LOOP_WINDOW, quiet=0)
        second = r.tap.collect(between, LOOP_WINDOW, quiet=0)
        after_a = counters(a.status)
        after_b = counters(a.peer_status)
        a_to_b = [p for p in first if norm(p[0]) == A]
        n_out = sum(len(p[4]) for p in first + second)
        errs = []
        if len(first) > LOOP_MAX:
            errs.append("%d datagrams in the first %.1f s, more than %d"
                        % (len(first), LOOP_WINDOW, LOOP_MAX))
        if second:
            errs.append("still going: %d datagram(s) in the next %.1f s" % (len(second), LOOP_WINDOW))
        dropped = fast_delta(before_a, after_a, "drop_port")
        if a.peer_port == a.port and dropped != 1:
            errs.append("server A: fast.drop_port +%d, expected +1" % dropped)
        b_served = served(before_b, after_b)
        r.amp_rows.append("%s|%d|%d|%d|-" % (c.name, len(payload), n_out, len(first) + len(second)))
        r.say(not errs, c, "; ".join(errs) if errs else
                "%d datagram(s) A->B, %d B->A, then none; B answered %d" %
                (len(a_to_b), len(first) - len(a_to_b), b_served))
    return r


# ---- seed and background ------------------------------------------------------------------

def run_seed(a):
    conn = rawclient.Conn(a.server4, a.port)
    bad = 0
    for k, v in SEEDS:
        try:
            got, _ = conn.ask(setreq(k, v))
            if got != b"STORED\r\n":
                raise Fail("set: %s" % show(got))
            got, _ = conn.ask(b"get " + k + b"\r\n")
            if got != full_get(k):
                raise Fail("get: %s" % show(got))
            print("PASS seed %-10s %d bytes" % (k.decode(), len(v)))
        except Fail as e:
            print("FAIL seed %s: %s" % (k.decode(), e))
            bad += 1
    return 1 if bad else 0


def run_background(a):
    """A trusted client that keeps checking it is served: gets of the seeded
    items (fast and slow path), sets and gets of its own 8 keys.  Counts
    timeouts, errors (a reply that is not the answer's form: an error line,
    a bad frame, NOT_STORED) and stale reads (a get answered well, but with
    another value or a miss: someone changed the store).  UDP may lose a
    datagram on a loaded machine (a veth ring full while an attack phase
    floods it): a request unanswered within 1 s is sent again once, as
    memcached UDP clients do (every request here is idempotent), and counted
    as "lost"; "timeouts" are requests unanswered twice (3 s in all)."""
    conn = rawclient.Conn(a.server4, a.port)
    stats = {"ops": 0, "errors": 0, "timeouts": 0, "lost": 0, "stale": 0, "first": None}
    deadline = time.monotonic() + a.max_seconds
    i = 0
    ready = False

    def op(req, want):
        stats["ops"] += 1
        try:
            try:
                got, _ = conn.recv_reply(conn.send(req), timeout=1.0)
            except Fail as e:
                if "no reply" not in str(e):
                    raise
                stats["lost"] += 1
                got, _ = conn.recv_reply(conn.send(req), timeout=2.0)
        except Fail as e:
            kind = "timeouts" if "no reply" in str(e) else "errors"
            stats[kind] += 1
            stats["first"] = stats["first"] or "%s: %s" % (show(req, 40), e)
            return
        if got != want:
            read = want.endswith(b"END\r\n") and (got.startswith(b"VALUE ") or got == b"END\r\n")
            stats["stale" if read else "errors"] += 1
            stats["first"] = stats["first"] or "%s: got %s" % (show(req, 40), show(got))

    while not os.path.exists(a.stop_file) and time.monotonic() < deadline:
        k = b"bg-%d" % (i % 8)
        v = b"bg-value-%d" % i
        op(setreq(k, v), b"STORED\r\n")
        op(b"get " + k + b"\r\n", hit(k, v) + b"END\r\n")
        op(b"get abuse-small m\r\n", full_get(b"abuse-small", b"m"))
        if i % 8 == 7:
            op(b"get abuse-big\r\n", full_get(b"abuse-big"))  # the slow path
        i += 1
        if i == 8 and not ready:
            with open(a.ready_file, "w") as f:
                f.write("ready\n")
            ready = True
        time.sleep(0.005)
    stats["seconds"] = round(time.monotonic() - deadline + a.max_seconds, 1)
    with open(a.out, "w") as f:
        json.dump(stats, f)
    return 0


# ---- main ------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["keys", "seed", "background", "phase"])
    ap.add_argument("phase", nargs="?", choices=sorted(PHASES) + ["loop"])
    ap.add_argument("--dev", help="this namespace's interface (capture, raw frames)")
    ap.add_argument("--port", type=int, default=11211)
    ap.add_argument("--server4")
    ap.add_argument("--server6")
    ap.add_argument("--server-mac")
    ap.add_argument("--src4", help="this host's IPv4 address")
    ap.add_argument("--src6", help="this host's IPv6 address")
    ap.add_argument("--victim4", help="spoof: an allowed, untrusted address that is not ours")
    ap.add_argument("--outside4", help="spoof: an address in no list")
    ap.add_argument("--inside4", help="spoof: an unused address in the server's subnet")
    ap.add_argument("--other4", help="notlocal: an address of the subnet that is not the server's")
    ap.add_argument("--other6")
    ap.add_argument("--peer4", help="loop: server B's address")
    ap.add_argument("--peer-mac")
    ap.add_argument("--peer-port", type=int)
    ap.add_argument("--peer-status", help="loop: shell command printing B's `xdpkv status --json`")
    ap.add_argument("--status", help="shell command printing `xdpkv status --json`")
    ap.add_argument("--amplification", type=int, default=10)
    ap.add_argument("--amp-log", help="append measured cases to this file")
    ap.add_argument("--stop-file")
    ap.add_argument("--ready-file")
    ap.add_argument("--out")
    ap.add_argument("--max-seconds", type=float, default=150)
    a = ap.parse_args()

    if a.mode == "keys":
        print(" ".join(k.decode() for k, _ in SEEDS))
        print(" ".join(k.decode() for k in EVIL_KEYS))
        return 0
    if a.mode == "seed":
        return run_seed(a)
    if a.mode == "background":
        if not (a.stop_file and a.out and a.ready_file):
            ap.error("background needs --stop-file, --out and --ready-file")
        return run_background(a)
    if not a.phase or not a.dev or not a.server4 or not a.server_mac:
        ap.error("phase needs NAME, --dev, --server4 and --server-mac")
    if a.phase == "loop":
        r = phase_loop(a)
    else:
        r = Runner(a)
        for c in PHASES[a.phase](a):
            try:
                r.run(c)
            except (Fail, OSError) as e:
                r.say(False, c, "error: %s" % e)
    if a.amp_log and r.amp_rows:
        with open(a.amp_log, "a") as f:
            f.write("".join(row + "\n" for row in r.amp_rows))
    print("phase %s: %d failure(s)%s" % (a.phase, r.failures,
          " (%d of them [slow path])" % r.slow_failures if r.slow_failures else ""))
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
