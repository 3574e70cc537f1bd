# SPDX-License-Identifier: MIT
"""memcached's binary protocol on a TCP connection: request frames, reading
responses, and responses normalised for comparison (cas uniques become the
order in which a batch first saw them, and the spaces after a number are
dropped, as wire.py does for text)."""
import socket
import struct
import time

from wire import unpad

HDR = struct.Struct(">BBHBBHIIQ")
NOOP = 0x0A
SYNC_OPAQUE = 0xFFFFFFFF


def frame(op, key=b"", ext=b"", val=b"", opaque=0, cas=0, magic=0x80, keylen=None, extlen=None,
          bodylen=None):
    """One request frame; keylen, extlen, bodylen (and magic) put other
    numbers in the header than the frame's own (binforms.py)."""
    kl = len(key) if keylen is None else keylen
    el = len(ext) if extlen is None else extlen
    bl = len(ext) + len(key) + len(val) if bodylen is None else bodylen
    return HDR.pack(magic, op, kl, el, 0, 0, bl, opaque, cas) + ext + key + val


class Res:
    """One response: opcode, status, extras, key, value, opaque, cas."""
    __slots__ = ("op", "status", "ext", "key", "val", "opaque", "cas")

    def __init__(self, op, status, ext, key, val, opaque, cas):
        self.op, self.status, self.ext, self.key, self.val = op, status, ext, key, val
        self.opaque, self.cas = opaque, cas

    def __repr__(self):
        return "Res(op=%#x st=%#x ext=%s key=%r val=%r opq=%d cas=%d)" % (
            self.op, self.status, self.ext.hex(), self.key, self.val[:40], self.opaque, self.cas)


class Conn:
    """One connection.  exchange(data): send frames ending with a noop of
    opaque SYNC_OPAQUE, read responses up to its answer.  A server that
    closes or stays silent ends the list with "<closed>" / "<timeout>"."""

    def __init__(self, host, port, timeout=2.0):
        self.addr, self.timeout, self.s, self.buf = (host, port), timeout, None, b""

    def close(self):
        if self.s:
            self.s.close()
        self.s, self.buf = None, b""

    def _read(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.s.settimeout(left)
            b = self.s.recv(1 << 20)
            if not b:
                raise ConnectionError
            self.buf += b
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def ensure(self):
        if self.s is None:
            self.s = socket.create_connection(self.addr, timeout=self.timeout)
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send_to_close(self, data):
        """Send data (ending with a quit); every byte until the server closes."""
        self.ensure()
        got = b""
        try:
            self.s.sendall(data)
            self.s.settimeout(self.timeout)
            while True:
                b = self.s.recv(1 << 20)
                if not b:
                    break
                got += b
        except (ConnectionResetError, BrokenPipeError):
            pass  # closed with bytes of ours unread (after an error frame): a close
        except OSError:
            got += b"<timeout>"
        self.close()
        return got

    def exchange(self, data):
        self.ensure()
        got = []
        deadline = time.monotonic() + self.timeout
        try:
            self.s.sendall(data + frame(NOOP, opaque=SYNC_OPAQUE))
            while True:
                magic, op, kl, el, _, st, bl, opq, cas = HDR.unpack(self._read(24, deadline))
                body = self._read(bl, deadline)
                if magic != 0x81:
                    got.append("<bad magic>")
                    self.close()
                    return got
                if op == NOOP and opq == SYNC_OPAQUE:
                    return got
                got.append(Res(op, st, body[:el], body[el:el + kl], body[el + kl:], opq, cas))
        except (ConnectionError, OSError) as e:
            self.close()
            got.append("<timeout>" if isinstance(e, (TimeoutError, socket.timeout)) else "<closed>")
            return got


def parse(data):
    """Whole responses in data (a cut tail as "<cut>")."""
    out, i = [], 0
    while i + 24 <= len(data):
        magic, op, kl, el, _, st, bl, opq, cas = HDR.unpack_from(data, i)
        if magic != 0x81 or i + 24 + bl > len(data):
            out.append("<cut>")
            return out
        body = data[i + 24:i + 24 + bl]
        out.append(Res(op, st, body[:el], body[el:el + kl], body[el + kl:], opq, cas))
        i += 24 + bl
    if i < len(data):
        out.append("<cut>")
    return out


def norm(rs, casmap):
    """Responses as comparable tuples; cas uniques as c1, c2... in order of
    first sight (casmap: shared by the batch's segments, per server)."""
    out = []
    for r in rs:
        if isinstance(r, str):
            out.append(r)
            continue
        c = 0
        if r.cas:
            c = casmap.setdefault(r.cas, len(casmap) + 1)
        val = unpad(r.val)
        out.append((r.op, r.status, r.ext, r.key, val, r.opaque, c))
    return out
