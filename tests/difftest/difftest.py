#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential tester: the same random request streams to memcached and to
xdpkv, replies compared.

  difftest.py --mc HOST:PORT --xkv HOST:PORT [--proto tcp|udp] [--batches N]
              [--seed S] [--malformed] [--rule exact|lossy] [--json]

Each batch (gen.py) runs on ten fresh keys, pipelined over one TCP
connection per server (segments end with `mn`; a command that needs a cas
unique starts a new segment so each server gets its own), or one datagram
per request over UDP.  Its keys are deleted afterwards.  Replies are
normalised (wire.py) and compared:
  exact  every unit equal (authoritative layouts: hash_map, lru below
         capacity);
  lossy  xdpkv may answer a miss where memcached hits (array_fnv,
         set_assoc, sieve, s3fifo, arena): such a batch is counted as "lossy", not as a
         difference, when xdpkv's replies are a miss-for-hit variant.
With --malformed, xdpkv may also close the connection where memcached goes
on: then what it answered must equal memcached's answers up to there.  With
--edge (forms.py) it may not: only where both close ("closed": memcached
drops its unsent replies when it closes, so its answers may stop earlier).
A batch with an incr, decr or ma whose only difference is an `s` flag, a
number's length on memcached's side and more on xdpkv's, is counted
"padded": memcached stores a shorter number alone while an unsent response
holds the item, xdpkv pads it in place (protocol.txt leaves it open); an mg h
then shows memcached's new item unread (h0), xdpkv's with its mark (h1).
A differing batch is run twice more on fresh keys: if it agrees then, it is
counted "unstable" (a matter of timing, shown, not failed); otherwise it is
shrunk to a minimal one (fewest commands that still differ) and printed as
a Python bytes literal.
Exit status: 0 when no batch differed, 1 otherwise, 2 on a setup error.
"""
import argparse
import json
import random
import sys
import time

import binwire
import freshmc
import gen
import wire


def hostport(s):
    h, _, p = s.rpartition(":")
    return h.strip("[]"), int(p)


class Side:
    """One server: its connection and the current batch's cas uniques."""

    def __init__(self, name, addr, proto, timeout):
        self.name = name
        self.proto = proto
        self.conn = wire.Tcp(*addr, timeout=timeout) if proto == "tcp" else wire.Udp(*addr, timeout=timeout)

    def render(self, cmd, keys, cas):
        out = []
        for p in cmd:
            if isinstance(p, bytes):
                out.append(p)
            elif p[0] == "key":
                out.append(keys[p[1]])
            elif p[0] == "cas":
                out.append(cas.get(p[1], b"%d" % gen.UNKNOWN_CAS))
        return b"".join(out)

    def raw_units(self, cmd, keys):
        """A command of forms_conn's RAW kinds on a connection of its own."""
        data, end = self.conn.raw(self.render(cmd, keys, {}))
        return reply_units(data, cmd[0][1]) + [end]

    def run(self, batch, keys):
        """The batch's reply units (a <closed> or <timeout> marker ends them early)."""
        cas = {}
        got = []
        if self.proto == "udp":
            for cmd in batch:
                text = self.conn.exchange_one(self.render(cmd, keys, cas))
                if text is None:
                    return got + [b"<timeout>"]
                us = reply_units(text, cmd[0][1] if is_raw(cmd) else "text")
                cas.update(wire.cas_seen(us, keys))
                got += us
            return got
        seg = []
        for i, cmd in enumerate(batch + [None]):
            needs_cas = cmd is not None and any(isinstance(p, tuple) and p[0] == "cas" for p in cmd)
            raw = cmd is not None and is_raw(cmd)
            if seg and (cmd is None or needs_cas or raw):
                data = b"".join(self.render(c, keys, cas) for c in seg) + b"mn\r\n"
                mns = 1 + sum(1 for c in seg if makes_mn(c))
                us = self.conn.exchange(data, mns)
                cas.update(wire.cas_seen(us, keys))
                if us and us[-1] in (b"<closed>", b"<timeout>"):
                    return got + us
                got += us[:-1]  # the segment's own MN
                seg = []
            if raw:
                got += self.raw_units(cmd, keys)
            elif cmd is not None:
                seg.append(cmd)
        return got

    def cleanup(self, keys):
        if self.proto == "udp":
            for k in keys:
                self.conn.exchange_one(b"delete " + k + b"\r\n")
            return
        data = b"".join(b"delete " + k + b" noreply\r\n" for k in keys) + b"mn\r\n"
        us = self.conn.exchange(data, 1)
        if us[-1:] != [wire.MN]:
            self.conn.close()


