# SPDX-License-Identifier: MIT
"""The systems compare drives, on the testbed of tests/lib/testbed.sh.

Every command that runs in a namespace goes through bench/compare/tb-call.sh
(the testbed's own tb_srv / tb_cli / tb_xdpkv / tb_pin_napi), so placement
(server CPU, client CPU) is the testbed's.  Background servers run in their
own session: stop() kills the whole process group; the testbed's tb_down
kills anything left in the namespaces anyway.
"""

import json
import re
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TB_CALL = os.path.join(HERE, "tb-call.sh")

# compare's layouts that are a variant loaded with an attach option: name ->
# (--variant, attach options).  The names are the microbenchmark's (bench/README.md).
ATTACH_AS = {"lru_no_common_lru": ("lru", ["--no-common-lru"])}


def registry_layouts(xdpkv):
    """The layouts compare knows: those of the registry (variants/registry.c),
    as `xdpkv layouts --json` lists them, each followed by the ATTACH_AS names
    that load it with an option.  A layout added to the registry is here
    without a change to compare."""
    try:
        p = subprocess.run([xdpkv, "layouts", "--json"], capture_output=True, text=True,
                           timeout=30)
        names = [x["name"] for x in json.loads(p.stdout)]
    except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired) as e:
        raise CompareError("cannot list the layouts with %s layouts --json: %s" % (xdpkv, e))
    out = []
    for n in names:
        out.append(n)
        out += [a for a, (base, _) in ATTACH_AS.items() if base == n]
    return tuple(out)


def unavailable_layouts(xdpkv):
    """{layout: the kernel's reason} for the layouts this kernel cannot hold
    (`xdpkv layouts --json` as root: "available": false; arena where BPF
    arenas are missing or not permitted), their ATTACH_AS names included."""
    try:
        p = subprocess.run([xdpkv, "layouts", "--json"], capture_output=True, text=True,
                           timeout=30)
        gone = {x["name"]: x.get("unavailable_reason", "?") for x in json.loads(p.stdout)
                if x.get("available") is False}
    except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired) as e:
        raise CompareError("cannot list the layouts with %s layouts --json: %s" % (xdpkv, e))
    for a, (base, _) in ATTACH_AS.items():
        if base in gone:
            gone[a] = gone[base]
    return gone
BASELINES = ("memcached-udp", "memcached-tcp", "redis", "xdpkv-tcp", "xdpkv-tcp-kernel")
# baselines run only when named: BMC needs a build the user made (--bmc-dir)
OPTIONAL_BASELINES = ("bmc",)
# memcached's UDP socket gets the kernel's default receive buffer (it sets
# no SO_RCVBUF): 208 KiB here, about 200 datagrams, which a Poisson burst
# overflows while the one server CPU runs the NAPI thread (observed: 17-285
# requests dropped at half memcached-udp's max).  Raised to this for the
# socket's creation only (net.core.rmem_default, restored at once)
MC_RCVBUF = 4 << 20
MC_PORT = 11211
REDIS_PORT = 6379


class CompareError(Exception):
    pass


def env(name):
    v = os.environ.get(name)
    if not v:
        raise CompareError("%s is not set: run under bench/compare/testbed-run.sh" % name)
    return v


def run(cmd, timeout=120, check=True, cpu=None):
    """Run cmd (list), return stdout.  cpu: pin to this CPU with taskset."""
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, text=True)
    except subprocess.TimeoutExpired:
        raise CompareError("%s: no answer within %d s" % (" ".join(cmd[:4]), timeout))
    if check and p.returncode != 0:
        raise CompareError("%s exited with %d: %s" % (" ".join(cmd), p.returncode,
                                                      p.stderr.strip()[-1500:]))
    return p.stdout


def tb(*args, timeout=120, check=True):
    return run([TB_CALL] + [str(a) for a in args], timeout=timeout, check=check)


