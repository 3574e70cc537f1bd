#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The client side of bench/clients/clients.sh: one workload per row, each a real
memcached client (Python, PHP, Ruby, Perl, libmemcached's tools, memaslap,
nutcracker in front of the server), every reply checked.

  clients.py rows                          the rows: name, then '-' or why skipped
  clients.py attach ROW                    extra `xdpkv attach` options for ROW
  clients.py preload ROW HOST PORT         the keys ROW reads (before counters)
  clients.py run ROW HOST PORT SECONDS     the timed run; one JSON line:
                                           requests, wrong, first_wrong, error...
  clients.py report ...                    (bench/clients/clients.sh) a row's JSON line
  clients.py table FILE                    the human table of a JSON-lines file

Keys ck:0..ck:99 hold value(key, 0) after a preload; value(key, n) is
"key:n:" padded with 'x' to VSIZE bytes, the same in every language here, so
a reply is checked byte for byte.  A multi-key get counts as one request, a
set_many of 8 keys as 8 (memaslap rows: its Ops, where --division=10 counts
every key of a multi-get).  Any exception, wrong value or error reply is
reported (wrong, first_wrong with the exact bytes, error) and the run is not ok.
"""
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time

NKEYS = 100
VSIZE = 64


def value(key, n):
    s = "%s:%d:" % (key, n)
    return (s + "x" * VSIZE)[:VSIZE].encode()


def keyname(i):
    return "ck:%d" % (i % NKEYS)


def have_py(mod):
    try:
        __import__(mod)
        return ""
    except ImportError:
        return "python3 module %s missing" % mod


def have_cmd(*cmds):
    for c in cmds:
        if not shutil.which(c):
            return "%s missing" % c
    return ""


def have_run(argv, pkg):
    if have_cmd(argv[0]):
        return have_cmd(argv[0]) + " (apt-get install %s)" % pkg
    r = subprocess.run(argv, capture_output=True)
    return "" if r.returncode == 0 else "%s (apt-get install %s)" % (
        r.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["fails"], pkg)


class Tally:
    """Requests sent and replies checked; the first wrong one kept verbatim."""

    def __init__(self):
        self.requests = self.keys = self.wrong = 0
        self.first_wrong = None

    def check(self, what, want, got, n=1, keys=None):
        self.requests += n
        self.keys += n if keys is None else keys
        if want != got:
            self.wrong += 1
            if self.first_wrong is None:
                self.first_wrong = {"what": what, "want": repr(want), "got": repr(got)}

    def out(self, **extra):
        return dict(requests=self.requests, keys=self.keys, wrong=self.wrong,
                    first_wrong=self.first_wrong, **extra)


def pyclient(host, port):
    from pymemcache.client.base import Client
    return Client((host, port), connect_timeout=5, timeout=5, no_delay=True)


# ---- Python ----------------------------------------------------------------

def run_pymc_get(host, port, end):
    c, t, i = pyclient(host, port), Tally(), 0
    while time.monotonic() < end:
        k = keyname(i)
        t.check("get " + k, value(k, 0), c.get(k))
        i += 7
    return t.out()


def run_pymc_setdel(host, port, end, noreply=True):
    # pymemcache's defaults: set and delete with noreply (no reply to check;
    # noreply=False: each waits for its reply); the state they leave is read
    # back at the end
    c, t, i, want = pyclient(host, port), Tally(), 0, {}
    while time.monotonic() < end:
        k, d = "sd:%d" % (i % 64), "sd:%d" % ((i + 32) % 64)
        c.set(k, value(k, i), noreply=noreply)
        c.delete(d, noreply=noreply)
        want[k], want[d] = value(k, i), None
        t.requests += 2
        t.keys += 2
        i += 1
    got = c.get_many(list(want))
    for k, v in sorted(want.items()):
        t.check("get %s after noreply set/delete" % k, v, got.get(k), n=0, keys=0)
    t.requests += 1
    return t.out()


def run_pymc_get_many(host, port, end):
    c, t, i = pyclient(host, port), Tally(), 0
    while time.monotonic() < end:
        ks = [keyname(i + j * 10) for j in range(10)]
        t.check("get_many " + " ".join(ks), {k: value(k, 0) for k in ks}, c.get_many(ks), keys=10)
        i += 1
    return t.out()


def run_pymc_set_many(host, port, end):
    # set_many(8) with pymemcache's default noreply; every 32nd round a
    # get_many of its keys checks what the sets left
    c, t, r = pyclient(host, port), Tally(), 0
    while time.monotonic() < end or r % 32:
        vals = {"sm:%d" % ((r % 16) * 8 + j): None for j in range(8)}
        vals = {k: value(k, r) for k in vals}
        c.set_many(vals)
        t.requests += 8
        t.keys += 8
        if r % 32 == 31:
            t.check("get_many after set_many", vals, c.get_many(list(vals)), keys=8)
        r += 1
    return t.out()


def run_python_memcache(host, port, end):
    import memcache
    c, t, i = memcache.Client(["%s:%d" % (host, port)], socket_timeout=5), Tally(), 0
    while time.monotonic() < end:
        k = "pm:%d" % (i % 64)
        t.check("set " + k, True, bool(c.set(k, value(k, i))))
        t.check("get " + k, value(k, i), c.get(k))
        t.check("delete " + k, True, bool(c.delete(k)))
        i += 1
    return t.out()


# ---- PHP, Ruby, Perl: a loop in the client's language, a JSON line back ------

PHP = r'''<?php
[$_, $host, $port, $mode, $secs, $vsize, $nkeys] = $argv;
$m = new Memcached();
$m->setOption(Memcached::OPT_COMPRESSION, false);
$m->setOption(Memcached::OPT_TCP_NODELAY, true);
if ($mode == "binary") $m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
if ($mode == "noblock") $m->setOption(Memcached::OPT_NO_BLOCK, true);
$m->addServer($host, (int)$port);
function val($k, $n) { global $vsize; return substr("$k:$n:" . str_repeat("x", $vsize), 0, $vsize); }
$t = ["requests" => 0, "keys" => 0, "wrong" => 0, "first_wrong" => null];
function check($what, $want, $got, $keys = 1) {
  global $t, $m;
  $t["requests"]++; $t["keys"] += $keys;
  if ($want !== $got) {
    $t["wrong"]++;
    if ($t["first_wrong"] === null)
      $t["first_wrong"] = ["what" => $what, "want" => var_export($want, true),
                           "got" => var_export($got, true), "result" => $m->getResultMessage()];
  }
}
$end = microtime(true) + (float)$secs; $i = 0; $want = [];
while (microtime(true) < $end) {
  if ($mode == "getmulti") {
    $ks = []; for ($j = 0; $j < 10; $j++) $ks[] = "ck:" . (($i + 10 * $j) % $nkeys);
    $w = []; foreach ($ks as $k) $w[$k] = val($k, 0);
    $g = $m->getMulti($ks); if (is_array($g)) ksort($g); ksort($w);
    check("getMulti", $w, $g, 10);
  } elseif ($mode == "noblock") {
    $k = "nb:" . ($i % 64); $want[$k] = val($k, $i);
    check("set $k", true, $m->set($k, val($k, $i)));
  } else {
    $k = "ph:" . ($i % 64);
    check("set $k", true, $m->set($k, val($k, $i)));
    check("get $k", val($k, $i), $m->get($k));
  }
  $i++;
}
if ($mode == "noblock") {
  $g = $m->getMulti(array_keys($want)); if (is_array($g)) ksort($g); ksort($want);
  check("getMulti after no-block sets", $want, $g, count($want));
}
echo json_encode($t), "\n";
'''

RUBY = r'''
require "dalli"
require "json"
host, port, secs, vsize = ARGV[0], ARGV[1], ARGV[2].to_f, ARGV[3].to_i
dc = Dalli::Client.new("#{host}:#{port}", compress: false, socket_timeout: 5)
t = {"requests" => 0, "keys" => 0, "wrong" => 0, "first_wrong" => nil}
check = lambda do |what, want, got|
  t["requests"] += 1; t["keys"] += 1
  if want != got
    t["wrong"] += 1
    t["first_wrong"] ||= {"what" => what, "want" => want.inspect, "got" => got.inspect}
  end
end
val = lambda { |k, n| ("#{k}:#{n}:" + "x" * vsize)[0, vsize] }
fin = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
i = 0
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < fin
  k = "rb:#{i % 64}"
  check.call("set #{k}", true, !!dc.set(k, val.call(k, i), nil, raw: true))
  check.call("get #{k}", val.call(k, i), dc.get(k, raw: true))
  i += 1
end
puts JSON.generate(t)
'''

PERL = r'''
use strict; use warnings; use Cache::Memcached::Fast; use Time::HiRes qw(time);
use Data::Dumper; $Data::Dumper::Indent = 0; $Data::Dumper::Sortkeys = 1; $Data::Dumper::Useqq = 1;
my ($host, $port, $secs, $vsize, $nkeys) = @ARGV;
my $m = Cache::Memcached::Fast->new({servers => ["$host:$port"], utf8 => 0, io_timeout => 5,
                                     close_on_error => 1, compress_threshold => -1});
my %t = (requests => 0, keys => 0, wrong => 0, first_wrong => undef);
sub val { my ($k, $n) = @_; return substr("$k:$n:" . ("x" x $vsize), 0, $vsize); }
sub check {
  my ($what, $want, $got, $keys) = @_;
  $t{requests}++; $t{keys} += $keys // 1;
  my ($a, $b) = (Dumper($want), Dumper($got));
  if ($a ne $b) { $t{wrong}++; $t{first_wrong} //= {what => $what, want => $a, got => $b}; }
}
my $end = time + $secs; my $i = 0;
while (time < $end) {
  my $k = "pl:" . ($i % 64);
  check("set $k", 1, $m->set($k, val($k, $i)) ? 1 : 0);
  check("get $k", val($k, $i), $m->get($k));
  my @ks = map { "ck:" . (($i + 10 * $_) % $nkeys) } 0 .. 9;
  check("get_multi", { map { $_ => val($_, 0) } @ks }, $m->get_multi(@ks), 10);
  $i++;
}
sub js { my $v = shift; return "null" unless defined $v; $v =~ s/(["\\])/\\$1/g;
         $v =~ s/([\x00-\x1f])/sprintf("\\u%04x", ord $1)/ge; return "\"$v\""; }
my $fw = $t{first_wrong};
printf "{\"requests\": %d, \"keys\": %d, \"wrong\": %d, \"first_wrong\": %s}\n",
  $t{requests}, $t{keys}, $t{wrong},
  $fw ? sprintf("{\"what\": %s, \"want\": %s, \"got\": %s}", js($fw->{what}), js($fw->{want}),
                js($fw->{got})) : "null";
'''


def run_script(argv, end):
    secs = max(end - time.monotonic(), 0.1)
    r = subprocess.run(argv(secs), capture_output=True, timeout=secs + 60)
    lines = r.stdout.decode(errors="replace").strip().splitlines()
    if r.returncode or not lines:
        return {"error": "%s exited %d: %s" % (os.path.basename(argv(0)[0]), r.returncode,
                                                r.stderr.decode(errors="replace")[-400:])}
    return json.loads(lines[-1])


def run_php(mode):
    def f(host, port, end):
        return run_script(lambda s: ["php", "-r", PHP[6:], "--", host, str(port), mode, str(s),
                                     str(VSIZE), str(NKEYS)], end)
    return f


def run_ruby(host, port, end):
    return run_script(lambda s: ["ruby", "-e", RUBY, host, str(port), str(s), str(VSIZE)], end)


def run_perl(host, port, end):
    return run_script(lambda s: ["perl", "-e", PERL, host, str(port), str(s), str(VSIZE),
                                 str(NKEYS)], end)


# ---- libmemcached's tools: a process (a connection) per request --------------

def run_memcp(binary):
    def f(host, port, end):
        srv = ["--servers=%s:%d" % (host, port)] + (["--binary"] if binary else [])
        t, i, d = Tally(), 0, tempfile.mkdtemp(prefix="xkv-memcp.")
        try:
            while time.monotonic() < end:
                k = "mc%d" % (i % 64)
                with open(os.path.join(d, k), "wb") as fh:
                    fh.write(value(k, i))
                r = subprocess.run(["memccp"] + srv + [os.path.join(d, k)], capture_output=True)
                t.check("memccp %s (rc, stderr)" % k, (0, b""), (r.returncode, r.stderr))
                r = subprocess.run(["memccat"] + srv + [k], capture_output=True)
                # memccat ends what it prints with a newline of its own
                t.check("memccat " + k, (0, value(k, i) + b"\n"), (r.returncode, r.stdout))
                i += 1
        finally:
            shutil.rmtree(d, ignore_errors=True)
        return t.out()
    return f


# ---- memaslap ------------------------------------------------------------------

SMALL_CFG = "key\n16 16 1\nvalue\n32 100 1\ncmd\n0 0.1\n1 0.9\n"


def memaslap(host, port, secs, args, log=None):
    d = tempfile.mkdtemp(prefix="xkv-maslap.")
    try:
        argv = ["memcaslap", "-s", "%s:%d" % (host, port), "-T", "1", "-c", "8",
                "-t", "%ds" % max(int(round(secs)), 1)]
        for a in args:
            if a == "SMALL":
                with open(os.path.join(d, "small.cfg"), "w") as fh:
                    fh.write(SMALL_CFG)
                argv += ["-F", os.path.join(d, "small.cfg")]
            else:
                argv.append(a)
        r = subprocess.run(argv, capture_output=True, timeout=secs + 60)
        return r.returncode, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def parse_memaslap(rc, text):
    import re

    def last(name):
        m = re.findall(r"^%s:\s*(\d+)" % name, text, re.M)
        return int(m[-1]) if m else None
    ops = re.findall(r"Run time:.*?Ops:\s*(\d+)", text, re.S)
    errs = re.findall(r"^<\d+ ((?:CLIENT_|SERVER_)?ERROR.*)$", text, re.M)
    out = {"requests": int(ops[-1]) if ops else 0, "gets": last("cmd_get"),
           "sets": last("cmd_set"), "get_misses": last("get_misses"),
           "verify_failed": last("verify_failed"), "error_replies": len(errs), "memaslap_rc": rc}
    out["keys"] = out["requests"]
    out["wrong"] = (out["verify_failed"] or 0) + len(errs)
    out["first_wrong"] = {"what": "memaslap", "got": errs[0]} if errs else None
    if rc or not out["gets"] or out["verify_failed"] is None:
        out["error"] = "memaslap rc %d, no gets or no verification: %s" % (rc, text[-400:])
    return out


def run_memaslap(*args):
    def f(host, port, end):
        return parse_memaslap(*memaslap(host, port, end - time.monotonic(),
                                        list(args) + ["--verify=1.0"]))
    return f


def preload_memaslap(*args):
    def f(host, port):
        memaslap(host, port, 1, list(args))
    return f


# ---- nutcracker (twemproxy) in front of the server -----------------------------

NUT_CFG = """xkv:
  listen: 127.0.0.1:%d
  hash: fnv1a_64
  distribution: ketama
  timeout: 5000
  server_connections: 1
  auto_eject_hosts: false
  servers:
   - %s:%d:1
