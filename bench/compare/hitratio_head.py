# SPDX-License-Identifier: MIT
"""The headline's hit ratio: every system, the layouts and memcached (UDP and
TCP) and Redis, at one memory budget, Zipf 0.99, cache-aside, on the same
request sequences.

The working set is KEYS keys of 16 + 128 bytes (4 MiB), so that its budget,
1/4, is 1 MiB: memcached's memory limit (-m) is in whole MiB and it stores
items in 1 MiB pages, so a smaller working set (as (m)'s sweep uses) cannot
be given to it at that budget.

  layouts    xkv-kvexp hitratio --keys KEYS --budgets 1/4 --dists 0.99, every
             layout in one run: the map sized until the kernel's figure for it
             (fdinfo memlock) meets the budget; the same tool and checks as (m)
  memcached  a fresh `memcached -m 1 -I 512k` per seed (-m: its item memory,
             the slab pages, limited to the budget; -m 1 needs an item size
             limit of at most half of it); memcached-udp replayed over UDP,
             memcached-tcp over TCP, on loopback
  redis      a fresh redis-server per seed, maxmemory = its used_memory when
             empty + the budget, maxmemory-policy allkeys-lru (Redis as a cache)

The sequence is bench/kvexp/cachesim_models.gen_trace, hitratio.c's generator
(its checksum, trace_fnv, is the layouts' for the same seed: check.py compares
them); the first warmup x KEYS requests are not counted; a get that misses sets
the key, as hitratio.c does; every hit's value is checked.  The baselines'
replays run one request at a time (a reply before the next request, so the
order is the sequence's), each server with its client pinned to one CPU, the
systems side by side on both CPUs (no timing is measured here).

Run as a script it is one replay (compare runs it): hitratio_head.py replay
--system S --port P --keys N --seed S --warmup X --requests X."""

import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KVEXP_DIR = os.path.join(os.path.dirname(HERE), "kvexp")
KEY_SIZE, VALUE_SIZE = 16, 128
KEYS = 4 * (1 << 20) // (KEY_SIZE + VALUE_SIZE) + 1  # 29,128: 1/4 of it is 1 MiB
BUDGET, ALPHA = "1/4", 0.99
BASELINES = ("memcached-udp", "memcached-tcp", "redis")
MEM_LABEL = {"memcached": "three fresh memcached servers (-m 1024, on loopback) each preloaded with "
                           "the run's %d keys: RSS growth over the preload / items",
             "redis": "three fresh Redis servers (on loopback) each preloaded with the run's %d "
                      "keys: INFO used_memory / keys"}
LABEL = {"xdpkv": "xkv-kvexp hitratio, %d keys (4 MiB), the map sized to 1/4 of it by the "
                  "kernel's figure (memlock), Zipf 0.99, cache-aside; spread over the seeds",
         "memcached": "a fresh memcached per seed, -m 1 (item memory, 1 MiB = 1/4 of the "
                      "%d keys' 4 MiB), the same sequences replayed one request at a time, "
                      "cache-aside; spread over the seeds",
         "redis": "a fresh Redis per seed, maxmemory = its used_memory when empty + 1 MiB (1/4 "
                  "of the %d keys' 4 MiB), allkeys-lru, the same sequences replayed one "
                  "request at a time, cache-aside; spread over the seeds"}


def estimate(h, systems, memory=False):
    """Seconds: the layouts' kvexp run (~1 s a layout at 3 x KEYS requests a
    seed, measured on the 2-vCPU VM) beside the baselines' replays (COST, the
    systems on both CPUs) and, with memory, their three preloads (~2 s)."""
    n = (h["warmup"] + h["requests"]) * KEYS * len(h["seeds"].split(","))
    lay = sum(1 for s in systems if s.startswith("xdpkv/")) * n / (9 * KEYS)
    nb = sum(1 for s in systems if s in BASELINES)
    base = sum(COST[s] for s in systems if s in BASELINES) * n / (3 * KEYS)
    return 1 + (lay + base + (2 * nb if memory else 0)) / 2


def key_of(i):
    return ("key:%012u" % i).ljust(KEY_SIZE, "-").encode()


def value_of(i):
    return (b"%012u|" % i * 12)[:VALUE_SIZE]


# ---- one replay (a subprocess, pinned with its server) ------------------------------