def tb_bg(log, *args):
    f = open(log, "ab")
    return subprocess.Popen([TB_CALL] + [str(a) for a in args], stdout=f, stderr=f,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def stop_group(p, what, grace=3.0, comm=None):
    """SIGTERM the process group of p, SIGKILL after grace seconds.  comm:
    the server's name; wait until that process is gone too (its sockets
    with it), so the next server can bind the same port."""
    if p is None:
        return
    server = descendant(p.pid, comm) if comm else None
    if p.poll() is None:
        _stop_group(p, what, grace)
    if server:
        t0 = time.time()
        while os.path.exists("/proc/%d" % server) and time.time() - t0 < grace:
            time.sleep(0.02)
        if os.path.exists("/proc/%d" % server):
            try:
                os.kill(server, signal.SIGKILL)
            except ProcessLookupError:
                pass
            time.sleep(0.1)


def _stop_group(p, what, grace):
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        print("[compare] %s ignored SIGTERM, killed" % what, flush=True)


def run_script(cmd, logpath, timeout, what):
    """A benchmark script that brings up a testbed of its own (bench/tcpscale.sh,
    bench/clients/clients.sh): (exit status, stdout).  It runs in a session of
    its own, without compare's testbed variables (but TB_XDP_PASS_OBJ), its
    stderr appended to logpath.  On a timeout or compare's Interrupted its
    process group gets SIGTERM (its trap takes the testbed down), SIGKILL 30 s
    later; a timeout is a CompareError."""
    env_ = {k: v for k, v in os.environ.items() if not k.startswith("TB_") or k == "TB_XDP_PASS_OBJ"}
    env_.setdefault("PYTHON", sys.executable)
    with open(logpath, "a") as err:
        err.write("+ %s\n" % " ".join(cmd))
        err.flush()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                             text=True, env=env_, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except BaseException as e:
            _stop_group(p, what, 30.0)
            if isinstance(e, subprocess.TimeoutExpired):
                raise CompareError("%s did not finish within %d s" % (what, timeout))
            raise
    return p.returncode, out


def descendant(pid, comm):
    """The first descendant of pid (or pid itself) whose comm is comm."""
    todo = [pid]
    while todo:
        p = todo.pop(0)
        try:
            with open("/proc/%d/comm" % p) as f:
                if f.read().strip() == comm:
                    return p
            with open("/proc/%d/task/%d/children" % (p, p)) as f:
                todo += [int(x) for x in f.read().split()]
        except OSError:
            continue
    return None


def rss_bytes(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def srv_port_bound(port, proto):
    flag = "-Hlun" if proto == "udp" else "-Hltn"
    out = run(["nsenter", "--net=/run/netns/" + env("TB_SRV_NS"), "--", "ss", flag,
               "sport = :%d" % port], check=False)
    return bool(out.strip())


def wait_free(port, proto, timeout=5.0):
    """Before a server starts: nothing may hold its port any more."""
    t0 = time.time()
    while srv_port_bound(port, proto):
        if time.time() - t0 > timeout:
            raise CompareError("%s port %d is still in use in the server namespace" %
                               (proto, port))
        time.sleep(0.05)


def wait_bound(p, port, proto, what, log, timeout=10.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if p.poll() is not None:
            raise CompareError("%s exited with %s: %s" % (what, p.returncode, tail(log)))
        if srv_port_bound(port, proto):
            time.sleep(0.05)
            if p.poll() is not None:
                raise CompareError("%s exited with %s: %s" % (what, p.returncode, tail(log)))
            return
        time.sleep(0.05)
    raise CompareError("%s did not bind %s port %d within %.0f s: %s" %
                       (what, proto, port, timeout, tail(log)))


def tail(path, n=800):
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode(errors="replace").strip()
    except OSError:
        return ""


# ---- /proc/stat and bpf_stats ------------------------------------------------------

def cpu_busy_ticks(cpu):
    """user+nice+system+irq+softirq+steal and total ticks of one CPU."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu%d " % cpu):
                v = [int(x) for x in line.split()[1:]]
                user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
                busy = user + nice + system + irq + softirq + steal
                return busy, busy + idle + iowait
    raise CompareError("no cpu%d line in /proc/stat" % cpu)


def napi_pids(dev):
    """napi/DEV-N kthreads (threaded NAPI of the veth)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                c = f.read().strip()
        except OSError:
            continue
        if c.startswith("napi/%s-" % dev):
            out.append(int(d))
    return out


def affinity(pid):
    """The CPUs a thread may run on (a pinned NAPI kthread: one)."""
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError:
        return []


def proc_ticks(pids):
    """utime+stime (clock ticks) of processes (every thread of each)."""
    t = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                v = f.read().rsplit(")", 1)[1].split()
            t += int(v[11]) + int(v[12])
        except (OSError, IndexError, ValueError):
            pass
    return t


def proc_ns(pids):
    """Nanoseconds on a CPU of processes, every thread of each (schedstat:
    exact, where the ticks of proc_ticks are 10 ms each)."""
    t = 0
    for p in pids:
        try:
            tasks = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for tid in tasks:
            try:
                with open("/proc/%d/task/%s/schedstat" % (p, tid)) as f:
                    t += int(f.read().split()[0])
            except (OSError, IndexError, ValueError):
                pass
    return t


BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"


class BpfStats:
    """kernel.bpf_stats_enabled=1 only inside `with`, the old value back after."""

    def __init__(self):
        self.old = None

    def __enter__(self):
        with open(BPF_STATS) as f:
            self.old = f.read().strip()
        with open(BPF_STATS, "w") as f:
            f.write("1")
        return self

    def __exit__(self, *exc):
        self.restore()
        return False

    def restore(self):
        if self.old is None:
            return
        try:
            with open(BPF_STATS, "w") as f:
                f.write(self.old)
        finally:
            self.old = None


def prog_stats(prog_id, cpu):
    """(run_time_ns, run_cnt) of a BPF program, through bpftool."""
    out = run(["bpftool", "prog", "show", "id", str(prog_id), "--json"], cpu=cpu)
    j = json.loads(out)
    return j.get("run_time_ns", 0), j.get("run_cnt", 0)


# ---- clients' small probes (run in the client netns) ------------------------------

def probe(kind, host, port):
    """Run in the client namespace: compare.py _probe KIND HOST PORT."""
    out = tb("tb_cli", sys.executable, os.path.join(HERE, "compare.py"), "_probe", kind, host,
             port, timeout=30)
    return json.loads(out)


def probe_main(kind, host, port):
    """The probe itself: memcached 'stats' or Redis 'INFO memory' as JSON."""
    s = socket.create_connection((host, int(port)), timeout=5)
    if kind == "mc-stats":
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            d = s.recv(65536)
            if not d:
                break
            buf += d
        out = {}
        for line in buf.decode().splitlines():
            p = line.split()
            if len(p) == 3 and p[0] == "STAT":
                out[p[1]] = int(p[2]) if p[2].isdigit() else p[2]
    elif kind == "redis-info":
        s.sendall(b"*2\r\n$4\r\nINFO\r\n$3\r\nall\r\n")
        buf = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
            if b"\r\n" in buf:
                n = int(buf[1:buf.index(b"\r\n")])
                if len(buf) >= buf.index(b"\r\n") + 2 + n + 2:
                    break
        out = {}
        for line in buf.decode().splitlines()[1:]:
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = int(v) if v.isdigit() else v
    else:
        raise SystemExit("unknown probe " + kind)
    s.close()
    print(json.dumps(out))


# ---- the systems -------------------------------------------------------------------

class System:
    """One server under test.  name: 'xdpkv/LAYOUT' or a baseline name."""

    kind = None
    settings = None  # what a baseline was started with (the report prints it)
    proto = None   # the loadgen protocol
    port = MC_PORT

    def __init__(self, name, xdpkv, log):
        self.name = name
        self.xdpkv = xdpkv
        self.log = log
        self.proc = None
        self.cfg = None
        self.prog_id = None

    def host(self):
        return env("TB_SRV_IP4")

    def start(self, cfg):
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def server_pid(self):
        return None

    def memory(self):
        return {}

    def cpu_pids(self):
        """The server's own threads: the server veth's NAPI kthread(s) and the
        server process (xdpkv: its slow path)."""
        pids = napi_pids(env("TB_SRV_DEV"))
        p = self.server_pid()
        return pids + ([p] if p else [])


class XdpkvSystem(System):
    kind = "xdpkv"
    proto = "mc-udp"
    attach_opts = ()  # more `xdpkv attach` options (XdpkvTcpSystem)

    def __init__(self, layout, xdpkv, log):
        super().__init__("xdpkv/" + layout, xdpkv, log)
        self.layout = layout
        self.attached = False

    def start(self, cfg):
        dev = env("TB_SRV_DEV")
        size = [] if self.layout == "null" else ["--entries", cfg["entries"]]  # no store
        variant, opts = ATTACH_AS.get(self.layout, (self.layout, []))
        opts = [*opts, *self.attach_opts]
        tb("tb_xdpkv", "--variant", variant, "attach", dev, "--mode", "native", *size, *opts,
           "--key-size", cfg["key_size"], "--value-size", max(cfg["value_size"], 64),
           "--port", MC_PORT)
        self.attached = True
        self.cfg = cfg
        tb("tb_pin_napi")
        wait_free(MC_PORT, "udp")
        self.proc = tb_bg(self.log, "tb_xdpkv", "serve", dev)
        wait_bound(self.proc, MC_PORT, "udp", "xdpkv serve", self.log)
        st = self.status()
        self.prog_id = st.get("prog_id")

    def status(self):
        return json.loads(tb("tb_xdpkv", "status", env("TB_SRV_DEV"), "--json"))

    def stop(self):
        stop_group(self.proc, "xdpkv serve", comm="xdpkv")
        self.proc = None
        if self.attached:
            tb("tb_xdpkv", "detach", env("TB_SRV_DEV"), check=False)
            self.attached = False
        self.prog_id = None

    def server_pid(self):
        return self.proc and descendant(self.proc.pid, "xdpkv")

    def memory(self):
        st = self.status()
        return {"live_items": st.get("live"), "map_memory": st.get("map_memory"),
                "bytes_per_item": st.get("bytes_per_item"),
                "bytes_per_entry": st.get("bytes_per_entry"), "entries": st.get("entries")}


    def persistence(self):
        """(j) snapshot the preloaded store, restore the file into it: the
        commands' own --json timings (the same code as 'xdpkv snapshot'), on
        every CPU as their threads expect (tb_xdpkv pins to one)."""
        dev, f = env("TB_SRV_DEV"), os.path.join(env("TB_TMP"), "compare-j.snap")
        snap = json.loads(tb("tb_xdpkv_allcpus", "snapshot", dev, f, "--compress", "lz4", "--json",
                             timeout=600))
        rest = json.loads(tb("tb_xdpkv_allcpus", "restore", dev, f, "--json", timeout=600))
        os.unlink(f)
        return {"items": snap["items"], "snapshot_s": snap["seconds"], "file_bytes": snap.get("compressed_bytes"),
                "restore_s": rest["seconds"], "restored": rest["stored"], "threads": snap.get("threads")}


class XdpkvTcpSystem(XdpkvSystem):
    """xdpkv over TCP: hash_map, the same client speaking memcached over TCP.
    xdpkv-tcp: attached with --no-tcp-fast-path --no-xdp-tcp, so `xdpkv
    serve` answers every request in userspace from the same maps;
    xdpkv-tcp-kernel: attached as by default, the XDP TCP responder and the
    sk_skb verdict answering in the kernel what they can and serve the rest.  Each row records how many requests each path answered."""
    proto = "mc-tcp"

    def __init__(self, xdpkv, log, kernel=False):
        super().__init__("hash_map", xdpkv, log)
        self.name = "xdpkv-tcp-kernel" if kernel else "xdpkv-tcp"
        # userspace only: neither the sk_skb verdict nor the XDP TCP responder
        self.attach_opts = () if kernel else ("--no-tcp-fast-path", "--no-xdp-tcp")

    def start(self, cfg):
        super().start(cfg)
        wait_bound(self.proc, MC_PORT, "tcp", "xdpkv serve (TCP)", self.log)


class ReflectorSystem(System):
    """bench/reflector: the bare XDP_TX ceiling (swaps MACs, addresses and
    ports; no store, no server process).  Measured with xdpgen only."""
    kind = "reflector"
    preload = None
    proto = "mc-udp"  # (b): xkv-loadgen --echo, the request back as its own reply

    def __init__(self, xdpkv, log):
        super().__init__("reflector", xdpkv, log)
        build = os.path.dirname(os.path.dirname(os.path.abspath(xdpkv)))
        self.obj = os.environ.get("XKV_REFLECTOR_OBJ") or \
            os.path.join(build, "bench", "reflector", "reflector.bpf.o")

    def start(self, cfg):
        if not os.path.isfile(self.obj):
            raise CompareError("the reflector %s is not built (ninja -C build reflector)" % self.obj)
        run(["ip", "-n", env("TB_SRV_NS"), "link", "set", "dev", env("TB_SRV_DEV"), "xdpdrv",
             "obj", self.obj, "sec", "xdp"])
        self.cfg = cfg
        tb("tb_pin_napi")

    def status(self):
        return None

    def stop(self):
        run(["ip", "-n", env("TB_SRV_NS"), "link", "set", "dev", env("TB_SRV_DEV"), "xdp",
             "off"], check=False)


class PassXdp:
    """The baselines get an XDP_PASS program on the server veth, so their
    packets take the same driver path as xdpkv's (veth NAPI, a kthread pinned
    to the server CPU) instead of being received on the client's CPU."""

    @staticmethod
    def attach():
        run(["ip", "-n", env("TB_SRV_NS"), "link", "set", "dev", env("TB_SRV_DEV"),
             "xdpdrv", "obj", env("TB_XDP_PASS_OBJ"), "sec", "xdp"])
        tb("tb_pin_napi")

    @staticmethod
    def detach():
        run(["ip", "-n", env("TB_SRV_NS"), "link", "set", "dev", env("TB_SRV_DEV"), "xdp",
             "off"], check=False)


class MemcachedSystem(System):
    kind = "memcached"

    def __init__(self, name, xdpkv, log):
        super().__init__(name, xdpkv, log)
        self.proto = "mc-udp" if name == "memcached-udp" else "mc-tcp"

    def start(self, cfg):
        PassXdp.attach()
        self.start_memcached(cfg)

    def start_memcached(self, cfg):
        self.cfg = cfg
        item = cfg["key_size"] + cfg["value_size"] + 100
        # mem_mb: a limit it must evict under ((g)); else room for every key twice
        mb = cfg.get("mem_mb") or max(1024, int(cfg["keys"] * item * 2 / 2**20))
        wait_free(MC_PORT, "udp")
        wait_free(MC_PORT, "tcp")
        # -t 1: one worker thread per server CPU (the testbed gives it one);
        # -c 4096: room for the TCP client's connections
        args = ["memcached", "-U", MC_PORT, "-p", MC_PORT, "-l", self.host(), "-t", 1,
                "-m", mb, "-c", 4096, "-u", "root"]
        old = rmem_default(MC_RCVBUF)
        try:
            self.proc = tb_bg(self.log, "tb_srv", *args)
            wait_bound(self.proc, MC_PORT, "udp", "memcached", self.log)
        finally:
            rmem_default(old)
        wait_bound(self.proc, MC_PORT, "tcp", "memcached", self.log)
        self.settings = {"command": " ".join(str(a) for a in args),
                         "udp_receive_buffer": "%d B (net.core.rmem_default while its socket "
                                               "was made; the default is %s B)" % (MC_RCVBUF, old)}

    def stop(self):
        stop_group(self.proc, "memcached", comm="memcached")
        self.proc = None
        PassXdp.detach()

    def server_pid(self):
        return self.proc and descendant(self.proc.pid, "memcached")

    def memory(self):
        st = probe("mc-stats", self.host(), MC_PORT)
        pid = self.server_pid()
        return {"live_items": st.get("curr_items"), "mc_bytes": st.get("bytes"),
                "limit_maxbytes": st.get("limit_maxbytes"), "rss": pid and rss_bytes(pid)}


def read_first(path):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return None


def sysctl(name, v):
    """Set /proc/sys/NAME to v, return the value it had."""
    path = "/proc/sys/" + name
    with open(path) as f:
        old = int(f.read())
    with open(path, "w") as f:
        f.write(str(v))
    return old


def rmem_default(v):
    """Set net.core.rmem_default (the receive buffer a socket gets when it
    sets none), return the value it had."""
    return sysctl("net/core/rmem_default", v)


class RedisSystem(System):
    kind = "redis"
    proto = "redis"
    port = REDIS_PORT

    def start(self, cfg):
        PassXdp.attach()
        self.cfg = cfg
        wait_free(REDIS_PORT, "tcp")
        # as a cache: no persistence (save "", appendonly no), maxmemory with
        # allkeys-lru where a limit applies; io-threads 1 (its config file:
        # threads only on 4+ cores, and the server has one CPU)
        args = ["redis-server", "--port", REDIS_PORT, "--bind", self.host(), "--save", "",
                "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
                "--io-threads", 1, "--dir", env("TB_TMP"), "--logfile", "",
                *(("--maxmemory", "%dmb" % cfg["mem_mb"], "--maxmemory-policy",
                   "allkeys-lru") if cfg.get("mem_mb") else ())]
        # vm.overcommit_memory 1 while it runs: Redis's startup warning asks for it
        # (its fork for a background save); the machine's value comes back at stop()
        self.overcommit = sysctl("vm/overcommit_memory", 1)
        self.proc = tb_bg(self.log, "tb_srv", *args)
        wait_bound(self.proc, REDIS_PORT, "tcp", "redis-server", self.log)
        self.settings = {"command": " ".join(str(a) if str(a) else '""' for a in args).replace(
                             env("TB_TMP"), "$TMP"),
                         "transparent_hugepage": read_first(
                             "/sys/kernel/mm/transparent_hugepage/enabled"),
                         "vm.overcommit_memory": "1 while it ran (the machine's: %s)" %
                                                 self.overcommit}

    def stop(self):
        stop_group(self.proc, "redis-server", comm="redis-server")
        self.proc = None
        if getattr(self, "overcommit", None) is not None:
            sysctl("vm/overcommit_memory", self.overcommit)
            self.overcommit = None
        PassXdp.detach()

    def server_pid(self):
        return self.proc and descendant(self.proc.pid, "redis-server")

    def memory(self):
        st = probe("redis-info", self.host(), REDIS_PORT)
        pid = self.server_pid()
        return {"live_items": _redis_keys(st), "used_memory": st.get("used_memory"),
                "used_memory_dataset": st.get("used_memory_dataset"),
                "rss": pid and rss_bytes(pid)}


    def cli(self, *args):
        return tb("tb_srv", "redis-cli", "-h", self.host(), "-p", REDIS_PORT, *args,
                  timeout=600).strip()

    def persistence(self):
        """(k) BGSAVE until its child is done, then DEBUG RELOAD NOSAVE (the
        RDB load alone), each by wall clock.  Done = no save in progress and
        one more successful save counted (rdb_saves; LASTSAVE has one-second
        steps, so a small dataset saved within the second Redis started in
        never changed it and this waited forever)."""
        def saves():
            m = re.search(r"^rdb_saves:(\d+)", self.cli("info", "persistence"), re.M)
            return int(m.group(1)) if m else None
        before, last = saves(), self.cli("lastsave")
        t0 = time.monotonic()
        self.cli("bgsave")
        while True:
            info = self.cli("info", "persistence")
            if "rdb_bgsave_in_progress:0" in info:
                if before is not None and (saves() or 0) > before:
                    break
                if before is None and (self.cli("lastsave") != last or time.monotonic() - t0 > 2):
                    break
            if time.monotonic() - t0 > 600:
                raise RuntimeError("redis BGSAVE did not finish in 600 s")
            time.sleep(0.005)
        save_s = time.monotonic() - t0
        rdb = os.path.join(env("TB_TMP"), "dump.rdb")
        size = os.path.getsize(rdb) if os.path.exists(rdb) else None
        t0 = time.monotonic()
        self.cli("debug", "reload", "nosave")
        load_s = time.monotonic() - t0
        return {"items": _redis_keys(probe("redis-info", self.host(), REDIS_PORT)),
                "snapshot_s": round(save_s, 3), "file_bytes": size, "restore_s": round(load_s, 3)}


def _redis_keys(info):
    db = info.get("db0")
    if not isinstance(db, str):
        return 0
    for part in db.split(","):
        if part.startswith("keys="):
            return int(part[5:])
    return None


# name -> System class, for systems defined outside this file (bmc.BmcSystem)
EXTRA_SYSTEMS = {}


def make_system(name, xdpkv, log):
    if name == "reflector":
        return ReflectorSystem(xdpkv, log)
    if name in ("xdpkv-tcp", "xdpkv-tcp-kernel"):
        return XdpkvTcpSystem(xdpkv, log, kernel=name == "xdpkv-tcp-kernel")
    if name.startswith("xdpkv/"):
        return XdpkvSystem(name[6:], xdpkv, log)
    if name in EXTRA_SYSTEMS:  # registered by their own modules (bmc.py)
        return EXTRA_SYSTEMS[name](name, xdpkv, log)
    if name.startswith("memcached-"):
        return MemcachedSystem(name, xdpkv, log)
    if name == "redis":
        return RedisSystem(name, xdpkv, log)
    raise CompareError("unknown system " + name)
