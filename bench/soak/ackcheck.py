#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Soak load with an acknowledged-write checker (bench/soak/soak.sh).

  ackcheck.py load HOST PORT --id N --proto tcp|udp --seconds S --keys K --out FILE
  ackcheck.py check HOST PORT FILE...

load: one client writes versioned values to a key space of its own (keys
soak:<id>:<i>, value "<id>:<i>:<version>:" padded with the version's
digits), reads some back, and keeps the highest version the server
acknowledged for each key (STORED).  A read that returns an older version
than one already acknowledged is a lost write at once.  Connections that
break (serve killed) are opened again; requests without an answer are not
acknowledged.  At the end it writes {key: acked version} to FILE (JSON).

check: reads every key of the files over TCP; a key whose value is missing
or older than its acknowledged version is a lost acknowledged write.
Prints one JSON line; exits 1 if any acknowledged write was lost.
"""
import argparse
import json
import random
import socket
import struct
import sys
import time


def value_of(cid, i, ver):
    head = b"%d:%d:%d:" % (cid, i, ver)
    return head + (b"%d" % ver) * (1 + (ver % 7) * 20)


def version_in(val):
    try:
        return int(val.split(b":")[2])
    except (IndexError, ValueError):
        return -1


class TcpClient:
    def __init__(self, host, port):
        self.addr = (host, port)
        self.s = None
        self.buf = b""

    def call(self, req, end):
        """The reply up to end, or None (the connection broke: not acknowledged)."""
        try:
            if self.s is None:
                self.s = socket.create_connection(self.addr, timeout=2)
                self.buf = b""
            self.s.sendall(req)
            while end not in self.buf:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise OSError("closed")
                self.buf += chunk
            i = self.buf.index(end) + len(end)
            out, self.buf = self.buf[:i], self.buf[i:]
            return out
        except OSError:
            if self.s:
                self.s.close()
            self.s = None
            return None


class UdpClient:
    def __init__(self, host, port):
        self.addr = (host, port)
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.settimeout(0.5)
        self.rid = 0

    def call(self, req, end):
        self.rid = (self.rid + 1) & 0xFFFF
        self.s.sendto(struct.pack("!HHHH", self.rid, 0, 1, 0) + req, self.addr)
        parts = {}
        total = 1
        try:
            while len(parts) < total:
                d = self.s.recv(65536)
                rid, seq, total, _ = struct.unpack("!HHHH", d[:8])
                if rid == self.rid:
                    parts[seq] = d[8:]
        except (socket.timeout, OSError):
            return None
        return b"".join(parts[k] for k in sorted(parts))


def get_value(cl, key):
    r = cl.call(b"get " + key + b"\r\n", b"END\r\n")
    if r is None:
        return None
    if r == b"END\r\n":
        return b""
    line, _, rest = r.partition(b"\r\n")
    n = int(line.split()[3])
    return rest[:n]


def cmd_load(a):
    cl = TcpClient(a.host, a.port) if a.proto == "tcp" else UdpClient(a.host, a.port)
    rng = random.Random(a.id)
    acked = {}
    ver = {}
    stats = {"sets": 0, "acked": 0, "gets": 0, "unanswered": 0, "lost_seen": 0}
    lost = []
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        i = rng.randrange(a.keys)
        key = b"soak:%d:%d" % (a.id, i)
        if rng.random() < 0.7:
            v = ver.get(i, 0) + 1
            ver[i] = v
            val = value_of(a.id, i, v)
            stats["sets"] += 1
            r = cl.call(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(val), val), b"\r\n")
            if r == b"STORED\r\n":
                acked[i] = v
                stats["acked"] += 1
            elif r is None:
                stats["unanswered"] += 1
        else:
            got = get_value(cl, key)
            stats["gets"] += 1
            if got is None:
                stats["unanswered"] += 1
            elif i in acked and version_in(got) < acked[i]:
                stats["lost_seen"] += 1
                lost.append((key.decode(), acked[i], version_in(got)))
    json.dump({"id": a.id, "acked": {str(k): v for k, v in acked.items()}, "stats": stats,
               "lost": lost[:20]}, open(a.out, "w"))
    return 0


def cmd_check(a):
    cl = TcpClient(a.host, a.port)
    lost, checked, stats = [], 0, {}
    for f in a.files:
        d = json.load(open(f))
        for k, v in d["stats"].items():
            stats[k] = stats.get(k, 0) + v
        lost += d["lost"]
        for i, v in d["acked"].items():
            key = b"soak:%d:%s" % (d["id"], i.encode())
            got = None
            for _ in range(20):
                got = get_value(cl, key)
                if got is not None:
                    break
                time.sleep(0.2)
            checked += 1
            if got is None or version_in(got) < v:
                lost.append((key.decode(), v, version_in(got) if got is not None else None))
    print(json.dumps({"keys_checked": checked, "lost_acknowledged": len(lost), "lost": lost[:20], **stats}))
    return 1 if lost else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("host")
    lp.add_argument("port", type=int)
    lp.add_argument("--id", type=int, required=True)
    lp.add_argument("--proto", choices=["tcp", "udp"], default="tcp")
    lp.add_argument("--seconds", type=float, default=60)
    lp.add_argument("--keys", type=int, default=500)
    lp.add_argument("--out", required=True)
    cp = sub.add_parser("check")
    cp.add_argument("host")
    cp.add_argument("port", type=int)
    cp.add_argument("files", nargs="+")
    a = p.parse_args()
    return cmd_load(a) if a.cmd == "load" else cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
