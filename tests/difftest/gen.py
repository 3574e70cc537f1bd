# SPDX-License-Identifier: MIT
"""Random batches of memcached requests for the differential tester.

A batch is a list of commands over ten key slots.  A command is a list of
parts: bytes, ("key", i) for key slot i, or ("cas", i) for "the cas unique
this server last returned for key slot i" (resolved per server by the
driver, which ends the pipelined segment before such a command so that the
cas is known).  Keys are bound to real strings only when a batch is sent,
so a batch can be replayed (and shrunk) on fresh keys.

Only requests both servers must answer alike are generated; what differs
by design (docs/protocol.md: me, base64 keys, ms N in append mode)
is left out.  --malformed adds requests that are wrong on purpose.
"""
import random

import forms
import forms_state

NKEYS = 10
# key bytes memcached takes that protocol.txt calls control characters
CONTROL = bytes(c for c in range(1, 32) if c not in (10, 13)) + b"\x7f"
# The cas a command carries when the batch has not seen its key's: one no
# server gives out (a fresh memcached's counter starts at 1, so 1 would
# match there and nowhere else, and a re-check on a fresh memcached would
# differ where the long-running one agreed).
UNKNOWN_CAS = (1 << 62) + 1


class Gen:
    def __init__(self, rng, value_max=20000, malformed=False, udp=False, edge=False, known=False):
        self.r = rng
        self.known = known  # with edge: the forms xdpkv is known to answer otherwise (KNOWN)
        self.value_max = value_max
        self.malformed = malformed
        self.udp = udp
        self.edge = edge  # mix in forms.py's command forms
        self.categories = forms.categories(udp) if edge else {}
        self.cats = {name: 0 for name in self.categories}

    # ---- pieces ----
    def key(self):
        return ("key", self.r.randrange(NKEYS))

    def value(self):
        v = self.raw_value()
        # not white space alone: memcached's incr then reads past the value
        # (strtoull skips the item's \r\n too; docs/protocol.md)
        return v if not v or v.strip() else b"x" + v[1:]

    def raw_value(self):
        r = self.r
        p = r.random()
        if p < 0.25:  # a number (incr/decr fodder)
            return str(r.choice([0, 1, 9, 10, 99, 255, 2**32, 2**64 - 1, r.randrange(10**6)])).encode()
        if p < 0.3:
            return b""
        n = r.choice([r.randrange(1, 16), r.randrange(16, 200), r.randrange(200, 1100),
                      r.randrange(1, self.value_max + 1)])
        if r.random() < 0.5:
            return r.randbytes(n)  # binary-safe: any byte, \r\n and "END" included
        head = bytes(r.choice(b"abcdefghij0123456789 \r\n") for _ in range(min(n, 40)))
        return (head * (n // max(len(head), 1) + 1))[:n]

    def exptime(self):
        r = self.r
        return r.choice([0, 0, 0, 1000, r.randrange(100, 5000), -1])

    def flags(self):
        return self.r.choice([0, 0, 1, 42, 2**16 - 1, 2**32 - 1])

    def noreply(self):
        return [b" noreply"] if self.r.random() < 0.2 else []

    def opaque(self):
        return b"O" + str(self.r.randrange(10**6)).encode()

    def cas_arg(self, i):
        r = self.r
        return ("cas", i) if r.random() < 0.8 else str(r.choice([0, 1, r.randrange(10**9)])).encode()

    # ---- commands ----
    def c_store(self):
        r = self.r
        cmd = r.choice([b"set", b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
        k = r.randrange(NKEYS)
        v = self.value()
        parts = [cmd + b" ", ("key", k), b" %d %d %d" % (self.flags(), self.exptime(), len(v))]
        if cmd == b"cas":
            parts += [b" ", self.cas_arg(k)]
        return parts + self.noreply() + [b"\r\n" + v + b"\r\n"]

    def c_get(self):
        r = self.r
        cmd = r.choice([b"get", b"gets", b"gat", b"gats"])
        parts = [cmd]
        if cmd in (b"gat", b"gats"):
            parts.append(b" %d" % self.exptime())
        for _ in range(r.choice([1, 1, 1, 2, 3, 5])):
            parts += [b" ", self.key()]
        return parts + [b"\r\n"]

    def c_delete(self):
        return [b"delete ", self.key()] + self.noreply() + [b"\r\n"]

    def c_touch(self):
        return [b"touch ", self.key(), b" %d" % self.exptime()] + self.noreply() + [b"\r\n"]

    def c_arith(self):
        r = self.r
        d = r.choice([0, 1, 7, 1000, 2**63, 2**64 - 1])
        return [r.choice([b"incr ", b"decr "]), self.key(), b" %d" % d] + self.noreply() + [b"\r\n"]

    def c_mg(self):
        r = self.r
        k = r.randrange(NKEYS)
        fl = [f for f in (b"v", b"f", b"t", b"c", b"k", b"s", b"q", b"h", b"l", b"u") if r.random() < 0.4]
        if r.random() < 0.5:
            fl.append(self.opaque())
        if r.random() < 0.1:
            fl.append(b"T%d" % r.randrange(100, 5000))
        if r.random() < 0.1:
            fl.append(b"N%d" % r.randrange(100, 5000))
        r.shuffle(fl)
        return [b"mg ", ("key", k)] + [b" " + f for f in fl] + [b"\r\n"]

    def c_ms(self):
        r = self.r
        k = r.randrange(NKEYS)
        v = self.value()
        mode = r.choice([None, None, b"S", b"E", b"A", b"P", b"R"])
        fl = []
        if mode:
            fl.append(b"M" + mode)
        for f in (b"c", b"k", b"q"):
            if r.random() < 0.3:
                fl.append(f)
        if r.random() < 0.4:
            fl.append(self.opaque())
        if r.random() < 0.3:
            fl.append(b"F%d" % self.flags())
        if r.random() < 0.3:
            fl.append(b"T%d" % r.choice([0, r.randrange(100, 5000)]))
        parts = [b"ms ", ("key", k), b" %d" % len(v)] + [b" " + f for f in fl]
        if r.random() < 0.2:
            # with I a cas below the item's stores (stale): only the
            # server's own cas uniques compare alike on both servers
            stale = mode in (None, b"S", b"R") and r.random() < 0.3
            parts += [b" C", ("cas", k) if stale else self.cas_arg(k)]
            if stale:
                parts.append(b" I")
        return parts + [b"\r\n" + v + b"\r\n"]

    def c_md(self):
        r = self.r
        k = r.randrange(NKEYS)
        fl = [f for f in (b"q", b"k") if r.random() < 0.3]
        if r.random() < 0.4:
            fl.append(self.opaque())
        if r.random() < 0.15:
            fl.append(b"I")
            if r.random() < 0.5:
                fl.append(b"T%d" % r.randrange(100, 5000))
        parts = [b"md ", ("key", k)] + [b" " + f for f in fl]
        if r.random() < 0.15:
            parts += [b" C", self.cas_arg(k)]
        return parts + [b"\r\n"]

    def c_ma(self):
        r = self.r
        k = r.randrange(NKEYS)
        fl = [f for f in (b"v", b"t", b"c", b"k", b"q") if r.random() < 0.3]
        if r.random() < 0.4:
            fl.append(self.opaque())
        if r.random() < 0.5:
            fl.append(b"D%d" % r.choice([0, 1, 5, 2**63, 2**64 - 1]))
        if r.random() < 0.3:
            fl.append(b"M" + r.choice([b"I", b"D", b"+", b"-", b"i", b"d"]))
        if r.random() < 0.2:
            fl.append(b"N%d" % r.randrange(100, 5000))
            if r.random() < 0.7:
                fl.append(b"J%d" % r.choice([0, 13, 2**64 - 1]))
        parts = [b"ma ", ("key", k)] + [b" " + f for f in fl]
        if r.random() < 0.1:
            parts += [b" C", self.cas_arg(k)]
        return parts + [b"\r\n"]

    def c_misc(self):
        return [self.r.choice([b"mn\r\n", b"verbosity 1\r\n", b"verbosity 0 noreply\r\n"])]

    def c_bad(self):
        """A request that is wrong on purpose."""
        r = self.r
        k = self.key()
        return r.choice([
            [b"bogus command\r\n"],
            [b"get\r\n"],
            [b"incr ", k, b" abc\r\n"],
            [b"decr ", k, b" -1 noreply\r\n"],
            [b"touch ", k, b" x\r\n"],
            [b"set ", k, b" 0 0 3\r\nabcd\r\n"],           # data longer than said
            [b"set ", k, b" 0 0 5 noreply\r\nabc\r\n"],     # shorter: eats the next line
            [b"set ", k, b" x 0 1\r\nz\r\n"],
            [b"set ", k, b" 0 0 2000000\r\n" + b"x" * 2000000 + b"\r\n"],  # too large: swallowed
            [b"mg ", k, b" v zz\r\n"],
            [b"ms ", k, b" 2 MX\r\nab\r\n"],
            [b"ma ", k, b" Dx\r\n"],
            # not "get <251-byte key>": memcached 1.6.18 then drops the unsent
            # replies of the requests before it (docs/protocol.md)
            [b"verbosity\r\n"],
            [b"gets ", k, b"\n"],
            # field counts memcached 1.6.18 answers with ERROR, or reads
            # past (a last word other than noreply ignored; checked by hand)
            [b"incr ", k, b"\r\n"],
            [b"decr ", k, b" 1 2 3\r\n"],
            [b"incr ", k, b" 1 extra\r\n"],
            [b"touch ", k, b" 0 extra\r\n"],
            [b"touch ", k, b" 0 1 2\r\n"],
            [b"gat 10\r\n"],
            [b"verbosity noreply\r\n"],
            [b"verbosity x\r\n"],
            [b"verbosity 1 2\r\n"],
            [b"verbosity 1 2 3\r\n"],
            [b"flush_all soon\r\n"],
            [b"flush_all 0 0 0\r\n"],
            # delete's word counts and usage line, shutdown (checked by hand)
            [b"delete\r\n"],
            [b"delete ", k, b" 1\r\n"],
            [b"delete ", k, b" 0 0\r\n"],
            [b"delete ", k, b" 0 x\r\n"],
            [b"delete ", k, b" 1 noreply\r\n"],
            [b"delete ", k, b" 1 2 3\r\n"],
            [b"delete ", b"d" * 251, b"\r\n"],
            [b"shutdown\r\n"],
            [b"shutdown graceful\r\n"],
        ])

    def command(self):
        r = self.r
        if self.edge and r.random() < 0.2:
            name = r.choice(list(self.categories))
            self.cats[name] += 1
            return self.categories[name](self)
        if self.malformed and r.random() < 0.1:
            return self.c_bad()
        return r.choices(
            [self.c_store, self.c_get, self.c_delete, self.c_touch, self.c_arith,
             self.c_mg, self.c_ms, self.c_md, self.c_ma, self.c_misc],
            [30, 20, 6, 4, 8, 12, 10, 5, 6, 2])[0]()

    def batch(self):
        n = self.r.choice([1, 3, 5, 8, 12, 20, 30])
        out = []
        for _ in range(n):
            c = self.command()
            # forms_state: a form of several commands
            out += c[1:] if c[0] == forms_state.MULTI else [c]
        return out


def key_names(rng, tag):
    """Ten key strings of 6..250 bytes, unique to tag (a run counter).
    No '-' in a key: memcached 1.6.18's incr reads on past an item's value
    into its slab chunk looking for a '-' (freshmc.py), and keys with one
    put one there, so that even a fresh memcached answers "non-numeric"
    from the memory of the batch's own items.  A third of them carry
    control bytes and DEL too (not NUL, CR or LF), which memcached takes
    in a key, as xdpkv's default key rule does (memaslap's keys have them)."""
    keys = []
    for i in range(NKEYS):
        base = b"%s.%d." % (tag.encode(), i)
        n = rng.choice([6, 10, 16, 40, 100, 250])
        n = max(n, len(base))
        alphabet = b"abcdefghijklmnopqrstuvwxyz:_." + (CONTROL if rng.randrange(3) == 0 else b"")
        keys.append(base + bytes(rng.choice(alphabet) for _ in range(n - len(base))))
    return keys
