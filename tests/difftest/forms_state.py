# SPDX-License-Identifier: MIT
"""Command forms whose answer is state that memcached 1.6.18 keeps beside
an item or beside the store (proto_text.c process_mget_command's h and l,
process_stats_detail; stats_prefix.c; items.c do_item_bump):

- mg's h (has the item been fetched before: 0 or 1, set once by the first
  fetch that bumps it, not by one with u) and l (seconds since its last
  access; within the t tolerance, wire.py) on the batch's fresh keys, so
  that both servers' answers follow from the batch alone;
- stats detail on/off (OK) and dump: per-prefix get/hit/set/del counts of
  the text and binary get, storage and delete commands while detail is on.
  A dump is only sent after a stats reset (which clears the prefixes) and
  on one key slot (one prefix: the key up to its first ':', none without
  one), so that what it lists and in which order follows from the form.

A form may be several commands (MULTI first): over TCP the middle one is
sent on a connection of its own (forms_conn.RAW_TEXT: a lone get there may
be answered in the kernel, XDP), over UDP each is a datagram (the XDP fast
path answers a get alone in one), so that every read path is counted.
"""
import forms_conn

MULTI = ("multi",)


def _set(k, v=b"v"):
    return [b"set ", k, b" 0 0 %d\r\n" % len(v) + v + b"\r\n"]


def access(g):
    """set, then mg h/l around fetches with and without u, touch, gat."""
    r = g.r
    k = ("key", r.randrange(10))
    steps = _set(k)
    for _ in range(r.randrange(1, 5)):
        step = r.choice([
            [b"mg ", k, b" s t h"], [b"mg ", k, b" h l"], [b"mg ", k, b" h l u"], [b"mg ", k, b" h u v"],
            [b"mg ", k, b" l"], [b"mg ", k, b" h k O7"], [b"get ", k], [b"gets ", k], [b"touch ", k, b" 100"],
            [b"gat 100 ", k], [b"mg ", k, b" v"], [b"mg ", k, b" u"], [b"incr ", k, b" 1"],
            [b"append ", k, b" 0 0 1\r\nw"], [b"mg ", k, b" h q"], [b"md ", k, b" I"],
        ])
        steps += step + [b"\r\n"]
    steps += [b"mg ", k, b" h l t\r\n"]
    return steps


def access_xdp(g):
    """set; a lone get (XDP's to answer); mg h l: the kernel's read counts."""
    k = ("key", g.r.randrange(10))
    get = [b"get ", k, b"\r\n"]
    mid = [forms_conn.RAW_TEXT] + get if not g.udp else get
    return [MULTI, _set(k), mid, [b"mg ", k, b" h l s\r\n"], [b"mg ", k, b" h\r\n"]]


DETAIL = [b"stats detail on", b"stats detail off", b"stats detail on extra", b"stats detail off x",
          b"stats  detail  on"]


def detail(g):
    """stats detail on/off alone, or a dump after a reset on one key slot."""
    r = g.r
    if r.random() < 0.3:
        return [r.choice(DETAIL) + b"\r\n"]
    k = ("key", r.randrange(10))
    ops = []
    for _ in range(r.randrange(1, 6)):
        ops += r.choice([_set(k), [b"get ", k, b"\r\n"], [b"gets ", k, b" ", k, b"\r\n"],
                         [b"delete ", k, b"\r\n"], [b"add ", k, b" 0 0 1\r\nz\r\n"],
                         [b"gat 0 ", k, b"\r\n"], [b"mg ", k, b" v\r\n"], [b"incr ", k, b" 1\r\n"],
                         [b"touch ", k, b" 10\r\n"], [b"append ", k, b" 0 0 1\r\nw\r\n"],
                         [b"cas ", k, b" 0 0 1 4611686018427387905\r\nc\r\n"]])
    on = r.choice([b"stats detail on\r\n", b"stats detail off\r\n"])
    return [b"stats reset\r\n" + on] + ops + [b"stats detail dump\r\n" + r.choice(DETAIL) + b"\r\n"]


def detail_xdp(g):
    """A dump after a lone get (XDP's to answer) while detail is on."""
    k = ("key", g.r.randrange(10))
    get = [b"get ", k, b"\r\n"]
    mid = [forms_conn.RAW_TEXT] + get if not g.udp else get
    return [MULTI, [b"stats reset\r\nstats detail on\r\n"] + _set(k), mid,
            [b"stats detail dump\r\nstats detail off\r\n"]]


CATEGORIES = {"access": access, "access_xdp": access_xdp, "detail": detail, "detail_xdp": detail_xdp}
