# SPDX-License-Identifier: MIT
"""Command forms derived from how memcached 1.6.18's text parser tells one
request from another (proto_text.c: process_command_ascii, the
WANT_TOKENS* word counts, safe_strtol / safe_strtoul / safe_strtoull, the
HTTP check of an unknown line, process_stat, the slabs and meta parsers).

Each category is a function returning one command (gen.py's parts list);
CATEGORIES names them for the tester's counts.  Only forms both servers
must answer alike are made: what xdpkv answers otherwise by design
(docs/protocol.md, "Where memcached differs") is left out, each with its
reason in LEFT_OUT.
"""
import forms_conn
import forms_state

# Numbers at and past each limit memcached's readers have: int32 (safe_strtol
# stores into an int32_t), uint32, INT_MAX - 2 for <bytes>, long and
# unsigned long (strtol / strtoul's ERANGE), signs, leading zeros, junk.
NUMBERS = [b"0", b"1", b"-1", b"-0", b"+1", b"+0", b"01", b"007", b"2147483645", b"2147483646",
           b"2147483647", b"2147483648", b"-2147483648", b"-2147483649", b"4294967295",
           b"4294967296", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
           b"-9223372036854775809", b"18446744073709551615", b"18446744073709551616", b"1x",
           b"x1", b"0x10", b"1.5", b"-", b"+", b"--1", b"1e3"]

# <bytes> values left out: memcached cuts them to 32 bits (4294967296 and
# -9223372036854775808 read as 0 there, xdpkv refuses them), or swallows a
# block of 2 GB that never comes (2147483645: both wait for it, and the
# connection is spent)
BYTES = [n for n in NUMBERS if n not in (b"2147483645", b"4294967296", b"-9223372036854775808")]

# what the generator leaves out, and why (docs/protocol.md)
LEFT_OUT = {
    "<bytes> wider than 32 bits that memcached cuts to a valid length (4294967300 = 4)":
        "xdpkv refuses it (the format error): a client meaning 4 GB gets 4 bytes there",
    "flags or exptime wider than 64 bits": "both refuse; same answer, not generated",
    "a <bytes> of 2147483645": "a 2 GB block both servers wait for: the connection is spent",
    "ms N in append or prepend mode": "xdpkv creates the item, as later 1.6 releases; 1.6.18 answers NS",
    "stats, stats settings/items/slabs/conns/sizes": "values differ (pid, time, sizes): not comparable",
    "stats cachedump <class> <limit>": "memcached lists a slab class's items; xdpkv has not those classes",
    "stats detail dump without a stats reset before it, or over several key prefixes":
        "it lists every prefix since the last reset (memcached's outlives a layout's run), "
        "in the order of memcached's hash table",
    "b (base64 keys) in the meta forms": "xdpkv decodes strictly (padding, the key rule), "
                                        "memcached loosely: the answer depends on the key drawn",
    "NUL in a line": "the map key is zero padded: xdpkv refuses it in a key, memcached ends the line",
    "slabs reassign between classes 3..63": "memcached has ~40 classes, xdpkv 1 or 2",
    "a multi-get with a key over 250 bytes behind other requests":
        "memcached drops the replies it has not sent yet, as many as its reads gathered "
        "(forms_conn.key_limits sends such a get after an mn)",
    "a line of 2049 to 16384 bytes with no newline in its first 2048 that is not a get":
        "memcached closes or answers it as its reads of the line happen to end "
        "(forms_conn sends such lines past 16384 bytes, on a connection of their own)",
    "over UDP: a multi-get of more than 256 keys": "xdpkv's --max-keys over UDP (docs/protocol.md)",
    "over UDP: a line ended by a bare \\n, a datagram's last line without its newline":
        "xdpkv answers CLIENT_ERROR line not terminated (docs/protocol.md)",
    "over UDP: a data block shorter than its line says": "memcached waits for the rest in "
                                                        "the next datagram; xdpkv refuses it",
    "over UDP: a binary frame memcached refuses as malformed (0x04, 0x81 and a close)":
        "memcached's UDP connection keeps the close: every later datagram is answered up to its "
        "first reply only (selfcheck.sh found it)",
    "over UDP: several binary frames in a datagram": "memcached answers the second or not as "
                                                     "its past has it; a fresh one does",
    "lru_crawler, lru, watch, cache_memlimit, extstore": "subsystems xdpkv has not",
    "a data block read as commands that starts like a reply (a number, END, STORED, ...)":
        "the loop guard (docs/security.md): xdpkv answers nothing and closes, memcached ERROR",
    "flush_all with a delay": "it lands in a later batch at a moment each server's clock sees "
                              "differently (tested by hand and in the tcp pass)",
}


def _num(r):
    return r.choice(NUMBERS)


def _noise(r):
    return r.choice([b"x", b"noreply", b"0", b"1", b"-1", b"abc"])


