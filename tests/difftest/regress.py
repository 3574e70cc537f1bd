#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regression checks for the bugs issue 17 listed, over TCP, against xdpkv.

  regress.py stream HOST PORT     pipelines, refused storage lines, big multi-gets
  regress.py smallval HOST PORT   a store attached with --value-size 8

Prints PASS/FAIL lines; exits 1 if any check failed.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import tcpclient  # noqa: E402  tests/e2e: check() and its count
from tcpclient import check  # noqa: E402


def connect(host, port, rcvbuf=0):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:  # a small window: the server's writes stop on EAGAIN
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_until(s, end, limit=64 << 20, timeout=5.0):
    """Bytes until the stream ends with end (or the peer closes, or timeout)."""
    got = b""
    s.settimeout(timeout)
    try:
        while not got.endswith(end) and len(got) < limit:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        pass
    return got


def ask(host, port, req, end):
    with connect(host, port) as s:
        s.sendall(req)
        return recv_until(s, end)


def value_reply(key, val):
    return b"VALUE " + key + b" 0 %d\r\n" % len(val) + val + b"\r\n"


def t_pipeline_stall(host, port):
    """Item 1: replies past the 256 KiB queue bound, then requests already
    read: all answered without the client sending more, half-close too."""
    big = bytes(range(256)) * 2400  # 614,400 bytes
    check(ask(host, port, b"set rg:big 0 0 %d\r\n" % len(big) + big + b"\r\nset rg:small 0 0 2\r\nhi\r\n",
              b"STORED\r\nSTORED\r\n") == b"STORED\r\nSTORED\r\n", "stall: two values stored")
    want = (value_reply(b"rg:big", big) + b"END\r\n") * 2 + value_reply(b"rg:small", b"hi") + b"END\r\n"
    with connect(host, port, rcvbuf=32768) as s:
        s.sendall(b"get rg:big\r\nget rg:big\r\nget rg:small\r\n")
        time.sleep(0.5)  # not reading: the server's queue fills, its writes wait
        got = recv_until(s, b"hi\r\nEND\r\n", timeout=5)
    check(got == want, "stall: get big, get big, get small in one write: all three answered "
          "(%d of %d bytes)" % (len(got), len(want)))
    with connect(host, port, rcvbuf=32768) as s:
        s.sendall(b"get rg:big\r\nget rg:big\r\nset rg:after 0 0 1\r\nx\r\nget rg:small\r\n")
        s.shutdown(socket.SHUT_WR)  # half-close: the requests read must still run
        time.sleep(0.5)
        got = recv_until(s, b"hi\r\nEND\r\n", timeout=5)
    check(got.endswith(b"STORED\r\n" + value_reply(b"rg:small", b"hi") + b"END\r\n"),
          "stall: the same after a half-close, the write included")
    check(ask(host, port, b"get rg:after\r\n", b"END\r\n") == value_reply(b"rg:after", b"x") + b"END\r\n",
          "stall: the write after the half-close is stored")


def t_refused_store(host, port):
    """Item 2, as memcached 1.6.18 answers it: a storage line refused before
    its data block (a key over 250 bytes, bad flags) is answered, and the
    stream goes on with the block read as commands."""
    with connect(host, port) as s:
        s.sendall(b"set " + b"k" * 251 + b" 0 0 7\r\nversion\r\n")
        got = recv_until(s, b"VERSION 1.6.18\r\n", timeout=2)
    check(got == b"CLIENT_ERROR bad command line format\r\nVERSION 1.6.18\r\n",
          "refused: a 251-byte key: the error, then the block as a command (%r)" % got[:80])
    with connect(host, port) as s:
        s.sendall(b"set rg:x nope 0 2\r\nxx\r\nversion\r\n")
        got = recv_until(s, b"VERSION 1.6.18\r\n", timeout=2)
    check(got == b"CLIENT_ERROR bad command line format\r\nERROR\r\nVERSION 1.6.18\r\n",
          "refused: bad flags: the error, ERROR for the block, the stream kept (%r)" % got[:80])


def t_big_multiget(host, port):
    """A trusted client's multi-get has no key-count or reply-size limit
    (memcached streams any), within the line and token bounds."""
    keys = [b"rg:m%03d" % i for i in range(400)]
    with connect(host, port) as s:
        s.sendall(b"".join(b"set " + k + b" 0 0 3 noreply\r\nabc\r\n" for k in keys) + b"mn\r\n")
        check(recv_until(s, b"MN\r\n") == b"MN\r\n", "multi-get: 400 keys set")
        s.sendall(b"get " + b" ".join(keys) + b"\r\n")
        got = recv_until(s, b"END\r\n")
    want = b"".join(value_reply(k, b"abc") for k in keys) + b"END\r\n"
    check(got == want, "multi-get: 400 keys in one get, all answered (%d of %d bytes)" % (len(got), len(want)))
    big = b"z" * 700000
    with connect(host, port) as s:
        s.sendall(b"set rg:huge 0 0 %d\r\n" % len(big) + big + b"\r\n")
        check(recv_until(s, b"\r\n") == b"STORED\r\n", "multi-get: a 700 kB value stored")
        s.sendall(b"get rg:huge rg:huge rg:huge rg:huge\r\n")
        got = recv_until(s, b"END\r\n", timeout=10)
    want = value_reply(b"rg:huge", big) * 4 + b"END\r\n"
    check(got == want, "multi-get: a 2.8 MB reply (over --max-reply's 2 MiB), whole (%d of %d bytes)"
          % (len(got), len(want)))


def t_smallval(host, port):
    """Item 3: incr/decr/ma results longer than --value-size (8 here)."""
    with connect(host, port) as s:
        s.sendall(b"ma rg:n N0 J18446744073709551615 v\r\nmn\r\n")
        got = recv_until(s, b"MN\r\n")
    check(got == b"VA 20\r\n18446744073709551615\r\nMN\r\n", "smallval: ma vivifies a 20-digit number (%r)" % got)
    check(ask(host, port, b"get rg:n\r\n", b"END\r\n") ==
          value_reply(b"rg:n", b"18446744073709551615") + b"END\r\n", "smallval: and it reads back")
    check(ask(host, port, b"set rg:c 0 0 1\r\n9\r\nincr rg:c 99999999999\r\n", b"\r\n100000000008\r\n")
          == b"STORED\r\n100000000008\r\n", "smallval: incr past the value size")
    check(ask(host, port, b"get rg:c\r\n", b"END\r\n") == value_reply(b"rg:c", b"100000000008") + b"END\r\n",
          "smallval: the long number reads back")
    check(ask(host, port, b"decr rg:c 100000000000\r\n", b"\r\n") == b"8\r\n", "smallval: decr back to one digit")
    check(ask(host, port, b"version\r\n", b"\r\n").startswith(b"VERSION"), "smallval: the server is alive")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("stream", "smallval"):
        print(__doc__, file=sys.stderr)
        return 2
    host, port = sys.argv[2], int(sys.argv[3])
    if sys.argv[1] == "stream":
        t_pipeline_stall(host, port)
        t_refused_store(host, port)
        t_big_multiget(host, port)
    else:
        t_smallval(host, port)
    return 1 if tcpclient.failed else 0


if __name__ == "__main__":
    sys.exit(main())