"""


def run_nutcracker(conns):
    def f(host, port, end):
        d = tempfile.mkdtemp(prefix="xkv-nut.")
        lport = 22121
        with open(os.path.join(d, "nut.yml"), "w") as fh:
            fh.write(NUT_CFG % (lport, host, port))
        nut = subprocess.Popen(["nutcracker", "-c", os.path.join(d, "nut.yml"),
                                "-o", os.path.join(d, "nut.log"), "-s", "22222"])
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", lport), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            return nut_clients(lport, conns, end)
        finally:
            nut.terminate()
            nut.wait(timeout=10)
            shutil.rmtree(d, ignore_errors=True)
    return f


def nut_clients(lport, conns, end):
    """CONNS raw-socket clients, each one `get` outstanding: the proxy has
    up to CONNS requests at once to put on its one server connection."""
    t, sel, state = Tally(), selectors.DefaultSelector(), {}

    def send(s, i):
        k = keyname(i)
        state[s] = [i, b"", b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k.encode(), VSIZE, value(k, 0))]
        s.sendall(b"get %s\r\n" % k.encode())
    for n in range(conns):
        s = socket.create_connection(("127.0.0.1", lport), timeout=5)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sel.register(s, selectors.EVENT_READ)
        send(s, n * 3)
    open_ = conns
    while open_:
        for ev, _ in sel.select(timeout=5) or [(None, 0)]:
            if ev is None:
                raise TimeoutError("nutcracker: no reply in 5 s")
            s = ev.fileobj
            st = state[s]
            data = s.recv(65536)
            if not data:
                raise ConnectionError("nutcracker closed a connection")
            st[1] += data
            if len(st[1]) < len(st[2]) and st[2].startswith(st[1]):
                continue
            t.check("get %s via nutcracker" % keyname(st[0]), st[2], st[1])
            if time.monotonic() < end and not t.wrong:
                send(s, st[0] + 7 * conns)
            else:
                sel.unregister(s)
                s.close()
                open_ -= 1
    return t.out()


# ---- the meta protocol ------------------------------------------------------

class MetaConn:
    """The meta commands in the forms Dalli's meta protocol writes them
    (its lib/dalli/protocol/meta/request_formatter.rb; Debian's Dalli 3.0.6
    speaks binary only): get "mg KEY v f", a quiet multi-get "mg KEY v f k q
    s" per key then "mn", set "ms KEY BYTES c F0 T0 MS"."""

    def __init__(self, host, port):
        self.s = socket.create_connection((host, port), timeout=5)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _fill(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise RuntimeError("meta: the server closed the connection")
            self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill(len(self.buf) + 1)
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def data(self, n):
        self._fill(n + 2)
        if self.buf[n:n + 2] != b"\r\n":
            raise RuntimeError("meta: a value block without its \\r\\n: %r" % self.buf[:n + 2])
        v, self.buf = self.buf[:n], self.buf[n + 2:]
        return v

    def va(self, ln):
        w = ln.split()
        if not w or w[0] != b"VA":
            raise RuntimeError("meta: %r" % ln)
        return w, self.data(int(w[1]))

    def get(self, k):
        self.s.sendall(b"mg %s v f\r\n" % k.encode())
        ln = self.line()
        return None if ln == b"EN" else self.va(ln)[1]

    def get_multi(self, ks):
        self.s.sendall(b"".join(b"mg %s v f k q s\r\n" % k.encode() for k in ks) + b"mn\r\n")
        out = {}
        while True:
            ln = self.line()
            if ln == b"MN":
                return out
            w, v = self.va(ln)
            out[next(t[1:] for t in w[2:] if t.startswith(b"k")).decode()] = v

    def set(self, k, v):
        self.s.sendall(b"ms %s %d c F0 T0 MS\r\n%s\r\n" % (k.encode(), len(v), v))
        return self.line()


def preload_meta(host, port):
    c = MetaConn(host, port)
    for i in range(NKEYS):
        k = keyname(i)
        ln = c.set(k, value(k, 0))
        if not ln.startswith(b"HD c"):
            raise RuntimeError("preload: ms %s: %r" % (k, ln))


def run_meta(host, port, end):
    # rounds of 8 single gets and a set (the value it had: every read stays
    # checkable), every 4th round a quiet multi-get of 8 keys
    c, t, i, r = MetaConn(host, port), Tally(), 0, 0
    while time.monotonic() < end:
        for _ in range(8):
            k = keyname(i)
            t.check("mg " + k, value(k, 0), c.get(k))
            i += 7
        k = keyname(i + 3)
        ln = c.set(k, value(k, 0))
        t.check("ms " + k, True, ln.startswith(b"HD c") and ln[4:].isdigit())
        if r % 4 == 3:
            ks = [keyname(i + j * 10) for j in range(8)]
            t.check("mg multi " + " ".join(ks), {k: value(k, 0) for k in ks}, c.get_multi(ks), keys=8)
        r += 1
    return t.out()


# ---- the rows ----------------------------------------------------------------

def preload_keys(host, port):
    c = pyclient(host, port)
    for i in range(NKEYS):
        k = keyname(i)
        if not c.set(k, value(k, 0), noreply=False):
            raise RuntimeError("preload: set %s refused" % k)
    got = c.get_many([keyname(i) for i in range(NKEYS)])
    bad = [k for k in got if got[k] != value(k, 0)]
    if len(got) != NKEYS or bad:
        raise RuntimeError("preload: %d of %d keys read back, wrong: %s" % (len(got), NKEYS, bad[:3]))
    c.close()


def php_ok():
    return have_run(["php", "-r", "exit(class_exists('Memcached') ? 0 : 1);"], "php-cli php-memcached")


MASLAP = have_cmd("memcaslap") and "memcaslap missing (apt-get install libmemcached-tools)"
PYMC = have_py("pymemcache") and "python3-pymemcache missing"
# memaslap's keys: more of them than 262,144 in a run (their control bytes,
# 0x10-0x1f, the default key rule takes, as memcached)
MASLAP_ATTACH = ["--entries", "1048576"]
# nutcracker rows: the proxy, and pymemcache behind it (the preload and the clients)
NUT = (have_cmd("nutcracker") and "nutcracker missing (apt-get install nutcracker)") or PYMC
# name: (how to check it can run, preload, run, extra attach options)
ROWS = {
    "pymemcache_get": (PYMC, preload_keys, run_pymc_get, []),
    "pymemcache_setdel": (PYMC, None, run_pymc_setdel, []),
    "pymemcache_setdel_reply": (PYMC, None, lambda h, p, e: run_pymc_setdel(h, p, e, noreply=False), []),
    "pymemcache_get_many": (PYMC, preload_keys, run_pymc_get_many, []),
    "pymemcache_set_many": (PYMC, None, run_pymc_set_many, []),
    "python_memcache": (have_py("memcache") and "python3-memcache missing", None,
                        run_python_memcache, []),
    "php_text": (php_ok, None, run_php("text"), []),
    "php_binary": (php_ok, None, run_php("binary"), []),
    "php_noblock": (php_ok, None, run_php("noblock"), []),
    "php_getmulti": (php_ok, preload_keys, run_php("getmulti"), []),
    "ruby_dalli": (lambda: have_run(["ruby", "-e", "require 'dalli'"], "ruby ruby-dalli"), None,
                   run_ruby, []),
    "perl_fast": (lambda: have_run(["perl", "-MCache::Memcached::Fast", "-e1"],
                                   "libcache-memcached-fast-perl"), preload_keys, run_perl, []),
    "memcp_text": (have_cmd("memccp", "memccat"), None, run_memcp(False), []),
    "memcp_binary": (have_cmd("memccp", "memccat"), None, run_memcp(True), []),
    "memaslap_1k": (MASLAP, preload_memaslap(), run_memaslap(), MASLAP_ATTACH),
    "memaslap_small": (MASLAP, preload_memaslap("SMALL"), run_memaslap("SMALL"), MASLAP_ATTACH),
    "memaslap_binary": (MASLAP, preload_memaslap("SMALL", "-B"), run_memaslap("SMALL", "-B"),
                        MASLAP_ATTACH),
    "memaslap_multiget": (MASLAP, preload_memaslap("SMALL"),
                          run_memaslap("SMALL", "--division=10"), MASLAP_ATTACH),
    "meta_dalli": ("", preload_meta, run_meta, []),
    "nutcracker_8": (NUT, preload_keys, run_nutcracker(8), []),
    "nutcracker_32": (NUT, preload_keys, run_nutcracker(32), []),
}


def skip_reason(name):
    why = ROWS[name][0]
    why = why() if callable(why) else why
    return why or "-"


# ---- the driver's side: a row's JSON line, the table ---------------------------

TCP_PATHS = ("tcp_fast", "tcpx_answered", "tcp_slow")


def counters(path):
    """`xdpkv status --json` counters, fast and slow path summed (or {})."""
    try:
        c = json.load(open(path))["counters"]
    except (OSError, ValueError, KeyError):
        return {}
    out = {}
    for part in c.values():  # fast and slow: some names in both, summed
        for k, v in (part.items() if isinstance(part, dict) else ()):
            if isinstance(v, (int, float)):
                out[k] = out.get(k, 0) + v
    return out


def report(row, server, res_file, busy, hz, segs, st0, st1, dur, layout, elapsed):
    try:
        res = json.loads(open(res_file).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError) as e:
        res = {"error": "no result from the client: %r" % e}
    elapsed = float(elapsed)
    out = {"row": row, "server": server, "layout": layout if server == "xdpkv" else None,
           "duration_s": float(dur), "elapsed_s": round(elapsed, 3)}
    out.update(res)
    req = res.get("requests") or 0
    out["req_per_s"] = round(req / elapsed) if elapsed > 0 and req else None
    busy, own = map(int, busy.split())
    out["server_us_per_req"] = round(busy / int(hz) / req * 1e6, 2) if req else None
    out["own_us_per_req"] = round(own / int(hz) / req * 1e6, 2) if req else None
    # the share of CPU 1's time over the run that neither the server nor its
    # NAPI thread spent: other work on the machine, which the rates suffer from
    out["cpu1_foreign_share"] = (round(max(busy - own, 0) / int(hz) / elapsed, 2)
                                 if elapsed > 0 else None)
    si0, so0, lo0, si1, so1, lo1 = map(int, segs.split())
    # the client namespace's segments to the server: its TcpOutSegs less what
    # went over its loopback (the nutcracker rows: client <-> proxy)
    cout = (so1 - so0) - (lo1 - lo0)
    out.update({"segs_client_out": cout, "segs_server_in": si1 - si0,
                "segs_unseen_share": round(1 - (si1 - si0) / cout, 3) if cout > 0 else None})
    if server == "xdpkv":
        a, b = counters(st0), counters(st1)
        d = {k: b.get(k, 0) - a.get(k, 0) for k in b if k.startswith(("tcp", "cmd_", "get_"))}
        tot = sum(d.get(k, 0) for k in TCP_PATHS)
        out["xdp_share"] = round(d.get("tcpx_answered", 0) / tot, 3) if tot else None
        out["tcp_requests"] = {k: d.get(k, 0) for k in TCP_PATHS}
        out["tcpx"] = {k[5:]: v for k, v in sorted(d.items()) if k.startswith("tcpx_") and v}
    else:
        out["xdp_share"] = None
    out["ok"] = bool(req and not res.get("wrong") and not res.get("error"))
    return out


def table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    mc = {r["row"]: r for r in rows if r["server"] == "memcached" and r.get("ok")}
    fmt = "%-20s %-9s %8s %8s %8s %5s %6s %6s %6s  %s"
    print(fmt % ("row", "server", "req/s", "cpu_us", "own_us", "xdp", "unseen", "x_rate", "x_cpu",
                 "note"))
    for r in rows:
        if r.get("skipped"):
            print(fmt % (r["row"], r["server"], *"-------", "skipped: " + r["skipped"]))
            continue
        m = mc.get(r["row"])
        rate = cpu = "-"
        if m and r.get("ok") and r["server"] != "memcached" and r.get("req_per_s") and m.get("req_per_s"):
            rate = "%.2f" % (r["req_per_s"] / m["req_per_s"])
            if r.get("server_us_per_req") and m.get("server_us_per_req"):
                cpu = "%.2f" % (r["server_us_per_req"] / m["server_us_per_req"])

        def f(x, p="%.3f"):
            return "-" if x is None else p % x
        note = "" if r.get("ok") else "NOT OK: %s" % (r.get("error") or r.get("first_wrong"))
        if (r.get("cpu1_foreign_share") or 0) > 0.2:
            note = "noisy: %d %% of CPU 1 others' %s" % (100 * r["cpu1_foreign_share"], note)
        print(fmt % (r["row"], r["server"], f(r.get("req_per_s"), "%d"),
                     f(r.get("server_us_per_req"), "%.1f"), f(r.get("own_us_per_req"), "%.1f"),
                     f(r.get("xdp_share"), "%.2f"),
                     f(r.get("segs_unseen_share"), "%.2f"), rate, cpu, note[:200]))


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "rows":
        for name in ROWS:
            print(name, skip_reason(name).replace(" ", "_"))
    elif cmd == "attach":
        print(" ".join(ROWS[argv[2]][3] or ["--entries", "262144"]))
    elif cmd == "preload":
        pre = ROWS[argv[2]][1]
        if pre:
            pre(argv[3], int(argv[4]))
    elif cmd == "run":
        end = time.monotonic() + float(argv[5])
        try:
            res = ROWS[argv[2]][2](argv[3], int(argv[4]), end)
        except Exception as e:  # a client's exception is the row's failure, shown
            res = {"error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(res), flush=True)
    elif cmd == "report":
        print(json.dumps(report(*argv[2:13])))
    elif cmd == "table":
        table(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
