# SPDX-License-Identifier: MIT
"""A memcached started for one re-check and stopped after it.

memcached 1.6.18's safe_strtoull runs strchr(str, '-') on an item's value,
which reads on past the value's \\r\\n into whatever its slab chunk held
before; a long-running memcached therefore now and then calls a number of
2^63 or more "non-numeric" (docs/protocol.md).  A memcached that has served
nothing else has zeroed slab memory (fresh pages), so a differing batch is
re-checked against one such: where it answers as xdpkv, the difference was
the long-running memcached's memory.  (The batch's own items must not put a
'-' there either: gen.key_names makes keys without one.)  Even a fresh
memcached's chunks lie next to its other items, whose headers hold pointers
(a byte 0x2d now and then, where ASLR put the heap): a batch is re-checked
on up to TRIES fresh ones, each on keys of its own, and one that agrees
settles it.  Each re-check gets its own process,
on loopback of the tester's namespace, TCP and UDP on one free port."""
import contextlib
import os
import socket
import subprocess
import time

TRIES = 4


def _free_port():
    """A port free for TCP and UDP on 127.0.0.1 (as the kernel hands one out)."""
    for _ in range(50):
        with socket.socket() as t:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                try:
                    u.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise OSError("freshmc: no free port on 127.0.0.1")


def any_agrees(agrees):
    """True once agrees(addr, t) holds for one of up to TRIES memcacheds
    started in turn (t: 0, 1, ...; addr: its (host, port))."""
    for t in range(TRIES):
        with started() as addr:
            if agrees(addr, t):
                return True
    return False


@contextlib.contextmanager
def started(binary="memcached"):
    """(host, port) of a new memcached, for the with-block; stopped after."""
    port = _free_port()
    cmd = [binary, "-p", str(port), "-U", str(port), "-l", "127.0.0.1", "-m", "64", "-t", "1"]
    if os.geteuid() == 0:
        cmd += ["-u", "nobody"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if p.poll() is not None or time.monotonic() > deadline:
                    raise OSError("freshmc: memcached did not start: %s"
                                  % p.stderr.read().decode(errors="replace").strip())
                time.sleep(0.01)
        yield ("127.0.0.1", port)
    finally:
        p.kill()  # a throwaway: SIGTERM would cost memcached's second of shutdown
        p.wait()
        p.stderr.close()
