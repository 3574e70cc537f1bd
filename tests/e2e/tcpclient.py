#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Clients for tests/e2e/tcp.sh: memcached over TCP against `xdpkv serve`.

  tcpclient.py clients HOST PORT VALCAP HOST6
                                          pymemcache (IPv4 and IPv6) and
                                          python-memcache, every command they
                                          have, checked values
  tcpclient.py many HOST PORT N           N connections open at once, each one
                                          served; stats counts them
  tcpclient.py slow HOST PORT SERVEPID    a client that sends and never reads;
                                          another one is still served, the
                                          server's memory stays bounded
  tcpclient.py half HOST PORT             a client that leaves mid-value
  tcpclient.py bufmem HOST PORT           two half-sent 900 kB sets over
                                          --max-buffer-mib 1: the second refused
  tcpclient.py idle HOST PORT SECS        --idle-timeout SECS: silent closed,
                                          busy served
  tcpclient.py limit HOST PORT N MAX      N connections over --max-conns MAX:
                                          the extra ones are closed at once
  tcpclient.py refused HOST PORT          a source outside --allow: closed,
                                          no byte
  tcpclient.py raw HOST PORT              exact replies: pipelining, quit,
                                          errors
  tcpclient.py lastword HOST PORT N       N connections closed by the segment
                                          with their last (noreply) request
  tcpclient.py halfclose HOST PORT N      N connections that send a request
                                          and shut their side: each answered
  tcpclient.py conns HOST PORT N          stats says N connections are open
  tcpclient.py udptrust HOST PORT         from a source outside --trust: a
                                          large UDP reply is capped, and still
                                          while this source holds a TCP
                                          connection (a UDP source address
                                          proves nothing)