def storage_fields(g):
    """set/add/replace/append/prepend/cas with 3 to 9 words, each number a
    limit value, the data block sent as the line says (or a short one)."""
    r = g.r
    cmd = r.choice([b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
    k = r.randrange(10)
    want = 5 if cmd != b"cas" else 6
    n = r.choice([want, want, want + 1, want - 1, want - 2, want + 2, want + 3])
    # letters only: a refused line's block is read as commands, and a line
    # of it that reads as a reply (a number, END, ...) meets the loop guard
    # (LEFT_OUT); the other passes send any bytes
    v = bytes(r.choice(b"abcdefghij") for _ in range(r.choice([0, 1, 5, 20, 64])))
    nums = [b"%d" % g.flags(), b"%d" % g.exptime(), b"%d" % len(v), b"1"]
    for i in range(len(nums)):
        if r.random() < 0.35:
            nums[i] = r.choice(BYTES) if i == 2 else _num(r)
    words = [cmd + b" ", ("key", k)]
    for i in range(n - 2):
        words.append(b" " + (nums[i] if i < len(nums) else _noise(r)))
    if r.random() < 0.2 and n >= want:
        words.append(b" noreply")
    # the block: as long as the line says when that is a small number
    try:
        bl = int(nums[2]) if n >= 5 else None
    except ValueError:
        bl = None
    data = v if bl is None or bl < 0 or bl > 64 else (v + b"z" * 64)[:bl]
    return words + [b"\r\n" + data + b"\r\n"]


def other_fields(g):
    """The other classic commands with too few, too many and malformed
    words (memcached's WANT_TOKENS* counts: incr/decr/touch 3-4,
    delete 2-4, flush_all 1-3, verbosity 2-3, gat/gats 2+)."""
    r = g.r
    k = ("key", r.randrange(10))
    cmd = r.choice([b"incr", b"decr", b"touch", b"delete", b"verbosity", b"gat", b"gats",
                    b"get", b"gets", b"bget", b"mn", b"version", b"flush_all"])
    n = r.randrange(0, 5)
    parts = [cmd]
    if cmd not in (b"verbosity", b"flush_all", b"mn", b"version") and n and r.random() < 0.8:
        parts += [b" ", k]
        n -= 1
    for _ in range(n):
        if cmd == b"flush_all":
            # now or never: a delayed flush would land in a later batch, at a
            # moment the two servers' clocks see differently
            parts.append(b" " + r.choice([b"0", b"-1", b"+0", b"-0", b"noreply", b"x", b"0x1", b"-5"]))
        else:
            parts.append(b" " + (_num(r) if r.random() < 0.6 else _noise(r)))
    return parts + [b"\r\n"]


def numbers(g):
    """One number field of a well-formed command at or past a limit."""
    r = g.r
    k = ("key", r.randrange(10))
    x = _num(r)
    return r.choice([
        [b"set ", k, b" " + x + b" 0 1\r\nv\r\n"],
        [b"set ", k, b" 0 " + x + b" 1\r\nv\r\n"],
        [b"touch ", k, b" " + x + b"\r\n"],
        [b"gat " + x + b" ", k, b"\r\n"],
        [b"incr ", k, b" " + x + b"\r\n"],
        [b"decr ", k, b" " + x + b"\r\n"],
        [b"cas ", k, b" 0 0 1 " + x + b"\r\nv\r\n"],
        [b"verbosity " + x + b"\r\n"],
    ])


HTTP_LINES = [b"GET / HTTP/1.0", b"GET /index.html HTTP/1.1", b"POST /x HTTP/1.1", b"PUT /x HTTP/1.1",
              b"DELETE HTTP/1.1", b"HEAD / HTTP/1.0", b"OPTIONS * HTTP/1.1", b"HTTP/1.1",
              b"foo bar HTTP/", b"PRI * HTTP/2.0", b"CONNECT host:80 HTTP/1.1",
              # what memcached does not take for HTTP: other branches, one byte, lower case
              b"get / HTTP/1.0", b"gx HTTP/1.0", b"X HTTP/1.0", b"post / http/1.1", b"mx HTTP/1.0",
              b"foo HTTPS/1.1"]


def http_like(g):
    """A first line a browser could send (memcached closes the connection
    without a word for one it takes for HTTP)."""
    return [g.r.choice(HTTP_LINES) + b"\r\n"]


def odd_lines(g):
    """Lines of high bytes, long words, many tokens, spaces (binary-looking
    text: never a connection's first byte, which would choose binary)."""
    r = g.r
    return [r.choice([
        b"x" + bytes([0x80, 0x01, 0x20]) + b"x\r\n",
        b"\xc3" + bytes(r.randrange(0x80, 0x100) for _ in range(r.randrange(1, 30))) + b"\r\n",
        b"\xff\xfe version\r\n",
        b"a" * r.choice([100, 1000, 2000]) + b"\r\n",
        b" ".join([b"t"] * r.choice([22, 23, 24, 25, 40])) + b"\r\n",
        b"get" + b" k" * r.choice([22, 23, 24, 30]) + b"\r\n",
        b"   version\r\n",
        b"version   \r\n",
        b"\r\n",
        b"m\r\n",
        b"mz\r\n",
        b"quitx\r\n",
    ])]


STATS_FIXED = [b"stats foo", b"stats detail", b"stats detail foo", b"stats detail ON",
               b"stats sizes_enable", b"stats sizes_disable", b"stats sizes_enable x", b"stats detail offx", b"stats cachedump", b"stats cachedump 1", b"stats  foo",
               b"stats reset", b"stats reset x", b"stats  reset", b"stats reset noreply",
               b"stats resetx", b"stats Settings", b"stats settingsx", b"stats sizes_x"]
# answered otherwise by xdpkv today (found by this tester; generated with --known)
STATS_KNOWN = []


def stats_forms(g):
    """The stats subcommands whose answer is fixed (the others carry values
    that differ between any two servers: LEFT_OUT)."""
    return [g.r.choice(STATS_FIXED + (STATS_KNOWN if g.known else [])) + b"\r\n"]


def slabs_forms(g):
    r = g.r
    return [r.choice([b"slabs\r\n", b"slabs foo\r\n", b"slabs automove\r\n",
                      b"slabs automove " + r.choice([b"0", b"1", b"2", b"3", b"-1", b"x", b"+1"]) + b"\r\n",
                      b"slabs automove 1 noreply\r\n", b"slabs automove ratio\r\n",
                      b"slabs automove ratio 0.5\r\n", b"slabs automove ratio x\r\n",
                      b"slabs reassign 1\r\n", b"slabs reassign x 1\r\n", b"slabs reassign 1 1\r\n",
                      b"slabs reassign 1 x\r\n", b"slabs reassign 1 2 3\r\n"])]


MG_FLAGS = [b"vf", b"kx", b"v", b"f", b"t", b"c", b"k", b"s", b"q", b"u", b"h", b"l", b"O1", b"T100", b"N100", b"R30",
            b"b", b"E5", b"x", b"z", b"!", b"Ox", b"T", b"Tx", b"N"]
MS_FLAGS = [b"c", b"k", b"q", b"O1", b"F5", b"T100", b"C1", b"I", b"MS", b"ME", b"MA", b"MP", b"MR",
            b"Mx", b"MSS", b"b", b"E5", b"x", b"F", b"Fx", b"T-1"]
MD_FLAGS = [b"qz", b"q", b"k", b"O1", b"I", b"T30", b"C1", b"x", b"b", b"Tx", b"E5"]
MA_FLAGS = [b"v", b"t", b"c", b"k", b"q", b"O1", b"D2", b"N30", b"J5", b"T30", b"C1", b"MI", b"MD",
            b"M+", b"M-", b"Mx", b"Dx", b"Jx", b"x", b"E5", b"b"]


# flags another meta command takes: memcached's _meta_flag_preparse accepts
# every letter of any of them for all four, and each command ignores the
# ones it has no use for
OTHERS_FLAGS = {b"mg": [b"F5", b"C1", b"I", b"MS", b"J5", b"D2", b"P", b"L"],
                b"ms": [b"v", b"t", b"f", b"s", b"u", b"R30", b"J5", b"D2", b"P", b"L"],
                b"md": [b"v", b"t", b"f", b"s", b"c", b"u", b"N30", b"R30", b"J5", b"D2", b"F5", b"MS",
                        b"P", b"L"],
                b"ma": [b"f", b"s", b"u", b"R30", b"F5", b"I", b"P", b"L"]}


def meta_flags(g):
    """mg, ms, md, ma with flags drawn from every letter they take and some
    they do not (memcached 1.6.18's _meta_flag_preparse and per-command
    switch): duplicates and junk included."""
    r = g.r
    k = ("key", r.randrange(10))
    cmd = r.choice([b"mg", b"ms", b"md", b"ma"])
    table = {b"mg": MG_FLAGS, b"ms": MS_FLAGS, b"md": MD_FLAGS, b"ma": MA_FLAGS}[cmd]
    if r.random() < 0.3:
        table = table + OTHERS_FLAGS[cmd]
    fl = [r.choice(table) for _ in range(r.randrange(0, 5))]
    fl = [f for f in fl if f != b"b"]  # LEFT_OUT: base64 keys
    parts = [cmd + b" ", k]
    if cmd == b"ms":
        v = g.value()[:40]
        parts.append(b" %d" % len(v))
        return parts + [b" " + f for f in fl] + [b"\r\n" + v + b"\r\n"]
    return parts + [b" " + f for f in fl] + [b"\r\n"]


# forms xdpkv answers otherwise today, found by this tester (the engine's
# to fix); generated with --known only, so that the suite's short runs pass
KNOWN = dict(forms_conn.KNOWN)


def categories(udp):
    """The categories of a pass: these, and forms_conn's for TCP or UDP."""
    return dict(CATEGORIES, **(forms_conn.UDP if udp else forms_conn.TCP), **forms_state.CATEGORIES)


CATEGORIES = {
    "storage_fields": storage_fields,
    "other_fields": other_fields,
    "numbers": numbers,
    "http_like": http_like,
    "odd_lines": odd_lines,
    "stats": stats_forms,
    "slabs": slabs_forms,
    "meta_flags": meta_flags,
}
