# SPDX-License-Identifier: MIT
"""Talking to a memcached-speaking server, and reading its replies as units.

A reply stream is cut into units: a line, or a VALUE/VA line with its data
block.  Units are normalised so that two servers' answers can be compared:
cas uniques become the order in which the batch first saw them (c#1, c#2…),
error lines keep their kind only (CLIENT_ERROR / SERVER_ERROR: wording may
differ), the spaces after a number are dropped (memcached's decr pads in
place, sometimes: see unpad), and seconds left (t<n>) are kept aside to be compared within a
tolerance (memcached's clock ticks in whole seconds).
"""
import re
import socket
import struct
import time

MN = b"MN\r\n"


def units(buf):
    """(units, rest): buf cut into whole units; rest is an incomplete tail."""
    out = []
    i = 0
    while True:
        j = buf.find(b"\r\n", i)
        if j < 0:
            return out, buf[i:]
        line = buf[i:j + 2]
        n = None
        t = line.split()
        if t and t[0] == b"VALUE" and len(t) >= 4 and t[3].isdigit():
            n = int(t[3])
        elif t and t[0] == b"VA" and len(t) >= 2 and t[1].isdigit():
            n = int(t[1])
        if n is None:
            out.append(line)
            i = j + 2
            continue
        end = j + 2 + n + 2
        if len(buf) < end:
            return out, buf[i:]
        out.append(buf[i:end])
        i = end


