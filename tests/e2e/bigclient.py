#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Values above --value-size through every path that meets them (tests/e2e/bigvals.sh).

  bigclient.py paths HOST PORT OUTDIR   TCP (pymemcache, the kernel fast path attached) and UDP
                                        through the XDP program; writes the values it stored to OUTDIR
  bigclient.py check HOST PORT OUTDIR   every value stored by `paths` (and still meant to be there)
                                        reads back the same over TCP
"""
import os
import socket
import struct
import sys
import time

failed = 0


def check(ok, what):
    global failed
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failed += 1


def value(n, seed):
    return bytes((i * 31 + seed * 7 + (i >> 9)) % 256 for i in range(n))


def udp_ask(host, port, text, timeout=3.0):
    """One request datagram; the reply's datagrams put together by seq."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    req_id = 0x4242
    s.sendto(struct.pack("!HHHH", req_id, 0, 1, 0) + text, (host, port))
    parts, total = {}, None
    while total is None or len(parts) < total:
        d, _ = s.recvfrom(65536)
        rid, seq, tot, _ = struct.unpack("!HHHH", d[:8])
        if rid != req_id:
            continue
        total = tot
        parts[seq] = d[8:]
    s.close()
    return b"".join(parts[i] for i in range(total)), total


def stat(c, name):
    return int(c.stats().get(name.encode(), -1))


def cmd_paths(host, port, out):
    from pymemcache.client.base import Client

    c = Client((host, port), connect_timeout=3, timeout=5, default_noreply=False)
    vals = {"b1": value(200000, 1), "b2": value(5000, 2), "b3": value(1 << 20, 3), "s1": value(100, 4),
            "b4": value(10000, 5)}  # b4: in chunks until the migration to --value-size 16384
    for k, v in vals.items():
        check(c.set(k, v, flags=7) is True, f"TCP set {k} ({len(v)} bytes)")
    for k, v in vals.items():
        check(c.get(k) == v, f"TCP get {k} ({len(v)} bytes) reads back the same")
    # UDP: the XDP program passes a get of a big item on; serve answers in datagrams
    got, n = udp_ask(host, port, b"get b2\r\n")
    check(got == b"VALUE b2 7 5000\r\n" + vals["b2"] + b"\r\nEND\r\n" and n == 4,
          f"UDP get of 5000 bytes: {n} datagrams, the value byte for byte")
    got, n = udp_ask(host, port, b"get s1\r\n")
    check(got == b"VALUE s1 7 100\r\n" + vals["s1"] + b"\r\nEND\r\n", "UDP get of an inline value")
    # UDP set above --value-size: the XDP program passes it on (the big map's), serve stores it
    u1 = value(1500, 6)
    got, _ = udp_ask(host, port, b"set u1 3 0 1500\r\n" + u1 + b"\r\n")
    check(got == b"STORED\r\n", f"UDP set of 1500 bytes (--value-size 512) through XDP: {got!r}")
    check(c.get("u1") == u1, "... read back over TCP")
    vals["u1"] = u1
    got, _ = udp_ask(host, port, b"set u2 0 0 2000000\r\n")
    check(got == b"SERVER_ERROR object too large for cache\r\n", f"UDP set over 1 MiB: refused by XDP ({got!r})")
    removed0 = stat(c, "big_chunks_removed")
    # a delete the XDP program answers itself: the chunks stay until the collector
    got, _ = udp_ask(host, port, b"delete b2\r\n")
    check(got == b"DELETED\r\n", f"UDP delete of the big item: {got!r}")
    check(c.get("b2") is None, "... gone over TCP")
    t0 = time.time()
    while time.time() - t0 < 20 and stat(c, "big_chunks_removed") < removed0 + 2:
        time.sleep(0.5)
    removed = stat(c, "big_chunks_removed") - removed0
    check(removed == 2, f"serve's collector freed its 2 chunks in {time.time() - t0:.1f} s ({removed})")
    check(stat(c, "item_size_max") == 1 << 20, "stats: item_size_max 1 MiB")
    del vals["b2"]
    for k, v in vals.items():
        with open(os.path.join(out, k), "wb") as f:
            f.write(v)
    c.close()


def cmd_check(host, port, out):
    from pymemcache.client.base import Client

    c = Client((host, port), connect_timeout=3, timeout=5)
    for k in sorted(os.listdir(out)):
        with open(os.path.join(out, k), "rb") as f:
            v = f.read()
        got = c.get(k)
        check(got == v, f"{k}: {len(v)} bytes read back the same ({'none' if got is None else len(got)})")
    c.close()


def main():
    cmd, host, port, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    {"paths": cmd_paths, "check": cmd_check}[cmd](host, port, out)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
