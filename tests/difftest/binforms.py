# SPDX-License-Identifier: MIT
"""Binary request forms derived from how memcached 1.6.18 tells one frame
from another (proto_bin.c: try_read_command_binary reads the 24-byte
header, then its extras and key; dispatch_bin_command checks the lengths
for each opcode; process_bin_stat reads the STAT key by prefix: strncmp).

Each category is a function returning one edge command for bindiff.py:
("edge", key slot or None, frame(key, opaque) -> bytes, collapse, 0).
collapse: the responses are a stat group whose values differ between any
two servers (every counter, settings): compared as "one or more stats, then
the empty one" rather than value by value.  A frame that closes the
connection (0x04 or 0x81 on a malformed frame, a bad magic) ends the batch.
What is left out, and why, is LEFT_OUT.
"""
import struct

from binwire import frame

LEFT_OUT = {
    "an opcode memcached does not serve, with extras or a key":
        "memcached skips bodylen bytes after the extras and key it has read: "
        "docs/protocol.md, 'Binary protocol' (xdpkv skips the frame)",
    "stat, touch, gat with a value": "docs/protocol.md: 0x04 and closed here, memcached reads "
                                     "the value as the next request",
    "stat items, slabs, sizes, conns": "values that differ between any two servers, and "
                                       "'items' is empty or not as the memcached's history has it",
    "a frame cut short": "memcached waits for the rest: the text tester's first_bytes sends "
                         "such frames on a connection of their own, half-closed",
    "verbosity with its extras": "memcached 1.6.18 skips 4 bytes too many (docs/protocol.md)",
    "flush with a valid shape": "xdpkv's walk runs after the reply (bindiff.py's header)",
}


def _edge(k, fn, collapse=False):
    return ("edge", k, fn, collapse, 0)


SET_EXT = struct.pack(">II", 0, 0)
ARITH_EXT = struct.pack(">QQI", 1, 0, 0)


def bad_lengths(g):
    """A key longer than the body, key and extras longer than the body (the
    bytes all there: 0x81, closed), a key over 250 bytes (0x04, closed), no
    key where one is needed, a key where none may be (0x04, closed)."""
    r = g.r
    k = r.randrange(10)
    op = r.choice([0x00, 0x01, 0x04, 0x05, 0x0E, 0x1C, 0x0C])
    ext = {0x01: SET_EXT, 0x05: ARITH_EXT, 0x1C: b"\0\0\0\0"}.get(op, b"")
    kind = r.choice(["key>body", "key+ext>body", "long", "nokey", "keyed"])
    if kind == "key>body":
        return _edge(k, lambda key, o: frame(op, key, ext, opaque=o, bodylen=len(key) - 1))
    if kind == "key+ext>body":
        return _edge(k, lambda key, o: frame(op, key, ext, opaque=o,
                                             bodylen=len(key) + len(ext) - 1 if ext else len(key) - 1))
    if kind == "long":
        n = r.choice([251, 252, 300, 1000])
        return _edge(None, lambda key, o: frame(op, b"L" * n, ext, b"v" if op in (0x01, 0x0E) else b"",
                                                opaque=o))
    if kind == "nokey":
        return _edge(None, lambda key, o: frame(op, b"", ext, b"v" if op in (0x01, 0x0E) else b"",
                                                opaque=o))
    keyless = r.choice([0x0A, 0x0B, 0x07, 0x17])  # noop, version, quit, quitq with a key
    return _edge(k, lambda key, o: frame(keyless, key, opaque=o))


# opcode: the extras lengths memcached refuses for it (0x04, closed)
WRONG_EXT = {0x00: [4, 8], 0x01: [0, 4, 12], 0x02: [0, 4], 0x03: [4, 12], 0x04: [4, 8],
             0x05: [0, 8, 24], 0x06: [0, 4, 20 + 4], 0x0A: [4], 0x0B: [4], 0x0C: [4],
             0x0E: [4], 0x0F: [8], 0x07: [4], 0x1C: [0, 8], 0x1D: [0, 8], 0x23: [2],
             0x08: [1, 2, 8], 0x18: [3], 0x10: [4]}