def is_raw(cmd):
    """Is cmd one of forms_conn's, sent on a connection (or in a datagram) of its own?"""
    return isinstance(cmd[0], tuple) and cmd[0][0] == "raw"


def reply_units(data, kind):
    """A reply as units: text ones (wire.units, a cut tail last), or for
    binary ones, each response normalised (binwire.norm) as one unit."""
    if kind == "bin":
        return [b"BIN %r\r\n" % (r,) for r in binwire.norm(binwire.parse(data), {})]
    us, rest = wire.units(data)
    return us + ([rest] if rest else [])


def makes_mn(cmd):
    """Is cmd an mn (words after it are ignored: it answers MN all the same)?"""
    head = b"".join(p for p in cmd[:2] if isinstance(p, bytes))
    return head.startswith(b"mn\r\n") or head.startswith(b"mn ")


def same(a, b, tol=2):
    (ua, sa), (ub, sb) = a, b
    return ua == ub and len(sa) == len(sb) and all(abs(x - y) <= tol for x, y in zip(sa, sb))


def padded_size(a, b, batch):
    """The units agree but for `s` flags where memcached's item is a number's
    length and xdpkv's is longer, in a batch with an incr, decr or ma: the
    shorter number memcached stored alone (an unsent response held the item)
    and xdpkv padded in place; protocol.txt leaves the padding open."""
    if not any(isinstance(c[0], bytes) and c[0] in (b"incr ", b"decr ", b"ma ") for c in batch):
        return False
    (ua, sa), (ub, sb) = a, b
    if len(ua) != len(ub) or not same(([], sa), ([], sb)):
        return False
    for m, x in zip(ua, ub):
        if m == x:
            continue
        tm, tx = m.split(b" "), x.split(b" ")
        if len(tm) != len(tx):
            return False
        for p, q in zip(tm, tx):
            # memcached's new item is unread (h0) where xdpkv's kept its mark
            if p != q and not (p[:1] == q[:1] == b"s" and p[1:].isdigit() and q[1:].isdigit() and
                               int(p[1:]) <= 20 and int(q[1:]) > int(p[1:])) and \
                    not (p == b"h0" and q == b"h1"):
                return False
    return True


def miss_for_hit(mc, xk):
    """xdpkv's units differ from memcached's only where xdpkv missed."""
    if len(mc) != len(xk):
        return False
    for m, x in zip(mc, xk):
        if m == x:
            continue
        if x in (b"END", b"EN", b"NF", b"NOT_FOUND", b"NOT_STORED", b"NS") or x.startswith(b"EN "):
            continue
        return False
    return True


def first_diff(mu, xu):
    """Where the batch's two reply lists part (as first run, before shrinking)."""
    mn, xn = wire.norm_units(mu, {})[0], wire.norm_units(xu, {})[0]
    i = 0
    while i < min(len(mn), len(xn)) and mn[i] == xn[i]:
        i += 1
    return "  first difference at reply unit %d: memcached %r, xdpkv %r" % (
        i, mn[i][:200] if i < len(mn) else "(no more)", xn[i][:200] if i < len(xn) else "(no more)")