class Mc:
    """memcached text protocol, over TCP or UDP (the 8-byte frame header)."""

    def __init__(self, port, udp):
        self.udp = udp
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
        self.s.connect(("127.0.0.1", port))
        self.s.settimeout(5)
        self.rid = 0
        self.buf = b""

    def call(self, req, end):
        if self.udp:
            self.rid = (self.rid + 1) & 0xffff
            self.s.send(self.rid.to_bytes(2, "big") + b"\0\0\0\1\0\0" + req)
            while True:
                d = self.s.recv(65536)
                if int.from_bytes(d[:2], "big") == self.rid:
                    return d[8:]
        self.s.sendall(req)
        while not self.buf.endswith(end) or (end == b"END\r\n" and not (
                self.buf == end or self.buf.endswith(b"\r\n" + end))):
            self.buf += self.s.recv(65536)
        out, self.buf = self.buf, b""
        return out

    def get(self, k):
        r = self.call(b"get " + k + b"\r\n", b"END\r\n")
        if r == b"END\r\n":
            return None
        head, _, rest = r.partition(b"\r\n")
        return rest[:int(head.split()[3])]

    def set(self, k, v):
        return self.call(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v), b"\r\n") == b"STORED\r\n"


class Redis:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def cmd(self, *a):
        self.s.sendall(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
        line = self.f.readline()
        if line.startswith(b"$"):
            n = int(line[1:])
            return None if n < 0 else self.f.read(n + 2)[:-2]
        return line

    def get(self, k):
        return self.cmd(b"GET", k)

    def set(self, k, v):
        return self.cmd(b"SET", k, v) == b"+OK\r\n"


def replay(system, port, keys, seed, warmup, requests):
    sys.path.insert(0, KVEXP_DIR)
    import cachesim_models as cm
    warm = int(warmup * keys + 0.5)
    n = warm + int(requests * keys + 0.5)
    trace, fnv = cm.gen_trace(ALPHA, keys, seed, n)
    c = Redis(port) if system == "redis" else Mc(port, system == "memcached-udp")
    hits = misses = wrong = stored = failed = warm_hits = 0
    t0 = time.time()
    for j, i in enumerate(trace):
        k = key_of(i)
        v = c.get(k)
        if v is not None:
            wrong += v != value_of(i)
            if j < warm:
                warm_hits += 1
            else:
                hits += 1
            continue
        if j >= warm:
            misses += 1
        if c.set(k, value_of(i)):
            stored += 1
        else:
            failed += 1
    return {"seed": seed, "hits": hits, "misses": misses,
            "hit_ratio": round(hits / (hits + misses), 6) if hits + misses else None,
            "warmup_hits": warm_hits, "set_stored": stored, "set_failed": failed,
            "wrong": wrong, "trace_fnv": fnv, "requests": n - warm, "warmup": warm,
            "secs": round(time.time() - t0, 2)}


# ---- the servers, one per system and seed -----------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, udp, proc, what):
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError("%s exited with %s" % (what, proc.returncode))
        out = subprocess.run(["ss", "-Hln" + ("u" if udp else "t"), "sport = :%d" % port],
                             capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.025)
    raise RuntimeError("%s does not listen on %d" % (what, port))


def start_server(system, cpu, limit=True):
    """(process, port, what it was given); memcached also listens on TCP
    (stats_port) for its stats.  limit False: no memory limit (memcached
    -m 1024, Redis none), for the bytes per item."""
    port, pin = free_port(), ["taskset", "-c", str(cpu)]
    budget = KEYS * (KEY_SIZE + VALUE_SIZE) // 4
    if system == "redis" and not limit:
        p = subprocess.Popen(pin + ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                    "--save", "", "--appendonly", "no", "--protected-mode",
                                    "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, False, p, "redis-server")
        return p, port, {"stats_port": port}
    if system == "redis":
        p = subprocess.Popen(pin + ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                    "--save", "", "--appendonly", "no", "--protected-mode",
                                    "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, False, p, "redis-server")
        c = Redis(port)
        used = info_field(c.cmd(b"INFO", b"memory"), b"used_memory")
        c.cmd(b"CONFIG", b"SET", b"maxmemory", b"%d" % (used + budget))
        c.cmd(b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lru")
        return p, port, {"maxmemory": used + budget, "used_memory_empty": used,
                         "policy": "allkeys-lru", "stats_port": port}
    tcp = free_port() if system == "memcached-udp" else port
    mem = ["-m", "1", "-I", "512k"] if limit else ["-m", "1024"]
    args = ["memcached", *mem, "-t", "1", "-l", "127.0.0.1", "-u", "root",
            "-c", "64", "-p", str(tcp), "-U", str(port) if system == "memcached-udp" else "0"]
    p = subprocess.Popen(pin + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, system == "memcached-udp", p, "memcached")
    wait_port(tcp, False, p, "memcached")
    return p, port, {"memory_limit_mb": 1, "item_size_max": "512k", "stats_port": tcp}


def info_field(info, name):
    for line in (info or b"").split(b"\r\n"):
        if line.startswith(name + b":"):
            return int(line.split(b":")[1])
    return None


def server_stats(system, given):
    """What the server holds at the end: live items, evictions."""
    port = given["stats_port"]
    if system == "redis":
        c = Redis(port)
        info = c.cmd(b"INFO", b"all")
        r = c.cmd(b"DBSIZE")
        return {"evictions": info_field(info, b"evicted_keys"),
                "used_memory": info_field(info, b"used_memory"),
                "live": int(r[1:]) if r and r.startswith(b":") else None}
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"stats\r\n")
        d = b""
        while not d.endswith(b"END\r\n"):
            d += s.recv(65536)
    st = dict(l.split()[1:3] for l in d.decode().splitlines() if l.startswith("STAT "))
    return {"evictions": int(st["evictions"]), "live": int(st["curr_items"]),
            "limit_maxbytes": int(st["limit_maxbytes"])}


def run_system(system, cpu, seeds, warmup, requests, log):
    """Every seed of one baseline: a fresh server each, the replay beside it on
    the same CPU.  Returns the row's result."""
    out = []
    for seed in seeds:
        p, port, given = start_server(system, cpu)
        try:
            r0 = rss(p.pid)  # what the server really uses for the budget: its RSS growth
            r = subprocess.run(["taskset", "-c", str(cpu), sys.executable, __file__, "replay",
                                system, str(port), str(KEYS), str(seed), str(warmup),
                                str(requests)], capture_output=True, text=True, timeout=900)
            if r.returncode:
                raise RuntimeError("the replay exited with %d: %s" % (r.returncode,
                                                                       r.stderr[-400:]))
            one = json.loads(r.stdout)
            one.update(server_stats(system, given))
            one["rss_growth"] = rss(p.pid) - r0
            one["given"] = {k: v for k, v in given.items() if k != "stats_port"}
            out.append(one)
            log("  (m) headline %s seed %d: hit ratio %.4f, %d live, %.1f s" % (
                system, seed, one["hit_ratio"], one["live"] or 0, one["secs"]))
        finally:
            p.terminate()
            p.wait(timeout=10)
    return result(out)


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def preload(system, port, keys):
    """Every key 0..keys-1 set once, pipelined in batches (memcached: noreply
    sets, then an mn; Redis: SETs, every reply read)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        for a in range(0, keys, 500):
            ids = range(a, min(keys, a + 500))
            if system == "redis":
                s.sendall(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
                    KEY_SIZE, key_of(i), VALUE_SIZE, value_of(i)) for i in ids))
                for _ in ids:
                    if f.readline() != b"+OK\r\n":
                        raise RuntimeError("redis: a preload SET was refused")
            else:
                s.sendall(b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" % (
                    key_of(i), VALUE_SIZE, value_of(i)) for i in ids) + b"mn\r\n")
                if f.readline() != b"MN\r\n":
                    raise RuntimeError("memcached: the preload got an error")


def memory_samples(system, cpu, keys, runs=3):
    """Bytes per item of `runs` fresh servers, each preloaded with every key
    of the run's key space (the (f) definitions: memcached's RSS growth over
    the preload per item, Redis's INFO used_memory per key)."""
    out = []
    for _ in range(runs):
        p, port, given = start_server(system, cpu, limit=False)
        try:
            sp = given["stats_port"]
            r0 = rss(p.pid)
            u0 = info_field(Redis(sp).cmd(b"INFO", b"memory"), b"used_memory") \
                if system == "redis" else None
            preload(system, sp, keys)
            st = server_stats(system, given)
            one = {"live": st["live"], "rss_before": r0, "rss": rss(p.pid)}
            if system == "redis":
                one["used_memory"] = st["used_memory"]
                one["used_memory_empty"] = u0
                one["bytes_per_item"] = round(st["used_memory"] / st["live"], 1)
            else:
                one["rss_growth_per_item"] = round((one["rss"] - r0) / st["live"], 1)
            out.append(one)
        finally:
            p.terminate()
            p.wait(timeout=10)
    field = "bytes_per_item" if system == "redis" else "rss_growth_per_item"
    vals = [o[field] for o in out]
    return {field: sorted(vals)[len(vals) // 2], field + "_runs": vals, "samples": out,
            "items_loaded": keys, "key_size": KEY_SIZE, "value_size": VALUE_SIZE}


def result(seeds):
    hr = [s["hit_ratio"] for s in seeds]
    med = sorted(hr)[len(hr) // 2]
    return {"hit_ratio": med, "hit_ratio_mean": round(sum(hr) / len(hr), 6), "hit_ratio_runs": hr, "hit_ratio_min": min(hr),
            "hit_ratio_max": max(hr), "seeds": seeds, "keys": KEYS,
            "working_set_bytes": KEYS * (KEY_SIZE + VALUE_SIZE),
            "budget_bytes": KEYS * (KEY_SIZE + VALUE_SIZE) // 4,
            "wrong": sum(s["wrong"] for s in seeds),
            "rss_growth_runs": [s.get("rss_growth") for s in seeds]}


# a replay's seconds per seed alone on a CPU (the 2-vCPU VM, 3 x KEYS
# requests): what places them
COST = {"memcached-udp": 2.0, "redis": 3.0, "memcached-tcp": 2.0}


def run_baselines(systems, cpus, seeds, warmup, requests, log, busy=None, mem_keys=None):
    """The baselines side by side, each on the CPU with the least work given
    so far (cpus in order; busy: seconds of other work already on each, e.g.
    the layouts' kvexp run), dearest first; threads, each waiting on its own
    subprocesses.  {system: result or exception}."""
    import threading
    res, load, where = {}, dict(busy or {}), {}
    for s in sorted(systems, key=lambda s: -COST.get(s, 5)):
        c = min(cpus, key=lambda c: load.get(c, 0))
        where[s], load[c] = c, load.get(c, 0) + COST.get(s, 5) * len(seeds)

    def one(s):
        try:
            res[s] = run_system(s, where[s], seeds, warmup, requests, log)
            if mem_keys:  # then the bytes per item, on the same CPU
                res[s]["memory"] = memory_samples(s, where[s], mem_keys)
                log("  (f) headline %s: %s bytes per item (%s)" % (
                    s, res[s]["memory"].get("bytes_per_item") or
                    res[s]["memory"].get("rss_growth_per_item"), "RSS growth per item"
                    if s != "redis" else "used_memory per key"))
        except Exception as e:  # noqa: BLE001 - the caller reports it
            res[s] = e
    th = [threading.Thread(target=one, args=(s,)) for s in systems]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return res


def layouts_result(doc, layout):
    """The layouts' headline point from one xkv-kvexp hitratio run of all of them."""
    r = next((x for x in doc.get("results") or [] if x.get("layout") == layout), None)
    if r is None:
        return None
    seeds = [dict(s, requests=r["requests"], warmup=r["warmup"]) for s in r["seeds"]]
    hr = [s["hit_ratio"] for s in seeds]
    med = sorted(hr)[len(hr) // 2]  # the median seed, as the baselines' (kvexp's is the mean)
    return {"hit_ratio": med, "hit_ratio_mean": r["hit_ratio"], "hit_ratio_runs": hr,
            "hit_ratio_min": min(hr), "hit_ratio_max": max(hr), "seeds": seeds, "keys": r["keys"],
            "working_set_bytes": KEYS * (KEY_SIZE + VALUE_SIZE),
            "budget_bytes": r["budget_bytes"], "map_bytes": r["map_bytes"],
            "entries": r["entries"], "wrong": sum(s.get("wrong", 0) for s in r["seeds"])}


def main():
    a = sys.argv[1:]
    if len(a) != 7 or a[0] != "replay":
        print("usage: hitratio_head.py replay SYSTEM PORT KEYS SEED WARMUP REQUESTS",
              file=sys.stderr)
        return 2
    print(json.dumps(replay(a[1], int(a[2]), int(a[3]), int(a[4]), float(a[5]), float(a[6]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
