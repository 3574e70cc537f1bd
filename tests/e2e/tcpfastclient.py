#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Clients for tests/e2e/tcpfast.sh: the TCP fast path (sk_skb verdict).

  tcpfastclient.py record HOST PORT FILE   run the request streams, write
                                          every reply byte stream to FILE
                                          (JSON: name -> hex)
  tcpfastclient.py compare HOST PORT FILE  run them again and compare with
                                          FILE byte for byte
  tcpfastclient.py clients HOST PORT       pymemcache: get hits and misses,
                                          get_many, set/get/delete, checked
  tcpfastclient.py pipeline HOST PORT     one connection, four segments of
                                          several requests each (below),
                                          replies and stats checked
  tcpfastclient.py credit HOST PORT BYTES  one connection, BYTES of sets of
                                          1390-byte values one at a time
                                          (each a segment of its own), then
                                          gets: still answered
  tcpfastclient.py aclcut HOST PORT DIR    one connection: a get miss (the
                                          kernel answers it), then DIR/ready;
                                          once DIR/go exists (the allow list
                                          no longer holds us) the same get
                                          must get no reply and the end

The streams (each on a fresh connection, the store seeded the same way by
the stream itself): single gets (hits, misses, multi-key), one pipelined
stream mixing get, set, delete (noreply too) with commands only userspace
serves (incr, append, version, gets, errors), sent whole, one request per write, and split in two
writes at every byte boundary; replies must be the same bytes in the same
order whether the kernel or userspace answered.  Prints PASS/FAIL lines."""
import json
import os
import re
import socket
import sys
import time

import tcpclient  # tests/e2e: check() and its count of failures

check = tcpclient.check


def conn(host, port):
    s = socket.create_connection((host, port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until(s, want_end, n_ends):
    """Read until the reply stream holds n_ends occurrences of want_end at
    line starts or a 1 s silence (a missing reply shows as a short stream)."""
    return tcpclient.recv_while(s, lambda b: b.count(want_end) < n_ends, 1.0)


def read_bytes(s, n):
    """Read n bytes, or what came before a 1 s silence or the end."""
    return tcpclient.recv_while(s, lambda b: len(b) < n, 1.0)


# Every stream ends with `mn` (meta no-op): its reply, the last one, tells
# that nothing more is coming, so an extra reply would show before it and a
# run does not wait out a silence.  The reply kept is the stream's without it.
SENTINEL, SENTINEL_REPLY = b"mn\r\n", b"MN\r\n"


def read_stream(s):
    buf = read_until(s, SENTINEL_REPLY, 1)
    return buf[:-len(SENTINEL_REPLY)] if buf.endswith(SENTINEL_REPLY) else buf + b"<no MN>"


SEED = (b"set fk1 5 0 6\r\nvalue1\r\nset fk2 0 0 3\r\nabc\r\nset fcount 0 0 2\r\n10\r\n"
        b"set fapp 0 0 1\r\nx\r\n")
# (name, request parts, marker, count): every part is one request; the
# reply stream is complete when it holds `count` markers.
STREAMS = [
    ("get hit", [b"get fk1\r\n"], b"END\r\n", 1),
    ("get miss", [b"get nope\r\n"], b"END\r\n", 1),
    ("multi-get", [b"get fk1 nope fk2\r\n"], b"END\r\n", 1),
    ("mixed pipeline", [
        b"get fk1\r\n", b"incr fcount 5\r\n", b"get fcount\r\n", b"append fapp 0 0 1\r\ny\r\n",
        b"get fapp fk2\r\n", b"version\r\n", b"get fk2\r\n", b"bogus\r\n", b"get fk1 fk2\r\n",
        b"gets fk2\r\n", b"get nope\r\n", b"set fk3 1 0 2\r\nhi\r\n", b"get fk3\r\n",
        b"delete fk3\r\n", b"get fk3\r\n", b"get fk1\r\n", b"set fk4 0 0 1 noreply\r\nz\r\n",
        b"get fk4\r\n", b"delete fk4 noreply\r\n", b"delete k\r\n", b"get fk4 fk1\r\n"],
     b"END\r\n", 12),
]


def seed(host, port):
    s = conn(host, port)
    s.sendall(SEED + SENTINEL)
    read_stream(s)
    s.close()


def run_stream(host, port, parts, mode, split=0):
    seed(host, port)
    s = conn(host, port)
    data = b"".join(parts)
    if mode == "whole":
        s.sendall(data + SENTINEL)
    elif mode == "each":
        for p in parts:
            s.sendall(p)
            time.sleep(0.002)
        s.sendall(SENTINEL)
    else:  # split in two writes at byte `split`
        s.sendall(data[:split])
        time.sleep(0.003)
        s.sendall(data[split:] + SENTINEL)
    out = read_stream(s)
    s.close()
    return out


def all_runs(host, port):
    """name -> (reply bytes, markers expected)"""
    res = {}
    for name, parts, marker, count in STREAMS:
        res[f"{name} / whole"] = (run_stream(host, port, parts, "whole"), count)
        res[f"{name} / one request per write"] = (
            run_stream(host, port, parts, "each"), count)
    name, parts, marker, count = STREAMS[3]
    n = len(b"".join(parts))
    for k in range(1, n):
        res[f"{name} / split at {k}"] = (
            run_stream(host, port, parts, "split", k), count)
    return res


def record(host, port, path):
    res = all_runs(host, port)
    for k, (v, count) in res.items():
        check(v.count(b"END\r\n") == count, f"reference {k}: {len(v)} reply bytes, {count} ENDs")
    res = {k: v for k, (v, _) in res.items()}
    with open(path, "w") as f:
        json.dump({k: v.hex() for k, v in res.items()}, f)


CAS = re.compile(rb"^(VALUE \S+ \d+ \d+) \d+\r\n", re.M)


def same(reply):
    """A reply with gets' cas uniques (write stamps, different every run)
    made equal; everything else byte for byte."""
    return CAS.sub(rb"\1 <cas>\r\n", reply)


def compare(host, port, path):
    with open(path) as f:
        ref = {k: bytes.fromhex(v) for k, v in json.load(f).items()}
    got = {k: v for k, (v, _) in all_runs(host, port).items()}
    for k, want in ref.items():
        g = got.get(k)
        ok = g is not None and same(g) == same(want)
        check(ok, f"{k}: {len(want)} bytes the same" if ok else
              f"{k}: got {g!r}, want {want!r}")


def clients(host, port):
    from pymemcache.client.base import Client
    c = Client((host, port), connect_timeout=5, timeout=5)
    for i in range(20):
        c.set(f"pk{i}", f"val{i}".encode() * (i + 1), flags=0)
    ok = all(c.get(f"pk{i}") == f"val{i}".encode() * (i + 1) for i in range(20))
    check(ok, "pymemcache: 20 get hits return the values set")
    # a moment for serve to tell the kernel it has answered everything (it
    # does so after its last send; a request that comes first goes to serve)
    time.sleep(0.05)
    check(c.get("pk-none") is None, "pymemcache: a miss is None")
    m = c.get_many([f"pk{i}" for i in range(5)] + ["pk-none"])
    check(m == {f"pk{i}": f"val{i}".encode() * (i + 1) for i in range(5)}, "pymemcache: get_many")
    c.set("pk0", b"changed")
    check(c.get("pk0") == b"changed", "pymemcache: get after set sees the new value")
    c.delete("pk1")
    check(c.get("pk1") is None, "pymemcache: get after delete misses")
    check(c.incr("pk-n", 1) is None, "pymemcache: incr of an absent key (userspace) in between")
    check(c.get("pk2") == b"val2" * 3, "pymemcache: get after a userspace command")
    c.close()


V100 = b"v" * 100
# (segment, its replies): sent as one write each, on one connection, one
# after the other.  With the kernel path on (and writes there: not the
# per-CPU layouts) the kernel answers 1 whole, 2's noreply set (the rest goes
# to userspace without it), 3 not (its replies outgrow the credit 1 and 2
# left), 4 whole, 5 not (the credit again; the kernel looked the key up
# first: counted once all the same): tcpfast.sh checks tcp_fast +6, tcp_slow
# +8 (the two stats commands around them included).
PIPELINE = [
    (b"set pa 0 0 100 noreply\r\n" + V100 + b"\r\nset pb 1 0 100 noreply\r\n" + V100 +
     b"\r\nget pa pb\r\n",
     b"VALUE pa 0 100\r\n" + V100 + b"\r\nVALUE pb 1 100\r\n" + V100 + b"\r\nEND\r\n"),
    (b"set pn 0 0 1 noreply\r\n5\r\nincr pn 2\r\nget pn\r\n", b"7\r\nVALUE pn 0 1\r\n7\r\nEND\r\n"),
    (b"get pa\r\nget pnope\r\nget pb\r\n",
     b"VALUE pa 0 100\r\n" + V100 + b"\r\nEND\r\nEND\r\nVALUE pb 1 100\r\n" + V100 + b"\r\nEND\r\n"),
    (b"get pnope\r\nset pc 0 0 3\r\nabc\r\n", b"END\r\nSTORED\r\n"),
    (b"get pa\r\n", b"VALUE pa 0 100\r\n" + V100 + b"\r\nEND\r\n"),
]


def pipeline(host, port):
    """Segments of several requests: the same replies whoever answers, and
    the counters of memcached's `stats` counted once (a get looked up in the
    kernel whose segment then went to userspace is counted there only)."""
    keys = (b"cmd_get", b"get_keys", b"get_hits", b"get_misses", b"cmd_set")

    def stats():
        s.sendall(b"stats\r\n")
        st = dict(re.findall(rb"^STAT (\S+) (\S+)\r$", read_until(s, b"END\r\n", 1), re.M))
        time.sleep(0.05)
        return {k: int(st.get(k, -1)) for k in keys}

    s = conn(host, port)
    time.sleep(0.3)  # the slow path pushes its counters every 100 ms
    before = stats()
    for i, (req, want) in enumerate(PIPELINE):
        s.sendall(req)
        got = read_bytes(s, len(want))
        check(got == want, f"pipeline segment {i + 1}: {got!r}" if got != want else
              f"pipeline segment {i + 1}: the replies, in order")
        time.sleep(0.05)  # serve says it has answered all before the next
    time.sleep(0.3)
    after = stats()
    got = {k.decode(): after[k] - before[k] for k in keys}
    want = {"cmd_get": 7, "get_keys": 8, "get_hits": 6, "get_misses": 2, "cmd_set": 4}
    check(got == want, f"pipeline: stats counted once: {got}")
    s.close()


CREDIT_SET = b"set cr 0 0 1390\r\n" + b"c" * 1390 + b"\r\n"  # one segment (MSS 1448)


def credit(host, port, total):
    """Sets whose STORED is 1401 bytes shorter than the set, one at a time:
    the kernel's credit grows by that much each (tcp.bpf.h) until its
    ceiling; past 2^31 the socket would stop calling the verdict and the
    connection would stall."""
    s = conn(host, port)
    n = 0
    while n * len(CREDIT_SET) < total:
        s.sendall(CREDIT_SET)
        if read_bytes(s, 8) != b"STORED\r\n":
            check(False, f"credit: set {n + 1}: no STORED (the connection stalled?)")
            return
        n += 1
    check(True, f"credit: {n} sets, {n * len(CREDIT_SET)} bytes, each answered")
    for _ in range(3):
        s.sendall(b"get cr\r\n")
        got = read_bytes(s, 1414)
        check(got == b"VALUE cr 0 1390\r\n" + b"c" * 1390 + b"\r\nEND\r\n",
              f"credit: a get after them is answered ({len(got)} bytes)")
    s.close()


def aclcut(host, port, d):
    s = conn(host, port)
    s.sendall(b"get acl-probe\r\n")
    check(read_until(s, b"END\r\n", 1) == b"END\r\n", "aclcut: a get miss while allowed")
    # and again once serve has the connection (XDP answers only then)
    time.sleep(0.3)
    for _ in range(2):
        s.sendall(b"get acl-probe\r\n")
        check(read_until(s, b"END\r\n", 1) == b"END\r\n", "aclcut: a get miss while allowed")
    open(f"{d}/ready", "w").close()
    deadline = time.time() + 20
    while not os.path.exists(f"{d}/go") and time.time() < deadline:
        time.sleep(0.05)
    check(os.path.exists(f"{d}/go"), "aclcut: the allow list was changed")
    s.sendall(b"get acl-probe\r\n")
    s.settimeout(3)
    try:
        got = s.recv(65536)
    except ConnectionResetError:
        got = b""
    except socket.timeout:
        got = None
    check(got == b"", f"aclcut: after acl del, no reply and the connection ends (got {got!r})")
    s.close()


def main():
    cmd, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if cmd == "record":
        record(host, port, sys.argv[4])
    elif cmd == "compare":
        compare(host, port, sys.argv[4])
    elif cmd == "clients":
        clients(host, port)
    elif cmd == "pipeline":
        pipeline(host, port)
    elif cmd == "credit":
        credit(host, port, int(float(sys.argv[4])))
    elif cmd == "aclcut":
        aclcut(host, port, sys.argv[4])
    else:
        sys.exit(f"unknown command {cmd}")
    sys.exit(1 if tcpclient.failed else 0)


if __name__ == "__main__":
    main()