class Tester:
    def __init__(self, args):
        self.a = args
        self.mc = Side("memcached", hostport(args.mc), args.proto, args.timeout)
        self.xk = Side("xdpkv", hostport(args.xkv), args.proto, args.timeout)
        self.tag = 0
        self.keyrng = random.Random(args.seed ^ 0x5EED)
        self.prefix = "%x" % random.Random().randrange(1 << 32)

    def fresh_keys(self):
        self.tag += 1
        return gen.key_names(self.keyrng, "%s%d" % (self.prefix, self.tag))

    def trial(self, batch, mc=None):
        """'same', 'lossy', 'closed' (xdpkv closed, prefix agrees) or 'differ', and both sides
        (mc: the memcached to ask, by default the long-running one)."""
        mc = mc or self.mc
        keys = self.fresh_keys()
        mu = mc.run(batch, keys)
        xu = self.xk.run(batch, keys)
        mc.cleanup(keys)
        self.xk.cleanup(keys)
        mn, xn = wire.norm_units(mu, {}), wire.norm_units(xu, {})
        if same(mn, xn):
            return "same", keys, mu, xu
        if (self.a.malformed or self.a.edge) and xu and xu[-1] == b"<closed>" and mu[-1:] == [b"<closed>"]:
            # both closed: memcached drops the replies it had not sent yet
            # when it closes (conn_closing), so its answers may stop earlier
            k = len(mn[0]) - 1
            if xn[0][:k] == mn[0][:k]:
                return "closed", keys, mu, xu
            # and so does xdpkv where it closes as memcached does, on an HTTP
            # request line (forms.http_like): either may stop earlier then
            k = len(xn[0]) - 1
            if k < len(mn[0]) - 1 and xn[0][:k] == mn[0][:k] and any(
                    isinstance(p, bytes) and b"HTTP/" in p for c in batch if not is_raw(c) for p in c):
                return "closed", keys, mu, xu
        if self.a.malformed and not self.a.edge and xu and xu[-1] == b"<closed>":
            # xdpkv closed: what it answered before must be memcached's
            # answers (an error line last, before the close, may be its own)
            k = len(xn[0]) - 1
            if xn[0][k - 1:k] in ([b"CLIENT_ERROR"], [b"SERVER_ERROR"]):
                k -= 1
            if xn[0][:k] == mn[0][:k]:
                return "closed", keys, mu, xu
        if self.a.rule == "lossy" and miss_for_hit(mn[0], xn[0]):
            return "lossy", keys, mu, xu
        if padded_size(mn, xn, batch):
            return "padded", keys, mu, xu
        return "differ", keys, mu, xu

    def shrink(self, batch):
        """Fewer commands that still differ (ddmin, one command at a time at the end)."""
        n = 2
        while len(batch) >= 2:
            chunk = max(1, len(batch) // n)
            done = False
            for i in range(0, len(batch), chunk):
                cand = batch[:i] + batch[i + chunk:]
                if cand and self.trial(cand)[0] == "differ":
                    batch, n, done = cand, max(n - 1, 2), True
                    break
            if not done:
                if chunk == 1:
                    break
                n = min(len(batch), n * 2)
        return batch

    def past_item(self, batch):
        """Does a memcached that has served nothing else answer the shrunk
        batch as xdpkv does?  Then the long-running one's answer came from
        its own memory (freshmc.py says how; --mc-recheck)."""
        def agrees(addr, _t):
            fresh = Side("memcached (fresh)", addr, self.a.proto, self.a.timeout)
            try:
                return self.trial(batch, fresh)[0] != "differ"
            finally:
                fresh.conn.close()
        return bool(self.a.mc_recheck) and freshmc.any_agrees(agrees)

    def show(self, batch):
        verdict, keys, mu, xu = self.trial(batch)
        req = b"".join(self.mc.render(c, keys, {}) for c in batch)
        lines = ["  request   %r" % req,
                 "  memcached %r" % b"".join(mu),
                 "  xdpkv     %r" % b"".join(xu),
                 "  (%s on rerun; {cas} placeholders shown as %d)" % (verdict, gen.UNKNOWN_CAS)]
        return "\n".join(lines)

    def run(self):
        a = self.a
        rng = random.Random(a.seed)
        g = gen.Gen(rng, value_max=a.value_max, malformed=a.malformed, udp=a.proto == "udp", edge=a.edge,
                    known=a.known)
        counts = {"same": 0, "differ": 0, "lossy": 0, "closed": 0, "unstable": 0, "mc_memory": 0,
                  "padded": 0}
        failures = []
        t0 = last = time.monotonic()
        for i in range(a.batches):
            batch = g.batch()
            verdict, _, mu, xu = self.trial(batch)
            if verdict == "differ" and any(self.trial(batch)[0] != "differ" for _ in range(2)):
                # the same batch on fresh keys agrees: a difference of timing
                # (both servers' clocks, memcached's threads), not of protocol;
                # counted and shown, not failed
                verdict = "unstable"
                print("UNSTABLE batch %d (seed %d): agrees when run again\n%s"
                      % (i, a.seed, first_diff(mu, xu)), flush=True)
            small = self.shrink(batch) if verdict == "differ" else None
            if small is not None and self.past_item(small):
                # xdpkv agrees with a memcached whose memory is fresh
                verdict = "mc_memory"
                print("MC-MEMORY batch %d (seed %d; shrunk to %d commands): a fresh memcached "
                      "answers as xdpkv\n%s\n%s" % (i, a.seed, len(small), first_diff(mu, xu),
                                                    self.show(small)), flush=True)
            counts[verdict] += 1
            if verdict == "differ" and len(failures) < a.show:
                text = first_diff(mu, xu) + "\n" + self.show(small)
                failures.append(text)
                print("DIFF batch %d (seed %d; shrunk from %d to %d commands)\n%s"
                      % (i, a.seed, len(batch), len(small), text), flush=True)
            now = time.monotonic()
            if a.progress and now - last >= a.progress:
                last = now
                print("... %d/%d batches, %d differ (%.0f/s)" % (i + 1, a.batches, counts["differ"],
                                                                 (i + 1) / (now - t0)),
                      file=sys.stderr, flush=True)
        summary = {"proto": a.proto, "rule": a.rule, "malformed": a.malformed, "edge": a.edge,
                   "known": a.known, "seed": a.seed, "batches": a.batches, "seconds": round(time.monotonic() - t0, 1),
                   **counts, "categories": g.cats}
        if a.json:
            print(json.dumps(summary))
        print("%s %d batches (%s, seed %d%s): %d same, %d differ, %d lossy-only, %d closed by xdpkv, "
              "%d unstable (differed once, agreed when run again), %d memcached's memory "
              "(a fresh memcached answers as xdpkv), %d padded (a shorter number's size: "
              "memcached stored it alone, xdpkv padded it)"
              % ("PASS" if not counts["differ"] else "FAIL", a.batches, a.proto, a.seed,
                 ", malformed" if a.malformed else "", counts["same"], counts["differ"],
                 counts["lossy"], counts["closed"], counts["unstable"], counts["mc_memory"],
                 counts["padded"]))
        return 1 if counts["differ"] else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mc", required=True, help="memcached HOST:PORT")
    p.add_argument("--xkv", required=True, help="xdpkv HOST:PORT")
    p.add_argument("--mc-recheck", action="store_true",
                   help="re-check a differing batch against a memcached started for it "
                        "(freshmc.py): one it answers as xdpkv counts as memcached's memory, "
                        "not a difference")
    p.add_argument("--proto", choices=["tcp", "udp"], default="tcp")
    p.add_argument("--batches", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--malformed", action="store_true", help="mix in requests that are wrong on purpose")
    p.add_argument("--edge", action="store_true",
                   help="mix in the command forms of forms.py (memcached's parser: word counts, "
                        "number limits, HTTP-like and odd lines, stats, slabs, meta flags)")
    p.add_argument("--known", action="store_true",
                   help="with --edge, also the forms xdpkv is known to answer otherwise "
                        "(forms.KNOWN, forms_conn.KNOWN)")
    p.add_argument("--rule", choices=["exact", "lossy"], default="exact")
    p.add_argument("--value-max", type=int, default=20000)
    p.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for a reply")
    p.add_argument("--show", type=int, default=5, help="differing batches to shrink and print")
    p.add_argument("--progress", type=float, default=0, help="a progress line every N seconds")
    p.add_argument("--json", action="store_true", help="a JSON summary line")
    a = p.parse_args()
    try:
        return Tester(a).run()
    except OSError as e:
        print("difftest: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
