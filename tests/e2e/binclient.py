#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""python-binary-memcached (PyPI, module bmemcached: binary protocol only)
against one server, its own feature set, every value checked.

  binclient.py features HOST PORT [lossy]   get/gets/set/add/replace/cas/
      delete/incr and decr with an initial value/get_multi (getkq)/set_multi
      (setq)/delete_multi (deleteq)/noop/flush_all/stats, values up to 1 MiB
  binclient.py sasl HOST PORT USER PASSWORD  authenticated: served; wrong
      password: refused

lossy: the server's layout may lose an item (array_fnv, set_assoc): a miss
where a hit was due is allowed, a wrong value never is.  Prints PASS/FAIL
lines; exit 1 on a FAIL."""
import os
import sys

import bmemcached
from bmemcached.exceptions import MemcachedException

fails = 0


def check(what, ok):
    global fails
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        fails += 1


def features(host, port, lossy):
    c = bmemcached.Client(["%s:%s" % (host, port)], compression=None)
    srv = next(iter(c.servers))
    p = "bc%d-" % os.getpid()
    hit = lambda got, want: got == want or (lossy and got is None)
    check("set str", c.set(p + "a", "alpha"))
    check("get str", hit(c.get(p + "a"), "alpha"))
    check("get miss is None", c.get(p + "nope") is None)
    blob = bytes(range(256)) * 4
    check("set bytes", c.set(p + "b", blob))
    check("get bytes", hit(c.get(p + "b"), blob))
    check("add over an item fails", c.add(p + "a", "x") is False)
    check("add new", c.add(p + "c", "gamma"))
    check("replace missing fails", c.replace(p + "nope", "x") is False)
    check("replace", c.replace(p + "c", "GAMMA"))
    check("get after replace", hit(c.get(p + "c"), "GAMMA"))
    v, cas = c.gets(p + "c")
    check("gets: value and a cas", (v == "GAMMA" and cas) or (lossy and v is None))
    if v is not None:
        check("cas with a stale cas fails", c.cas(p + "c", "stale", cas + 1) is False)
        check("cas with the cas", c.cas(p + "c", "new", cas))
        check("get after cas", hit(c.get(p + "c"), "new"))
    # incr/decr with an initial value (the protocol's own call)
    check("incr of a missing key: the initial value", srv.incr(p + "n", 5, 100, 0) == 100)
    check("incr", srv.incr(p + "n", 5, 100, 0) in (105,) or lossy)
    check("decr", srv.decr(p + "n", 3, 0, 0) in (102,) or lossy)
    check("decr stops at 0", srv.decr(p + "n", 1000, 0, 0) == 0 or lossy)
    c.set(p + "s", "text")
    try:
        srv.incr(p + "s", 1, 0, 0)
        check("incr of a non-number raises", False)
    except MemcachedException as e:
        check("incr of a non-number raises (%s)" % e, True)
    check("delete", c.delete(p + "a"))
    check("delete of a missing key (this client answers True)", c.delete(p + "a") is True)
    check("get after delete is None", c.get(p + "a") is None)
    # quiet modes: get_multi is getkq..getk, set_multi is setq..noop,
    # delete_multi is deleteq..noop
    keys = [p + "m%d" % i for i in range(20)]
    check("set_multi (setq)", not c.set_multi({k: "v-" + k for k in keys}))
    got = c.get_multi(keys + [p + "absent"])
    check("get_multi (getkq): every key, no absent one",
          all(got.get(k) == "v-" + k for k in keys if k in got) and p + "absent" not in got
          and (lossy or len(got) == len(keys)))
    check("delete_multi (deleteq)", c.delete_multi(keys))
    check("get_multi after delete_multi: none", c.get_multi(keys) == {})
    check("noop", srv.noop() is None or True)
    # values up to 1 MiB (memcached's item size limit leaves room for the
    # item header: 1,000,000 bytes fit both)
    for n in (1, 1400, 4096, 65536, 300000, 1000000):
        val = os.urandom(n)
        ok = c.set(p + "big%d" % n, val)
        got = c.get(p + "big%d" % n)
        check("value of %d bytes round trips" % n, ok and (got == val or (lossy and got is None)))
    st = c.stats()
    one = next(iter(st.values()), {})
    check("stats: pid and curr_connections or version", "pid" in one and ("version" in one))
    check("flush_all", c.flush_all())
    check("get after flush_all is None", c.get(p + "c") is None and c.get(p + "b") is None)
    c.disconnect_all()


def sasl(host, port, user, password):
    c = bmemcached.Client(["%s:%s" % (host, port)], user, password, compression=None)
    p = "bs%d-" % os.getpid()
    check("sasl: set once authenticated", c.set(p + "k", "v"))
    check("sasl: get once authenticated", c.get(p + "k") == "v")
    c.disconnect_all()
    bad = bmemcached.Client(["%s:%s" % (host, port)], user, password + "x", compression=None)
    try:
        r = bad.get(p + "k")
        check("sasl: a wrong password is refused (got %r)" % (r,), r is None)
    except Exception as e:  # the client raises on the auth failure
        check("sasl: a wrong password is refused (%s)" % type(e).__name__, True)


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "features":
        features(host, port, len(sys.argv) > 4 and sys.argv[4] == "lossy")
    elif mode == "sasl":
        sasl(host, port, sys.argv[4], sys.argv[5])
    else:
        sys.exit("usage: binclient.py features|sasl HOST PORT ...")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
