#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential tester, binary protocol: the same random binary request
streams to memcached and to xdpkv over TCP, responses compared.

  bindiff.py --mc HOST:PORT --xkv HOST:PORT [--batches N] [--seed S]
             [--rule exact|lossy] [--json]

Each batch runs on ten fresh keys (gen.key_names), pipelined on one
connection per server in segments that end with a noop; a command that
needs a cas unique starts a new segment, so that each server gets the one
it gave.  Opcodes: get/getq/getk/getkq, set/add/replace (with and without
cas) and their quiet forms, append/prepend(q) (with and without cas),
delete(q) (with and without cas), incr/decr(q) with initial value and
expiry (0xffffffff: no create), touch, gat/gatq/gatk/gatkq, noop,
quit/quitq last in a batch.  Left out, as they differ by design
(docs/protocol.md, "Binary protocol"): version (the string), stat (the
values), verbosity (memcached 1.6.18 answers 0x81 and skips 4 bytes too
many), and flush, as the text tester leaves out flush_all: xdpkv's walk runs
after the reply and may remove an item written just after it
(docs/protocol.md, "flush_all").  Responses are compared as tuples (opcode, status, extras, key,
value, opaque, cas order id: wire.py's idea).  lossy: xdpkv may answer
"not found" (0x01) or "not stored" (0x05) where memcached did not
(array_fnv, set_assoc, arena); such a batch is counted, not failed.  A
differing batch is run twice more on fresh keys: if it agrees then, it is
counted "unstable" (timing, as difftest.py counts it), shown, not failed.
Exit status: 0 when no batch differed, 1 otherwise, 2 on a setup error.
"""
import argparse
import json
import random
import struct
import sys
import time

import binforms
import binwire
import freshmc
import gen

OPS = {"get": 0x00, "set": 0x01, "add": 0x02, "replace": 0x03, "delete": 0x04, "incr": 0x05,
       "decr": 0x06, "quit": 0x07, "flush": 0x08, "getq": 0x09, "noop": 0x0A, "getk": 0x0C,
       "getkq": 0x0D, "append": 0x0E, "prepend": 0x0F, "setq": 0x11, "addq": 0x12,
       "replaceq": 0x13, "deleteq": 0x14, "incrq": 0x15, "decrq": 0x16, "quitq": 0x17,
       "flushq": 0x18, "appendq": 0x19, "prependq": 0x1A, "touch": 0x1C, "gat": 0x1D,
       "gatq": 0x1E, "gatk": 0x23, "gatkq": 0x24}


class BinGen:
    """A command: (op name, key slot or None, extras, value, cas) where cas
    is 0, an int (stale on purpose), or "real" (this server's last cas for
    the slot, resolved when sent)."""

    def __init__(self, rng, value_max, edge=False, known=False):
        self.r = rng
        self.known = known  # with edge: binforms.KNOWN's frames too
        self.g = gen.Gen(rng, value_max=value_max)
        self.edge = edge  # mix in binforms.py's frames
        self.cats = {name: 0 for name in binforms.CATEGORIES} if edge else {}

    def cas(self):
        return self.r.choice([0, 0, 0, "real", "real", 12345])

    def exp(self):
        return self.r.choice([0, 0, 1000, 100000])

    def command(self):
        r = self.r
        if self.edge and r.random() < 0.15:
            name = r.choice(list(binforms.CATEGORIES))
            self.cats[name] += 1
            return binforms.CATEGORIES[name](self)
        k = r.randrange(gen.NKEYS)
        kind = r.choices(["get", "store", "cat", "delete", "arith", "touch", "misc"],
                         [25, 25, 8, 8, 14, 10, 3])[0]
        if kind == "get":
            return (r.choice(["get", "getq", "getk", "getkq"]), k, b"", b"", 0)
        if kind == "store":
            op = r.choice(["set", "add", "replace"]) + r.choice(["", "q"])
            ext = struct.pack(">II", self.g.flags(), self.exp())
            return (op, k, ext, self.g.value(), self.cas())
        if kind == "cat":
            return (r.choice(["append", "prepend"]) + r.choice(["", "q"]), k, b"", self.g.value(),
                    r.choice([0, 0, "real", 12345]))
        if kind == "delete":
            return (r.choice(["delete", "deleteq"]), k, b"", b"", r.choice([0, 0, 0, "real", 12345]))
        if kind == "arith":
            delta = r.choice([0, 1, 5, 1000, 2**63, 2**64 - 1])
            init = r.choice([0, 7, 2**64 - 1, r.randrange(10**6)])
            ext = struct.pack(">QQI", delta, init, r.choice([0, 0, 1000, 0xFFFFFFFF]))
            return (r.choice(["incr", "decr"]) + r.choice(["", "q"]), k, ext, b"",
                    r.choice([0, 0, 0, "real"]))
        if kind == "touch":
            return (r.choice(["touch", "gat", "gatq", "gatk", "gatkq"]), k,
                    struct.pack(">I", self.exp()), b"", 0)
        return ("noop", None, b"", b"", 0)

    def batch(self):
        n = self.r.choice([1, 3, 5, 8, 12, 20, 30])
        b = []
        for _ in range(n):
            c = self.command()
            b += c if isinstance(c, list) else [c]  # binforms: a form of several frames
        if self.r.random() < 0.03:
            b.append((self.r.choice(["quit", "quitq"]), None, b"", b"", 0))
        return b


class Side:
    def __init__(self, addr, timeout):
        self.conn = binwire.Conn(*addr, timeout=timeout)

    def run(self, batch, keys):
        """Every response of the batch, normalised; cas ids per batch."""
        lastcas, casmap, got, seg = {}, {}, [], []

        def flush_seg():
            rs = self.conn.exchange(b"".join(seg))
            for x in rs:
                if (not isinstance(x, str) and x.cas and x.opaque < len(batch)
                        and batch[x.opaque][1] is not None):
                    lastcas[batch[x.opaque][1]] = x.cas
            got.extend(collapse_stats(binwire.norm(rs, casmap), batch))
            seg.clear()
            return rs and isinstance(rs[-1], str)

        for i, (op, k, ext, val, cas) in enumerate(batch):
            if (cas == "real" or op == "edge") and seg and flush_seg():
                return got
            if op == "edge":  # binforms.py: the frame is its own
                seg.append(ext(keys[k] if k is not None else b"", i))
                continue
            c = lastcas.get(k, gen.UNKNOWN_CAS) if cas == "real" else cas
            seg.append(binwire.frame(OPS[op], keys[k] if k is not None else b"", ext, val, i, c))
            if op in ("quit", "quitq"):  # the last: the server closes after it
                # the responses before the quit's, then the quit's own (or none), then the close
                got.extend(collapse_stats(binwire.norm(binwire.parse(self.conn.send_to_close(b"".join(seg))),
                                                       casmap), batch))
                return got + ["<closed>"]
        if seg:
            flush_seg()
        return got

    def cleanup(self, keys):
        self.conn.exchange(b"".join(binwire.frame(OPS["deleteq"], k) for k in keys))


def collapse_stats(rs, batch):
    """The stat responses of a binforms stat whose values differ between
    servers (collapse): one ("stats",) for the named ones, the empty one kept."""
    out = []
    for x in rs:
        if (isinstance(x, tuple) and x[5] < len(batch) and batch[x[5]][0] == "edge" and batch[x[5]][3]
                and x[0] == 0x10 and x[1] == 0 and x[3]):
            if out[-1:] != [("stats",)]:
                out.append(("stats",))
            continue
        out.append(x)
    return out


def trial(mc, xk, batch, keys, rule):
    """The batch on both servers: verdict, memcached's and xdpkv's responses."""
    m, x = mc.run(batch, keys), xk.run(batch, keys)
    mc.cleanup(keys)
    xk.cleanup(keys)
    v = "same" if m == x else "lossy" if rule == "lossy" and lossy_only(m, x) else "differ"
    return v, m, x


def fresh_agrees(xk, batch, keys, i, a):
    """Does a memcached that has served nothing else answer the batch as
    xdpkv does (freshmc.py: then the difference was memcached's memory)?
    Up to freshmc.TRIES of them, each on keys of its own of the same lengths
    (an item's size decides which chunk it gets and what lies past it)."""
    def agrees(addr, t):
        fresh = Side(addr, a.timeout)
        try:
            return trial(fresh, xk, batch, [b"m%d" % t + k[2:] for k in keys], a.rule)[0] != "differ"
        finally:
            fresh.conn.close()
    return freshmc.any_agrees(agrees)


ARITH_OPS = (0x05, 0x06, 0x15, 0x16)  # incr, decr, incrq, decrq


def mc_reads_past(m, x):
    """memcached's safe_strtoull looks for a '-' with strchr when a number
    is 2^63 or more, past the item's end, into whatever memory follows (the
    next item's bytes, from this very batch): its first differing response
    is then 0x06 Non-numeric to an incr or decr that xdpkv ran (its own
    answer at that request: success, or none for a quiet one)."""
    j = next((n for n, (u, w) in enumerate(zip(m, x)) if u != w), min(len(m), len(x)))
    if j >= len(m) or not isinstance(m[j], tuple) or m[j][0] not in ARITH_OPS or m[j][1] != 6:
        return False
    mine = [r for r in x if isinstance(r, tuple) and r[5] == m[j][5]]
    return not mine or mine[0][1] == 0


def lossy_only(m, x):
    if len(m) != len(x):
        return False
    for a, b in zip(m, x):
        if a != b and not (isinstance(b, tuple) and len(b) == 7 and b[1] in (0x01, 0x05)):
            return False
    return True


def hostport(s):
    h, _, p = s.rpartition(":")
    return h.strip("[]"), int(p)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mc", required=True)
    p.add_argument("--xkv", required=True)
    p.add_argument("--mc-recheck", action="store_true",
                   help="re-check a differing batch against a memcached started for it "
                        "(freshmc.py): one it answers as xdpkv counts as memcached's memory")
    p.add_argument("--batches", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rule", choices=["exact", "lossy"], default="exact")
    p.add_argument("--value-max", type=int, default=20000)
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("--show", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("--edge", action="store_true",
                   help="mix in binforms.py's frames (lengths, extras, opcodes, STAT keys, magic)")
    p.add_argument("--known", action="store_true",
                   help="with --edge, also the frames xdpkv is known to answer otherwise (binforms.KNOWN)")
    p.add_argument("--only", type=int, default=-1, help="run batch N of the seed alone, and print both sides")
    a = p.parse_args()
    rng = random.Random(a.seed)
    keyrng = random.Random(a.seed ^ 0xB1)
    prefix = "b%x" % random.Random().randrange(1 << 32)
    g = BinGen(rng, a.value_max, a.edge, a.known)
    try:
        mc, xk = Side(hostport(a.mc), a.timeout), Side(hostport(a.xkv), a.timeout)
        counts = {"same": 0, "differ": 0, "lossy": 0, "unstable": 0, "mc_memory": 0}
        t0 = time.monotonic()
        for i in range(a.batches):
            batch = g.batch()
            keys = gen.key_names(keyrng, "%s%d" % (prefix, i))
            keys = [k[:250] for k in keys]
            if a.only >= 0 and i != a.only:
                continue
            v, m, x = trial(mc, xk, batch, keys, a.rule)
            if a.only >= 0:
                print("batch %d: %r\nkeys %r\nmemcached %r\nxdpkv     %r" % (i, batch, keys, m, x))
            if v == "differ" and any(trial(mc, xk, batch, [b"r%d." % n + k[:246] for k in keys],
                                           a.rule)[0] != "differ" for n in range(2)):
                # agrees on fresh keys: a matter of timing, as the text tester
                # counts it (memcached pads a decr's shorter number in place
                # only while no unsent response holds the item), shown, not failed
                v = "unstable"
                at = next((j for j, (p, q) in enumerate(zip(m, x)) if p != q), min(len(m), len(x)))
                print("UNSTABLE batch %d (seed %d): agrees when run again\n  first difference at "
                      "response %d: memcached %r, xdpkv %r" % (i, a.seed, at, m[at:at + 1], x[at:at + 1]),
                      flush=True)
            if v == "differ" and mc_reads_past(m, x):
                v = "mc_memory"
                print("MC-MEMORY batch %d (seed %d): memcached's 0x06 to an incr of a number >= 2^63 "
                      "(its strchr past the item)" % (i, a.seed), flush=True)
            if v == "differ" and a.mc_recheck and fresh_agrees(xk, batch, keys, i, a):
                # a memcached that has served nothing else answers as xdpkv
                v = "mc_memory"
                print("MC-MEMORY batch %d (seed %d): a fresh memcached answers as xdpkv"
                      % (i, a.seed), flush=True)
            counts[v] += 1
            if v == "differ" and counts["differ"] <= a.show:
                j = next((n for n, (u, w) in enumerate(zip(m, x)) if u != w), min(len(m), len(x)))
                print("DIFF batch %d (seed %d): %s\n  first difference at response %d:\n"
                      "  memcached %r\n  xdpkv     %r"
                      % (i, a.seed, [c[0] if c[0] != "edge" else c[2](b"K", n)[:60]
                                      for n, c in enumerate(batch)], j,
                         m[j] if j < len(m) else "(no more)", x[j] if j < len(x) else "(no more)"),
                      flush=True)
    except OSError as e:
        print("bindiff: %s" % e, file=sys.stderr)
        return 2
    summary = {"proto": "binary", "rule": a.rule, "edge": a.edge, "known": a.known, "seed": a.seed,
               "batches": a.batches, "seconds": round(time.monotonic() - t0, 1), **counts}
    if a.edge:
        summary["categories"] = g.cats
    if a.json:
        print(json.dumps(summary))
    print("%s %d binary batches (seed %d): %d same, %d differ, %d lossy-only, %d unstable "
          "(differed once, agreed when run again), %d memcached's memory (a fresh memcached "
          "answers as xdpkv)"
          % ("PASS" if not counts["differ"] else "FAIL", a.batches, a.seed, counts["same"],
             counts["differ"], counts["lossy"], counts["unstable"], counts["mc_memory"]))
    return 1 if counts["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
