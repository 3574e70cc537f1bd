#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Client side of tests/e2e/proxy.sh: pymemcache through a memcached proxy
(nutcracker) in front of several xdpkv servers, and straight to each server.

  proxyclient.py load PROXY N              set N keys through the proxy; read every one
                                           back, singly and in multi-gets of hundreds
  proxyclient.py spread PROXY N SERVER...  which server holds each key (direct gets):
                                           every key on exactly one, each a share >= 15 %;
                                           prints "SERVER count" lines and "curr_items" from stats
  proxyclient.py delete PROXY N            delete every third key through the proxy; gone
                                           through the proxy and nowhere else
  proxyclient.py refused PROXY N SERVER... SERVER (the last) refuses the proxy: its keys
                                           get an error through the proxy, the others' answer
Addresses are HOST:PORT.  Exit 0 when every check holds; 1 with a message.
"""
import sys
import time

from pymemcache.client.base import Client
from pymemcache import exceptions as mcexc

BATCHES = (100, 300, 500)


def key(i):
    return "px:%05d" % i


def value(i):
    return ("v%05d-" % i).encode() + bytes(str(i * 7919 % 1000003), "ascii") * (1 + i % 7)


def hostport(s):
    h, p = s.rsplit(":", 1)
    return (h, int(p))


def client(addr):
    return Client(hostport(addr), connect_timeout=10, timeout=20)


def fail(msg):
    print("proxyclient: " + msg, file=sys.stderr)
    sys.exit(1)


def load(proxy, n):
    c = client(proxy)
    for i in range(n):
        if not c.set(key(i), value(i), noreply=False):
            fail("set %s through the proxy: not stored" % key(i))
    for i in range(n):
        v = c.get(key(i))
        if v != value(i):
            fail("get %s through the proxy: %r, want %r" % (key(i), v, value(i)))
    for b in BATCHES:
        for start in range(0, n, b):
            keys = [key(i) for i in range(start, min(n, start + b))]
            got = c.get_many(keys)
            for i in range(start, min(n, start + b)):
                if got.get(key(i)) != value(i):
                    fail("multi-get of %d keys: %s is %r" % (len(keys), key(i), got.get(key(i))))
        print("multi-gets of %d keys: all %d values right" % (b, n))
    # one get with every key and some absent ones mixed in
    keys = [key(i) for i in range(n)] + ["px:absent:%d" % i for i in range(50)]
    got = c.get_many(keys)
    if len(got) != n or any(got[key(i)] != value(i) for i in range(n)):
        fail("one multi-get of %d keys: %d values came back (want %d, all right)" % (len(keys), len(got), n))
    print("one multi-get of %d keys (%d absent): %d values, all right" % (len(keys), 50, n))


def holders(servers, keys):
    where = {}
    for s in servers:
        c = client(s)
        for start in range(0, len(keys), 200):
            for k in c.get_many(keys[start:start + 200]):
                where.setdefault(k, []).append(s)
        c.close()
    return where


def spread(proxy, n, servers):
    keys = [key(i) for i in range(n)]
    where = holders(servers, keys)
    bad = [k for k in keys if len(where.get(k, [])) != 1]
    if bad:
        fail("%d keys not on exactly one server, e.g. %s on %s" % (len(bad), bad[0], where.get(bad[0])))
    ok = True
    for s in servers:
        cnt = sum(1 for k in keys if where[k] == [s])
        # xdpkv recounts curr_items every 10 s (walking the map): wait for it
        deadline = time.monotonic() + 40
        while True:
            items = client(s).stats().get(b"curr_items")
            if items == cnt or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        print("%s %d keys (%.1f %%), stats curr_items %s" % (s, cnt, 100.0 * cnt / n, items))
        if cnt < 0.15 * n:
            ok = False
        if items != cnt:
            fail("%s: stats curr_items %s within 40 s, but %d of our keys are there" % (s, items, cnt))
    if not ok:
        fail("a server holds less than 15 % of the keys")


def delete(proxy, n, servers):
    c = client(proxy)
    gone = [i for i in range(0, n, 3)]
    for i in gone:
        if not c.delete(key(i), noreply=False):
            fail("delete %s through the proxy: NOT_FOUND" % key(i))
    got = c.get_many([key(i) for i in range(n)])
    for i in range(n):
        want = None if i % 3 == 0 else value(i)
        if got.get(key(i)) != want:
            fail("after the deletes, %s is %r through the proxy" % (key(i), got.get(key(i))))
    where = holders(servers, [key(i) for i in gone])
    if where:
        fail("%d deleted keys still on a server, e.g. %s" % (len(where), next(iter(where))))
    if c.delete("px:absent:0", noreply=False):
        fail("delete of an absent key through the proxy said DELETED")
    print("deleted %d keys through the proxy: gone everywhere" % len(gone))


def refused(proxy, n, servers):
    """The last server refuses the proxy.  Which keys live there comes from
    the servers that still answer: a key on none of them is on the last."""
    keys = [key(i) for i in range(n) if i % 3]
    where = holders(servers[:-1], keys)
    theirs = [k for k in keys if k not in where]
    if len(theirs) < 0.1 * len(keys):
        fail("only %d keys seem to be on the refusing server" % len(theirs))
    c = client(proxy)
    errors = 0
    for k in theirs[:20]:
        try:
            v = c.get(k)
            fail("get %s (on the refusing server) through the proxy answered %r" % (k, v))
        except (mcexc.MemcacheError, OSError) as e:
            errors += 1
            last = e
        c.close()  # nutcracker may close the client connection after an error
    for k in [k for k in keys if k in where][:50]:
        if c.get(k) is None:
            fail("get %s (on a server that allows the proxy) through the proxy: miss" % k)
    print("refusing server: %d of %d gets of its keys failed (%s: %s); the other servers' keys answered"
          % (errors, min(20, len(theirs)), type(last).__name__, last))


def main():
    if len(sys.argv) < 4:
        fail(__doc__)
    cmd, proxy, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    servers = sys.argv[4:]
    if cmd == "load":
        load(proxy, n)
    elif cmd == "spread":
        spread(proxy, n, servers)
    elif cmd == "delete":
        delete(proxy, n, servers)
    elif cmd == "refused":
        refused(proxy, n, servers)
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