Prints PASS/FAIL lines; exits 1 if any check failed.  Needs Debian's
python3-pymemcache and python3-memcache (run with /usr/bin/python3)."""
import base64
import socket
import sys
import threading
import time

import rawclient  # tests/e2e: memcached UDP framing

failed = 0


def check(ok, what):
    global failed
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failed += 1


def short(v, n=200):
    r = repr(v)
    return r if len(r) <= n else f"{r[:n]}... ({len(r)} characters)"


def expect(what, got, want):
    check(got == want, f"{what}" + ("" if got == want else f": got {short(got)}, want {short(want)}"))


def raises(what, exc, fn, *a, **kw):
    try:
        r = fn(*a, **kw)
    except exc as e:
        check(True, f"{what} ({type(e).__name__}: {e})")
        return
    except Exception as e:  # noqa: BLE001 - report what came instead
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    check(False, f"{what}: returned {r!r}")


def connect(host, port, timeout=5.0):
    return socket.create_connection((host, port), timeout=timeout)


def recv_while(s, more, timeout=5.0):
    """Read while more(bytes so far) holds, until a silence of timeout
    seconds or the end of the stream."""
    s.settimeout(timeout)
    buf = b""
    while more(buf):
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        buf += d
    return buf


def recv_until(s, end, limit=1 << 22, timeout=5.0):
    return recv_while(s, lambda b: not b.endswith(end) and len(b) < limit, timeout)


def ask(host, port, req, end=b"END\r\n"):
    with connect(host, port) as s:
        s.sendall(req)
        return recv_until(s, end)


def stat_values(st, name):
    """The values of the STAT lines named name in a `stats` reply."""
    return [line.split()[2] for line in st.split(b"\r\n") if line.startswith(b"STAT " + name + b" ")]


def stat(host, port, name):
    """One counter of `stats`, as a number."""
    return int(stat_values(ask(host, port, b"stats\r\n"), name)[0])


def binary_value(n):
    return bytes((i * 37 + 11) % 256 for i in range(n))


def t_pymemcache(hosts, port, valcap):
    from pymemcache.client.base import Client
    from pymemcache.exceptions import MemcacheServerError, MemcacheUnknownCommandError

    for h in hosts:
        c = Client((h, port), connect_timeout=3, timeout=3, default_noreply=False)
        tag = f"pymemcache [{h}]"
        c.flush_all()
        time.sleep(0.3)  # the flush walk runs in the background
        check(c.set("pk", b"hello") is True, f"{tag}: set")
        expect(f"{tag}: get", c.get("pk"), b"hello")
        expect(f"{tag}: get of a missing key", c.get("nope"), None)
        blob = binary_value(valcap)
        check(c.set("bin", blob) is True, f"{tag}: set of a {valcap}-byte binary value (every byte, \\r\\n inside)")
        expect(f"{tag}: its get, byte for byte", c.get("bin"), blob)
        c.set("pk2", b"world", noreply=True)  # no reply to read: the next get proves it landed
        expect(f"{tag}: get_many", c.get_many(["pk", "pk2", "nope"]), {"pk": b"hello", "pk2": b"world"})
        expect(f"{tag}: add of an existing key", c.add("pk", b"x"), False)
        expect(f"{tag}: add of a new key", c.add("padd", b"a"), True)
        expect(f"{tag}: replace of an existing key", c.replace("padd", b"b"), True)
        expect(f"{tag}: replace of a missing key", c.replace("prep-none", b"b"), False)
        expect(f"{tag}: get after replace", c.get("padd"), b"b")
        c.set("n", b"10")
        expect(f"{tag}: incr", c.incr("n", 5), 15)
        expect(f"{tag}: decr", c.decr("n", 20), 0)
        expect(f"{tag}: incr of a missing key", c.incr("n-none", 1), None)
        expect(f"{tag}: delete", c.delete("pk"), True)
        expect(f"{tag}: delete again", c.delete("pk"), False)
        expect(f"{tag}: get after delete", c.get("pk"), None)
        # values above --value-size live in the big map, up to memcached's 1 MiB
        big = binary_value(300000)
        check(c.set("big", big) is True, f"{tag}: set of 300000 bytes (--value-size {valcap})")
        expect(f"{tag}: its get, byte for byte", c.get("big"), big)
        expect(f"{tag}: get_many with it", c.get_many(["big", "padd"]), {"big": big, "padd": b"b"})
        mib = binary_value(1 << 20)
        check(c.set("mib", mib) is True, f"{tag}: set of 1 MiB (memcached's item size)")
        expect(f"{tag}: its get", c.get("mib"), mib)
        raises(f"{tag}: a value over 1 MiB is refused", MemcacheServerError, c.set, "huge", b"x" * ((1 << 20) + 1))
        expect(f"{tag}: the connection goes on after it", c.get("padd"), b"b")
        # a key over --key-size (64 here) and under memcached's 250: one no
        # item has (docs/protocol.md, "Keys"), the connection kept
        longkey = "L" * 100
        expect(f"{tag}: get of a 100-byte key (over --key-size): a miss", c.get(longkey), None)
        raises(f"{tag}: its set: SERVER_ERROR object too large for cache", MemcacheServerError,
               c.set, longkey, b"v")
        expect(f"{tag}: its delete: not found", c.delete(longkey), False)
        expect(f"{tag}: the connection goes on after them", c.get("padd"), b"b")
        expect(f"{tag}: delete of the 1 MiB item", c.delete("mib"), True)
        expect(f"{tag}: ... gone", c.get("mib"), None)
        # append, prepend, gets, cas, touch (issue 7)
        expect(f"{tag}: append", c.append("padd", b"c"), True)
        expect(f"{tag}: prepend", c.prepend("padd", b"a"), True)
        expect(f"{tag}: get after them", c.get("padd"), b"abc")
        expect(f"{tag}: append to a missing key", c.append("p-none", b"c"), False)
        expect(f"{tag}: prepend to a missing key", c.prepend("p-none", b"c"), False)
        expect(f"{tag}: ... which stays missing", c.get("p-none"), None)
        expect(f"{tag}: append past --value-size", c.append("bin", b"xy"), True)
        expect(f"{tag}: the value grew into the big map", c.get("bin"), blob + b"xy")
        expect(f"{tag}: prepend to a big value", c.prepend("big", b"<<"), True)
        expect(f"{tag}: ... read back", c.get("big"), b"<<" + big)
        vb, casb = c.gets("big")
        expect(f"{tag}: cas of a big value with its unique", c.cas("big", big[:5000], casb), True)
        expect(f"{tag}: ... now 5000 bytes (inline again)", c.get("big"), big[:5000])
        v, cas1 = c.gets("padd")
        check(v == b"abc" and cas1 is not None and cas1.isdigit(), f"{tag}: gets answers value and cas ({v!r}, {cas1!r})")
        v2, cas2 = c.gets("padd")
        expect(f"{tag}: gets again: the same cas", cas2, cas1)
        expect(f"{tag}: gets of a missing key", c.gets("p-none"), (None, None))
        expect(f"{tag}: cas with a stale unique: EXISTS", c.cas("padd", b"zz", str(int(cas1) + 1).encode()), False)
        expect(f"{tag}: cas of a missing key: NOT_FOUND", c.cas("p-none", b"zz", cas1), None)
        expect(f"{tag}: cas with the unique from gets: STORED", c.cas("padd", b"new", cas1), True)
        v3, cas3 = c.gets("padd")
        check(v3 == b"new" and cas3 != cas1, f"{tag}: gets after cas: new value, new cas ({v3!r}, {cas3!r})")
        expect(f"{tag}: the old unique is stale now", c.cas("padd", b"old", cas1), False)
        c.set("padd", b"set")
        expect(f"{tag}: a set makes the last unique stale", c.cas("padd", b"old", cas3), False)
        expect(f"{tag}: get", c.get("padd"), b"set")
        expect(f"{tag}: touch", c.touch("padd", 1), True)
        expect(f"{tag}: touch of a missing key", c.touch("p-none", 10), False)
        expect(f"{tag}: a touched item still reads", c.get("padd"), b"set")
        time.sleep(1.2)
        expect(f"{tag}: ... until its new exptime (1 s) passes", c.get("padd"), None)
        c.set("padd", b"b")
        st = c.stats()
        check(st.get(b"curr_connections", 0) >= 1 and st.get(b"total_connections", 0) >= 1,
              f"{tag}: stats has curr_connections {st.get(b'curr_connections')} and total_connections "
              f"{st.get(b'total_connections')}")
        expect(f"{tag}: version", c.version(), b"1.6.18")
        c.close()


def t_python_memcache(host, port, valcap):
    import memcache

    mc = memcache.Client([f"{host}:{port}"], socket_timeout=3)
    tag = "python-memcache"
    check(mc.flush_all() is None or True, f"{tag}: flush_all")
    time.sleep(0.3)
    check(mc.set("mk", "hello"), f"{tag}: set")
    expect(f"{tag}: get", mc.get("mk"), "hello")
    check(mc.set("mi", 42), f"{tag}: set of an int (flags carry the type)")
    expect(f"{tag}: get of it", mc.get("mi"), 42)
    blob = binary_value(valcap - 16)
    check(mc.set("mb", blob), f"{tag}: set of binary bytes")
    expect(f"{tag}: get of them", mc.get("mb"), blob)
    big = binary_value(500000)
    check(mc.set("mbig", big), f"{tag}: set of 500000 bytes (--value-size {valcap})")
    expect(f"{tag}: get of them", mc.get("mbig"), big)
    expect(f"{tag}: get_multi", mc.get_multi(["mk", "mi", "none"]), {"mk": "hello", "mi": 42})
    check(not mc.add("mk", "x"), f"{tag}: add of an existing key fails")
    check(mc.add("madd", "a"), f"{tag}: add of a new key")
    check(mc.replace("madd", "b"), f"{tag}: replace")
    check(not mc.replace("mrep-none", "b"), f"{tag}: replace of a missing key fails")
    mc.set("mn", "7")
    expect(f"{tag}: incr", mc.incr("mn", 3), 10)
    expect(f"{tag}: decr", mc.decr("mn", 4), 6)
    check(mc.delete("mk"), f"{tag}: delete")
    expect(f"{tag}: get after delete", mc.get("mk"), None)
    check(mc.append("madd", "c"), f"{tag}: append")
    check(mc.prepend("madd", "a"), f"{tag}: prepend")
    expect(f"{tag}: get after them", mc.get("madd"), "abc")
    check(not mc.append("mnone", "c"), f"{tag}: append to a missing key fails")
    check(not mc.prepend("mnone", "c"), f"{tag}: prepend to a missing key fails")
    mcc = memcache.Client([f"{host}:{port}"], socket_timeout=3, cache_cas=True)
    expect(f"{tag}: gets", mcc.gets("madd"), "abc")
    def cas_id():  # the client keeps it under the encoded key
        return mcc.cas_ids.get(b"madd", mcc.cas_ids.get("madd"))
    cas1 = cas_id()
    check(isinstance(cas1, int) and cas1 > 0, f"{tag}: gets keeps the cas ({cas1!r})")
    check(mc.set("madd", "other"), f"{tag}: another client's set")
    check(not mcc.cas("madd", "mine"), f"{tag}: cas after it: EXISTS, fails")
    expect(f"{tag}: the other client's value stays", mc.get("madd"), "other")
    expect(f"{tag}: gets again", mcc.gets("madd"), "other")
    check(cas_id() not in (None, cas1), f"{tag}: a new cas ({cas_id()!r})")
    check(mcc.cas("madd", "mine"), f"{tag}: cas with it: STORED")
    expect(f"{tag}: get after cas", mc.get("madd"), "mine")
    mcc.disconnect_all()
    check(mc.touch("madd", 100), f"{tag}: touch")
    check(not mc.touch("mnone", 100), f"{tag}: touch of a missing key fails")
    expect(f"{tag}: a touched item still reads", mc.get("madd"), "mine")
    st = mc.get_stats()
    check(len(st) == 1 and "curr_connections" in st[0][1], f"{tag}: get_stats")
    mc.disconnect_all()


def cmd_clients(host, port, valcap, host6):
    t_pymemcache((host, host6), port, int(valcap))
    t_python_memcache(host, port, int(valcap))


def cmd_raw(host, port):
    expect("pipelined set, get, delete, get in one write",
           ask(host, port, b"set r 3 0 2\r\nhi\r\nget r\r\ndelete r\r\nget r\r\n"),
           b"STORED\r\nVALUE r 3 2\r\nhi\r\nEND\r\nDELETED\r\nEND\r\n")
    with connect(host, port) as s:
        s.sendall(b"version\r\nquit\r\nversion\r\n")
        got = recv_until(s, b"never")
    check(got.startswith(b"VERSION 1.6.18\r\n") and got.count(b"VERSION") == 1,
          f"quit: the reply before it, then the connection closes ({got!r})")
    expect("errors: unknown command, bad data chunk; a control byte is a key byte",
           ask(host, port, b"bogus\r\nset k 0 0 2\r\nabc\r\nget \x01k\r\nget k\r\n"),
           # the \n left after the bad chunk ends an empty line: ERROR, as
           # memcached 1.6.18 answers (observed), and its miss for \x01k
           b"ERROR\r\nCLIENT_ERROR bad data chunk\r\nERROR\r\n"
           b"END\r\nEND\r\n")
    with connect(host, port) as s:
        s.sendall(b"set g 5 0 2\r\nhi\r\ngets g\r\n")
        got = recv_until(s, b"END\r\n")
        parts = got.split(b"\r\n")
        cas = parts[1].split(b" ")[-1] if len(parts) > 2 else b"?"
        expect("set, gets: the cas is the last field", got, b"STORED\r\nVALUE g 5 2 " + cas + b"\r\nhi\r\nEND\r\n")
        s.sendall(b"touch g 10\r\ngat 100 g nope\r\ngats 0 g\r\ntouch nope 1\r\nverbosity 1\r\n"
                  b"verbosity 1 noreply\r\ntouch g x\r\ngat 1\r\ncas g 0 0 1 " + cas + b"\r\nX\r\n"
                  b"cas g 0 0 1 " + cas + b"\r\nY\r\nappend g 0 0 1\r\nZ\r\nget g\r\n")
        expect("touch, gat, gats, verbosity, cas, append: memcached's replies",
               recv_until(s, b"XZ\r\nEND\r\n"),
               b"TOUCHED\r\nVALUE g 5 2\r\nhi\r\nEND\r\nVALUE g 5 2 " + cas + b"\r\nhi\r\nEND\r\n"
               # gat with no key: END (memcached 1.6.18)
               b"NOT_FOUND\r\nOK\r\nCLIENT_ERROR invalid exptime argument\r\nEND\r\nSTORED\r\n"
               b"EXISTS\r\nSTORED\r\nVALUE g 0 2\r\nXZ\r\nEND\r\n")
    expect("meta: mg with v f t k s, a quiet miss, an opaque, mn",
           ask(host, port, b"set mfoo 5 0 3\r\nbar\r\nmg mfoo v f t k s\r\nmg missing v\r\n"
               b"mg missing v q\r\nmg mfoo v q O123\r\nmn\r\n", b"MN\r\n"),
           b"STORED\r\nVA 3 f5 t-1 kmfoo s3\r\nbar\r\nEN\r\nVA 3 O123\r\nbar\r\nMN\r\n")
    # b: the key base64-encoded in the request, and again in k's answer, then b
    bk = base64.b64encode(b"mb64")
    expect("meta: b (base64 keys) on ms, mg, md; k answers the key encoded",
           ask(host, port, b"ms " + bk + b" 2 b k\r\nhi\r\nmg mb64 v\r\nmg " + bk + b" b k v\r\n"
               b"md " + bk + b" b\r\nmg " + bk + b"= b\r\nmn\r\n", b"MN\r\n"),
           b"HD k" + bk + b" b\r\nVA 2\r\nhi\r\nVA 2 k" + bk + b" b\r\nhi\r\nHD\r\n"
           b"CLIENT_ERROR error decoding key\r\nMN\r\n")
    # the rest of the meta protocol: one pipelined write, quiet mode, mn
    with connect(host, port) as s:
        s.sendall(b"md mq q\r\nms mq 3 T0 F5\r\nbar\r\nms mq 2 MA q\r\nzz\r\nmg mq v f t q O1\r\n"
                  b"mg mnope v q\r\nms mnope 1 MR q\r\nx\r\nms mc 1 q\r\n5\r\nma mc D10 v q\r\n"
                  b"ma mc D10 v\r\nma mnope q\r\nmd mq q\r\nmd mq q\r\nmd mq\r\nme mnope\r\n"
                  b"ms mq 1 C1\r\nx\r\nmn\r\n")
        expect("meta: ms (modes, quiet), mg, ma, md, me, cas mismatch, pipelined, then mn",
               recv_until(s, b"MN\r\n"),
               # md q hides HD only: a miss still says NF (memcached 1.6.18)
               b"NF\r\nHD\r\nVA 5 f5 t-1 O1\r\nbarzz\r\nNS\r\nVA 2\r\n25\r\nNF\r\nNF\r\n"
               b"NF\r\nEN\r\nNF\r\nMN\r\n")
        # a data block in two writes: the ms waits for it
        s.sendall(b"ms mw 4 c\r\nab")
        time.sleep(0.05)
        s.sendall(b"cd\r\nmg mw v c\r\n")
        got = recv_until(s, b"abcd\r\n")
        cas = got.split(b"\r\n")[0][4:]
        expect("meta: ms whose block arrives later; the cas it returns is mg's",
               got, b"HD c" + cas + b"\r\nVA 4 c" + cas + b"\r\nabcd\r\n")
    # a request in many small writes
    with connect(host, port) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for b in b"set t 0 0 5\r\nab\r\nc\r\nget t\r\n":
            s.send(bytes([b]))
            time.sleep(0.001)
        expect("a set and a get sent one byte per write", recv_until(s, b"END\r\n"),
               b"STORED\r\nVALUE t 0 5\r\nab\r\nc\r\nEND\r\n")


def cmd_many(host, port, n):
    n = int(n)
    socks = []
    for i in range(n):
        socks.append(connect(host, port))
    for i, s in enumerate(socks):
        s.sendall(b"set c%d 0 0 %d\r\n%d\r\nget c%d\r\n" % (i, len(str(i)), i, i))
    ok = 0
    for i, s in enumerate(socks):
        want = b"STORED\r\nVALUE c%d 0 %d\r\n%d\r\nEND\r\n" % (i, len(str(i)), i)
        if recv_until(s, b"END\r\n") == want:
            ok += 1
    check(ok == n, f"{n} connections open at once, each one served ({ok})")
    st = ask(host, port, b"stats\r\n")
    cur = [int(v) for v in stat_values(st, b"curr_connections")]
    check(cur and cur[0] >= n + 1, f"stats: curr_connections {cur} with {n} + 1 open")
    for s in socks:
        s.close()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def cmd_slow(host, port, pid):
    pid = int(pid)
    val = b"v" * 2000
    expect("slow reader: the value it will ask for", ask(host, port, b"set sv 0 0 2000\r\n" + val + b"\r\n",
                                                         b"\r\n"), b"STORED\r\n")
    before = rss_kb(pid)
    slow = connect(host, port)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.setblocking(False)
    req = b"get sv\r\n" * 4096
    sent = 0
    t_end = time.time() + 3
    while time.time() < t_end:  # until the server stops reading from it
        try:
            sent += slow.send(req)
        except BlockingIOError:
            time.sleep(0.01)
    asked = sent // 8
    check(asked > 1000, f"slow reader: {asked} gets sent ({asked * 2 // 1000} MB of replies asked for) "
          "before the server stopped reading")
    t0 = time.time()
    got = ask(host, port, b"get sv\r\n")
    dt = time.time() - t0
    check(got == b"VALUE sv 0 2000\r\n" + val + b"\r\nEND\r\n" and dt < 2,
          f"slow reader: another client is served meanwhile ({dt:.3f} s)")
    after = rss_kb(pid)
    check(after - before < 16 * 1024,
          f"slow reader: the server's memory stays bounded (RSS {before} -> {after} KiB)")
    slow.close()
    time.sleep(0.3)
    expect("slow reader gone: still served", ask(host, port, b"get sv\r\n")[:15], b"VALUE sv 0 2000")


def cmd_half(host, port):
    with connect(host, port) as s:
        s.sendall(b"set half 0 0 1000\r\n" + b"h" * 500)
        time.sleep(0.2)
    with connect(host, port) as s:
        s.sendall(b"get half\r\nset half2 0 0 1000\r\n" + b"h" * 10)
        time.sleep(0.1)
        s.shutdown(socket.SHUT_WR)  # the rest of the value never comes
        got = recv_until(s, b"never")
    expect("a client that leaves mid-value: nothing stored, the next get answered, the half "
           "request dropped", got, b"END\r\n")
    expect("... and the server goes on", ask(host, port, b"get half half2\r\n"), b"END\r\n")


def cmd_lastword(host, port, n):
    """n connections whose last request, one with no reply, comes in the
    segment that closes them (corked: the data and the FIN in one segment),
    so that the server reads it and the end of the stream at one event: each
    request is done (an incr of one counter: it ends at n) and each
    connection closed (tcpclient.py conns checks that after)."""
    n = int(n)
    expect("lastword: the counter set", ask(host, port, b"set lastword 0 0 1\r\n0\r\n", b"\r\n"), b"STORED\r\n")
    for _ in range(n):
        s = connect(host, port)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        s.sendall(b"incr lastword 1 noreply\r\n")
        s.close()
    want = b"VALUE lastword 0 %d\r\n%d\r\nEND\r\n" % (len(str(n)), n)
    for _ in range(50):  # the last connections' requests may still be on their way
        got = ask(host, port, b"get lastword\r\n")
        if got == want:
            break
        time.sleep(0.1)
    expect("lastword: every connection's last request done", got, want)


def cmd_halfclose(host, port, n, path="verdict"):
    """n connections that send a request and shut their sending side in the
    same segment (corked), then read to the end: each gets its reply before
    the server closes, as from memcached.  Each connection asks once first,
    so that it is in the kernel's sockhash (a socket already closing cannot
    join it).  A get of a missing key: the kernel answers both (the reply is
    shorter than the request) while the server sees the end of the stream at
    once; then a hit, which userspace answers (no credit yet).  path "xdp"
    (the XDP responder, attach's default): the first get of each connection
    may be answered in XDP, the second never (a FIN in the segment), so no
    share in the kernel is asked for, only both replies."""
    n = int(n)
    expect("halfclose: the key set", ask(host, port, b"set halfclose 0 0 2\r\nhc\r\n", b"\r\n"),
           b"STORED\r\n")
    miss, hit = b"get halfclose-none\r\n", b"get halfclose\r\n"
    for req, want, kernel, end in ((miss, b"END\r\n", 2 * n, "fin"),
                                   (hit, b"VALUE halfclose 0 2\r\nhc\r\nEND\r\n", None, "fin"),
                                   (miss, b"END\r\n", 2 * n, "quit")):
        fast_before = stat(host, port, b"tcp_fast")
        bad = []
        for _ in range(n):
            s = connect(host, port)
            s.sendall(req)
            first = recv_until(s, want)
            if end == "fin":
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                s.sendall(req)
                s.shutdown(socket.SHUT_WR)
            else:  # quit in the next segment: the server closes
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.sendall(req)
                s.sendall(b"quit\r\n")
            got = first + recv_while(s, lambda b: True, 2.0)
            s.close()
            if got != want * 2:
                bad.append(got)
        expect("halfclose: %d x %r, the second then %s: both answered before the close"
               % (n, req, "the FIN in its segment" if end == "fin" else "quit"), bad[:3], [])
        fast = stat(host, port, b"tcp_fast") - fast_before
        if kernel is not None and path == "verdict":
            # The test is only worth its name if the kernel answered (nearly)
            # all of them.  Not all, always: the verdict hands a segment to
            # userspace when it cannot answer it there and then (the CPU's
            # scratch taken by a verdict it interrupted, a skb it cannot
            # pull), and userspace answers it as well.  CI once saw 999/1000.
            check(fast >= kernel - kernel // 100,
                  "halfclose: %r answered in the kernel, all but at most 1 %%: %d of %d"
                  % (req, fast, kernel))


def cmd_bufmem(host, port):
    """serve --max-buffer-mib 1: one half-sent 900 kB set holds most of it; a
    second one is refused as memcached refuses a set it cannot allocate:
    SERVER_ERROR out of memory storing object, its data swallowed, the old
    item gone, the connection in step; the first completes."""
    n = 900000
    v1, v2 = binary_value(n), b"w" * n
    s1, s2 = connect(host, port), connect(host, port)
    s1.sendall(b"set bm1 0 0 %d\r\n" % n + v1[:100])
    time.sleep(0.3)
    s2.sendall(b"set bm2 0 0 3\r\nold\r\n")
    expect("bufmem: a small set", recv_until(s2, b"\r\n"), b"STORED\r\n")
    s2.sendall(b"set bm2 0 0 %d\r\n" % n + v2[:100])
    got = recv_until(s2, b"\r\n")
    expect("bufmem: a second 900 kB set over --max-buffer-mib: refused before its data is in",
           got, b"SERVER_ERROR out of memory storing object\r\n")
    s2.sendall(v2[100:] + b"\r\nget bm2\r\n")
    expect("bufmem: ... its data swallowed, the old item gone (as memcached)",
           recv_until(s2, b"END\r\n"), b"END\r\n")
    s1.sendall(v1[100:] + b"\r\nget bm1\r\n")
    got = recv_until(s1, b"END\r\n")
    expect("bufmem: the first set completes and reads back",
           got, b"STORED\r\nVALUE bm1 0 %d\r\n" % n + v1 + b"\r\nEND\r\n")
    s1.close()
    s2.close()


def cmd_idle(host, port, secs):
    """serve --idle-timeout SECS: a silent connection is closed after it,
    one that keeps asking is not."""
    secs = float(secs)
    quiet, busy = connect(host, port), connect(host, port)
    end = time.time() + secs * 2 + 1.5
    ok = True
    while time.time() < end:
        busy.sendall(b"version\r\n")
        ok = ok and recv_until(busy, b"\r\n", timeout=2).startswith(b"VERSION ")
        time.sleep(0.3)
    check(ok, f"idle: a connection asking every 0.3 s is served for {secs * 2 + 1.5:.1f} s")
    try:
        quiet.settimeout(2)
        got = quiet.recv(100)
    except OSError as e:
        got = repr(e).encode()
    check(got == b"", f"idle: a silent one was closed after --idle-timeout {secs:g} ({got!r})")
    # memcached shows idle_kicks when an idle timeout is set: the silent one
    busy.sendall(b"stats\r\n")
    st = recv_until(busy, b"END\r\n", timeout=2)
    kicks = [l.split()[2] for l in st.split(b"\r\n") if l.startswith(b"STAT idle_kicks ")]
    check(kicks and int(kicks[0]) >= 1, f"idle: stats idle_kicks counts it ({kicks})")
    quiet.close()
    busy.close()


def cmd_limit(host, port, n, mx):
    """n connections over --max-conns mx: the extra ones are told, as by
    memcached (maxconns_fast), "ERROR Too many open connections" and closed
    at once; the others are served."""
    n, mx = int(n), int(mx)
    socks = [connect(host, port) for _ in range(n)]
    time.sleep(0.5)
    alive, told, other = 0, 0, []
    for s in socks:
        s.setblocking(False)  # a refused one was told at once: it is there now
        try:
            first = s.recv(200)
        except BlockingIOError:  # nothing waiting: not refused
            first = None
        except OSError as e:
            first = repr(e).encode()
        s.settimeout(5.0)
        if first is not None:
            rest = recv_while(s, lambda b: True, 2.0) if first else b""
            if first + rest == b"ERROR Too many open connections\r\n":
                told += 1
            else:
                other.append(first + rest)
            continue
        try:
            s.sendall(b"version\r\n")
            if recv_until(s, b"\r\n", timeout=2).startswith(b"VERSION"):
                alive += 1
        except OSError:
            pass
    check(alive == mx and told == n - mx and not other,
          f"{n} connections with --max-conns {mx}: {alive} served, {told} told 'ERROR Too many "
          f"open connections' and closed (want {mx} and {n - mx}; other: {other[:3]})")
    for s in socks:
        s.close()
    time.sleep(0.5)
    expect("below the limit again: served", ask(host, port, b"version\r\n", b"\r\n")[:16], b"VERSION 1.6.18\r\n")


def cmd_refused(host, port):
    try:
        s = connect(host, port)
    except OSError as e:
        check(False, f"refused source: connect failed ({e}); want accepted and closed")
        return
    try:
        s.sendall(b"version\r\nset x 0 0 1\r\nx\r\n")
        got = recv_until(s, b"never", timeout=3)
    except OSError as e:
        got = b""
        print(f"    ({e})")
    check(got == b"", f"refused source: the connection is closed with no data ({got!r})")


def cmd_conns(host, port, want):
    """curr_connections, asked on one connection (an asker per try would
    count the previous one's close, not yet seen), until it is `want`."""
    cur = None
    with connect(host, port) as s:
        for _ in range(50):  # closes are seen by the server a moment later
            s.sendall(b"stats\r\n")
            st = recv_until(s, b"END\r\n")
            cur = stat_values(st, b"curr_connections")
            if cur == [want.encode()]:
                break
            time.sleep(0.1)
    expect("stats: curr_connections", cur, [want.encode()])


def udp_get(host, port, key):
    """One memcached UDP get (rawclient's framing and checks); its reply text."""
    conn = rawclient.Conn(host, port)
    try:
        return conn.recv_reply(conn.send(b"get " + key + b"\r\n"))[0]
    except rawclient.Fail as e:
        return b"(%s)" % str(e).encode()
    finally:
        conn.sock.close()


def cmd_udptrust(host, port):
    val = binary_value(1000)
    full = b"VALUE bigtrust 0 1000\r\n" + val + b"\r\nEND\r\n"
    capped = b"SERVER_ERROR reply too large for an unverified source\r\n"
    got = ask(host, port, b"set bigtrust 0 0 1000\r\n" + val + b"\r\n", end=b"STORED\r\n")
    expect("udptrust: set over TCP", got, b"STORED\r\n")
    time.sleep(0.3)  # that connection's close reaches the server
    expect("udptrust: 1000 B over UDP to a source outside --trust: capped",
           udp_get(host, port, b"bigtrust"), capped)
    with connect(host, port) as s:
        s.sendall(b"version\r\n")  # answered: the server has accepted it
        check(recv_until(s, b"\r\n").startswith(b"VERSION "), "udptrust: a TCP connection is open")
        # a spoofer could claim this address: the TCP connection is no
        # reason to lift the cap (issue 17, item 4)
        expect("udptrust: ... still capped while it is open",
               udp_get(host, port, b"bigtrust"), capped)
    check(len(full) > len(capped), "udptrust: the full reply is longer than the cap's line")


def main():
    cmds = {"udptrust": cmd_udptrust, "conns": cmd_conns, "clients": cmd_clients, "many": cmd_many, "slow": cmd_slow, "half": cmd_half, "lastword": cmd_lastword, "halfclose": cmd_halfclose,
            "limit": cmd_limit, "bufmem": cmd_bufmem, "idle": cmd_idle, "refused": cmd_refused, "raw": cmd_raw}
    if len(sys.argv) < 4 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    host, port = sys.argv[2], int(sys.argv[3])
    cmds[sys.argv[1]](host, port, *sys.argv[4:])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
