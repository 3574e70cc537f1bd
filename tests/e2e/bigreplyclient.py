#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The client side of tests/e2e/bigreply.sh and bench/bigreply.sh: clients
that ask for replies far larger than they read, and one that keeps asking
for little, against a memcached-protocol server over TCP.

  bigreplyclient.py abuse HOST PORT PID [--conns 8] [--keys 4000]
        [--value 1000000] [--seconds 5] [--readers 0] [--json]
    Stores a value of --value bytes under "big", then opens --conns
    connections that each send one "get big big ..." of --keys keys and
    read nothing, --readers more that send the same and read as fast as
    they can, and a further one that sends "mn" every 5 ms and waits for
    "MN" (the server PID's memory and CPU read from /proc meanwhile).
    Prints the server's RSS before and its peak (VmHWM) and the largest RSS
    seen, the mn latencies (p50, p99, max) and the CPU the server used in
    the last second; with --json one JSON line.  Then reads a get of 40
    keys of the value on a fresh connection in full and checks every byte.
"""
import argparse
import json
import multiprocessing
import os
import socket
import threading
import time


def proc_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def connect(host, port):
    s = socket.create_connection((host, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until(s, end, buf=b""):
    while end not in buf:
        d = s.recv(1 << 20)
        if not d:
            raise ConnectionError("closed after %r" % buf[-80:])
        buf += d
    return buf


def store(host, port, value):
    s = connect(host, port)
    s.sendall(b"set big 0 0 %d\r\n" % len(value) + value + b"\r\n")
    got = read_until(s, b"\r\n")
    s.close()
    if got != b"STORED\r\n":
        raise SystemExit("set big: %r" % got)


def check_read(host, port, value, keys=40):
    """A get of keys keys of the value read in full: every byte right."""
    s = connect(host, port)
    s.sendall(b"get" + b" big" * keys + b"\r\n")
    head = b"VALUE big 0 %d\r\n" % len(value)
    one = head + value + b"\r\n"
    want = len(one) * keys + 5
    buf = bytearray()
    while len(buf) < want:
        d = s.recv(1 << 20)
        if not d:
            break
        buf += d
    s.close()
    return bytes(buf) == one * keys + b"END\r\n", len(buf)


def read_fast(host, port, req, got, quit):
    """Ask for the same reply and read it as fast as it comes."""
    s = connect(host, port)
    s.sendall(req)
    n = 0
    while not quit.is_set():
        n += len(s.recv(1 << 20))
    s.close()
    with got.get_lock():
        got.value += n


def abuse(a):
    value = bytes((i * 7 + 3) % 251 for i in range(a.value))
    store(a.host, a.port, value)
    time.sleep(0.3)
    idle_kb = proc_kb(a.pid, "VmRSS")
    req = b"get" + b" big" * a.keys + b"\r\n"
    hogs = []
    for _ in range(a.conns):
        s = connect(a.host, a.port)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.sendall(req)
        hogs.append(s)
    probe = connect(a.host, a.port)
    lat, rss_max = [], [idle_kb]
    stop = threading.Event()

    # readers in processes of their own: in this one they would take the
    # interpreter's lock from the probe and stretch its latencies
    got = multiprocessing.Value("q", 0)
    quit_readers = multiprocessing.Event()
    readers = [multiprocessing.Process(target=read_fast, args=(a.host, a.port, req, got, quit_readers))
               for _ in range(a.readers)]
    for t in readers:
        t.start()

    def sample():
        while not stop.is_set():
            rss_max[0] = max(rss_max[0], proc_kb(a.pid, "VmRSS"))
            time.sleep(0.01)

    th = threading.Thread(target=sample)
    th.start()
    t_end = time.monotonic() + a.seconds
    cpu_mark = None
    while time.monotonic() < t_end:
        if cpu_mark is None and time.monotonic() > t_end - 1:
            cpu_mark = (time.monotonic(), proc_cpu_s(a.pid))
        t0 = time.monotonic()
        probe.sendall(b"mn\r\n")
        if read_until(probe, b"MN\r\n") != b"MN\r\n":
            raise SystemExit("mn: unexpected reply")
        lat.append((time.monotonic() - t0) * 1000)
        time.sleep(0.005)
    cpu_end = (time.monotonic(), proc_cpu_s(a.pid))
    stop.set()
    quit_readers.set()
    th.join()
    for t in readers:
        t.join()
    drained = [got.value]
    peak_kb = proc_kb(a.pid, "VmHWM")
    alive = os.path.exists("/proc/%d" % a.pid)
    for s in hogs:
        s.close()
    probe.close()
    read_ok, read_len = check_read(a.host, a.port, value)
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    cpu_share = (cpu_end[1] - cpu_mark[1]) / (cpu_end[0] - cpu_mark[0]) if cpu_mark else None
    r = {
        "conns": a.conns, "keys": a.keys, "value": a.value, "seconds": a.seconds,
        "idle_rss_mb": round(idle_kb / 1024, 1), "peak_rss_mb": round(peak_kb / 1024, 1),
        "max_rss_seen_mb": round(rss_max[0] / 1024, 1),
        "peak_above_idle_mb": round((peak_kb - idle_kb) / 1024, 1),
        "mn_n": len(lat), "mn_p50_ms": round(pick(0.5), 2), "mn_p99_ms": round(pick(0.99), 2),
        "mn_max_ms": round(lat[-1], 2),
        "cpu_last_s": round(cpu_share, 3) if cpu_share is not None else None,
        "readers": a.readers, "readers_mb_per_s": round(drained[0] / a.seconds / 1e6, 1),
        "alive": alive, "read_ok": read_ok, "read_bytes": read_len,
    }
    if a.json:
        print(json.dumps(r))
    else:
        for k, v in r.items():
            print("%s: %s" % (k, v))
    return r


def longline(host, port):
    s = connect(host, port)
    hits = [0, 5, 4095, 4096, 9999, 18724]
    for i, h in enumerate(hits):
        s.sendall(b"set k%08d 0 0 3\r\nv%02d\r\n" % (h, i))
        if read_until(s, b"\r\n") != b"STORED\r\n":
            raise SystemExit("set: not STORED")
    line = b"get" + b"".join(b" k%08d" % i for i in range(18725)) + b"\r\n"
    s.sendall(line + b"mn\r\n")
    want = b"".join(b"VALUE k%08d 0 3\r\nv%02d\r\n" % (h, i) for i, h in enumerate(hits))
    want += b"END\r\nMN\r\n"
    got = read_until(s, b"MN\r\n")
    s.close()
    print("a get line of %d bytes, 18725 keys: %s" % (len(line), "every VALUE, then END" if got == want
                                                         else "got %r" % got[:200]))
    return got == want


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["abuse", "longline"])
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("pid", type=int, nargs="?")
    p.add_argument("--conns", type=int, default=8)
    p.add_argument("--keys", type=int, default=4000)
    p.add_argument("--value", type=int, default=1000000)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--readers", type=int, default=0)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.cmd == "longline":
        raise SystemExit(0 if longline(a.host, a.port) else 1)
    abuse(a)


if __name__ == "__main__":
    main()