def extras(g):
    """Each opcode with an extras length it does not take."""
    r = g.r
    op = r.choice(list(WRONG_EXT))
    n = r.choice(WRONG_EXT[op])
    keyless = op in (0x0A, 0x0B, 0x07, 0x08, 0x18, 0x10)
    val = b"v" if op in (0x01, 0x02, 0x03, 0x0E, 0x0F) else b""
    return _edge(None if keyless else r.randrange(10),
                 lambda key, o: frame(op, b"" if keyless else key, bytes(n), val, opaque=o))


UNSERVED = [0x1B, 0x1F, 0x20, 0x25, 0x30, 0x3D, 0x48, 0x7F, 0x80, 0x81, 0xFE, 0xFF]


def unknown_ops(g):
    """An opcode memcached does not serve, no extras, no key, a body of 0 to
    12 bytes: 0x81 "Unknown command", the body skipped, the stream in step."""
    r = g.r
    op = r.choice(UNSERVED)
    body = bytes(r.randrange(256) for _ in range(r.choice([0, 1, 3, 12])))
    return _edge(None, lambda key, o: frame(op, b"", b"", body, opaque=o))


# STAT keys: memcached compares "reset", "settings", "detail" by prefix
# (strncmp), the engine's groups whole; an unknown key is 0x01
STAT_KEYS = [b"", b"reset", b"settings", b"detail", b"detail foo", b"detailon", b"detail o",
             b"foo", b"RESET", b"conns", b"item", b"sizes_x", b"detailed", b"x" * 250,
             b"resetx", b"reset now", b"settingsx",  # memcached: reset, settings by prefix
             b"sizes_enable", b"sizes_disable"]
COLLAPSE = {b"", b"settings", b"settingsx"}
# what xdpkv answers otherwise today (found by this tester; generated with --known)
KNOWN_STAT_KEYS = []
KNOWN = {}


def stat_keys(g):
    """STAT with every key memcached tells apart."""
    key = g.r.choice(STAT_KEYS + (KNOWN_STAT_KEYS if g.known else []))
    return _edge(None, lambda _k, o: frame(0x10, key, opaque=o), key in COLLAPSE)


def detail(g):
    """STAT detail on/off/dump (memcached reads them by prefix): a dump
    only after a reset, on one key slot (forms_state.py says why)."""
    r = g.r
    if r.random() < 0.3:
        key = r.choice([b"detail on", b"detail off", b"detail onx", b"detail off now"])
        return _edge(None, lambda _k, o: frame(0x10, key, opaque=o))
    k = r.randrange(10)
    ext = struct.pack(">II", 0, 0)
    out = [_edge(None, lambda _k, o: frame(0x10, b"reset", opaque=o)),
           _edge(None, lambda _k, o, on=r.choice([b"detail on", b"detail off"]): frame(0x10, on, opaque=o))]
    for _ in range(r.randrange(1, 6)):
        out.append(r.choice([("set", k, ext, b"v", 0), ("get", k, b"", b"", 0), ("getk", k, b"", b"", 0),
                             ("delete", k, b"", b"", 0), ("append", k, b"", b"w", 0),
                             ("add", k, ext, b"a", 0), ("touch", k, b"\0\0\0\0", b"", 0),
                             ("gat", k, b"\0\0\0\0", b"", 0), ("getq", k, b"", b"", 0),
                             ("incr", k, struct.pack(">QQI", 1, 0, 0), b"", 0)]))
    out.append(_edge(None, lambda _k, o: frame(0x10, b"detail dump", opaque=o)))
    out.append(_edge(None, lambda _k, o: frame(0x10, b"detail off", opaque=o)))
    return out


def bad_magic(g):
    """A frame whose magic is not 0x80 where a request should start (a
    response's 0x81, text, zero): memcached closes without a word.  It
    starts a segment, so that every earlier response has been read."""
    r = g.r
    magic = r.choice([0x81, 0x00, 0x7F, ord("g"), 0xFF])
    return _edge(None, lambda key, o: frame(0x0A, opaque=o, magic=magic))


CATEGORIES = {
    "bad_lengths": bad_lengths,
    "extras": extras,
    "unknown_ops": unknown_ops,
    "stat_keys": stat_keys,
    "bad_magic": bad_magic,
    "detail": detail,
}