class Tcp:
    """One connection; send a segment, read its replies up to its MNs."""

    def __init__(self, host, port, timeout=2.0):
        self.addr = (host, port)
        self.timeout = timeout
        self.s = None
        self.closed = False

    def open(self):
        self.s = socket.create_connection(self.addr, timeout=self.timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.closed = False
        self.rest = b""

    def close(self):
        if self.s:
            self.s.close()
        self.s = None

    def exchange(self, data, mns):
        """Send data (ending with mn); the units up to its mns-th MN.  A
        server that closes or stays silent ends the list with a marker."""
        if self.s is None or self.closed:
            self.open()
        try:
            self.s.sendall(data)
        except OSError:
            self.closed = True
            return [b"<closed>"]
        got = []
        seen = 0
        buf = self.rest
        deadline = time.monotonic() + self.timeout
        while True:
            us, buf = units(buf)
            for u in us:
                got.append(u)
                if u == MN:
                    seen += 1
            if seen >= mns:
                self.rest = buf
                return got
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                return got + [b"<timeout>"]
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                self.close()
                return got + ([buf] if buf else []) + [b"<closed>"]
            buf += chunk


    def raw(self, data):
        """data on a connection of its own, half-closed after it: every byte
        the server sends until it closes, and how it ended (<raw-closed>,
        or <raw-timeout> when it kept the connection open past the timeout)."""
        s = socket.create_connection(self.addr, timeout=self.timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        got = b""
        try:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # it closed before taking everything: read what it said
            deadline = time.monotonic() + self.timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return got, b"<raw-timeout>"
                s.settimeout(left)
                try:
                    chunk = s.recv(1 << 20)
                except socket.timeout:
                    continue
                except OSError:
                    chunk = b""  # a reset: it closed with bytes unread
                if not chunk:
                    return got, b"<raw-closed>"
                got += chunk
        finally:
            s.close()


class Udp:
    """memcached's UDP framing: an 8-byte header (request id, sequence,
    datagram count, reserved) on every datagram; one request per datagram.
    After each request a `version` with its own id, the sentinel: a
    request's reply is what carries its id before the sentinel's reply.
    Both servers answer `version` in the one thread that answers every
    request the kernel does not (memcached -t 1; xdpkv serve's UDP loop),
    in the order they came, and a reply the XDP program sends goes out
    before the sentinel reaches userspace: when the sentinel's reply is
    in, so is every reply to what was sent before it, and a silent
    request (noreply, meta q) needs no grace period.
    memcached numbers a reply's datagrams "0 of 1" each (see take)."""

    def __init__(self, host, port, timeout=2.0):
        self.addr = (host, port)
        self.timeout = timeout
        self.s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.rid = 0
        self.pending = {}   # id -> {seq: text}, totals

    def close(self):
        self.s.close()

    def next_id(self):
        self.rid = (self.rid + 1) & 0xFFFF
        return self.rid

    def send(self, text):
        rid = self.next_id()
        self.s.sendto(struct.pack("!HHHH", rid, 0, 1, 0) + text, self.addr)
        return rid

    def recv_until(self, want, deadline):
        """Collect datagrams until every id in want is complete or deadline."""
        while True:
            if all(self.complete(r) for r in want):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.s.settimeout(left)
            try:
                d, _ = self.s.recvfrom(65536)
            except socket.timeout:
                return False
            if len(d) < 8:
                continue
            rid, seq, total, _ = struct.unpack("!HHHH", d[:8])
            ent = self.pending.setdefault(rid, [[], total])
            ent[0].append((seq, d[8:]))
            ent[1] = total

    def complete(self, rid):
        ent = self.pending.get(rid)
        return ent is not None and len(ent[0]) >= ent[1]

    def take(self, rid):
        ent = self.pending.pop(rid, None)
        if not ent:
            return b""
        # memcached 1.6.18 numbers each response object's datagrams on
        # their own (several "seq 0 of 1" in one reply): the order of
        # arrival (its one thread sends them in order, before the mn's reply)
        return b"".join(d for _, d in ent[0])

    def exchange_one(self, req):
        """The reply text of one request (b"" for none), or None: no
        sentinel reply (see the class)."""
        a = self.send(req)
        b = self.send(b"version\r\n")
        ok = self.recv_until([b], time.monotonic() + self.timeout)
        sentinel = self.take(b)
        text = self.take(a)
        late = bool(self.pending)  # a reply to an earlier request, after its sentinel's
        self.pending.clear()
        if late or not ok or not sentinel.startswith(b"VERSION ") or not sentinel.endswith(b"\r\n"):
            return None
        return text


# ---- normalising ----

NUM_T = re.compile(rb"^t(-?\d+)$")

# memcached's decr writes a shorter number in place padded with spaces, but
# only while no unsent response holds the item (its refcount); otherwise it
# stores the digits alone.  protocol.txt calls the padding "purely an
# implementation optimization", so the spaces after a number are dropped
# wherever they end up: alone, or inside a value an append or prepend grew.
PAD = re.compile(rb"([0-9]) +")


def unpad(value):
    """value with the spaces after each run of digits dropped."""
    return PAD.sub(rb"\1", value)


def norm_units(us, casmap):
    """The units as comparable tuples, and the list of seconds-left numbers."""
    out, secs = [], []
    for u in us:
        if u.startswith(b"CLIENT_ERROR"):
            out.append(b"CLIENT_ERROR")
            continue
        if u.startswith(b"SERVER_ERROR"):
            out.append(b"SERVER_ERROR")
            continue
        line_end = u.find(b"\r\n")
        line, data = u[:line_end], u[line_end + 2:]
        t = line.split(b" ")
        if t[0] == b"VALUE" and len(t) >= 4:
            body = unpad(data[:-2])
            t[3] = b"%d" % len(body)
            if len(t) >= 5:
                t[4] = casmap.setdefault(t[4], b"#%d" % (len(casmap) + 1))
            out.append(b" ".join(t) + b"|" + body)
            continue
        if len(t[0]) == 2 and t[0].isupper():  # a meta reply code
            body = None
            if t[0] == b"VA":
                body = unpad(data[:-2])
                t[1] = b"%d" % len(body)
            for i in range(1, len(t)):
                f = t[i]
                if f.startswith(b"c") and f[1:].isdigit():
                    t[i] = b"c" + casmap.setdefault(f[1:], b"#%d" % (len(casmap) + 1))
                elif NUM_T.match(f):
                    n = int(f[1:])
                    if n >= 0:
                        secs.append(n)
                        t[i] = b"t#"
                elif f.startswith(b"l") and f[1:].isdigit():
                    secs.append(int(f[1:]))  # mg l: seconds since the last access
                    t[i] = b"l#"
                elif f.startswith(b"s") and f[1:].isdigit() and body is not None:
                    t[i] = b"s%d" % len(body)
            out.append(b" ".join(t) + (b"|" + body if body is not None else b""))
            continue
        out.append(line.rstrip(b" ") if line.strip(b"0123456789 ") == b"" else line)
    return out, secs


def cas_seen(us, keys):
    """{key slot: cas} from gets/gats VALUE lines and meta replies with k and c."""
    idx = {k: i for i, k in enumerate(keys)}
    found = {}
    for u in us:
        line = u.split(b"\r\n", 1)[0]
        t = line.split(b" ")
        if t[0] == b"VALUE" and len(t) == 5 and t[1] in idx:
            found[idx[t[1]]] = t[4]
        elif len(t[0]) == 2 and t[0].isupper():
            k = c = None
            for f in t[1:]:
                if f.startswith(b"k"):
                    k = f[1:]
                elif f.startswith(b"c") and f[1:].isdigit():
                    c = f[1:]
            if k in idx and c is not None:
                found[idx[k]] = c
    return found
