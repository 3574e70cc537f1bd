#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn `xdpkv status IFACE --json` output into shell variables.

  xkvstatus.py delta BEFORE.json AFTER.json
      fast_<counter>=N and slow_<counter>=N: counter growth between the two
      snapshots, for every counter of common/stats.h; fast_share: the fast
      path's replies as an integer percentage of the datagrams it saw;
      served_fast / served_slow / served_share: the status' own split
      (datagrams not passed on vs datagrams the slow path read), share in %.
  xkvstatus.py show STATUS.json
      live, entries (capacity), map_memory, bytes_per_item (per live item),
      bytes_per_entry (per entry of capacity), layout, mode.

Every name printed is a valid shell identifier; values are numbers or words.
"""

import json
import re
import sys


def load(path):
    with open(path) as f:
        j = json.load(f)
    for k in ("counters", "requests", "live", "map_memory"):
        if k not in j:
            sys.exit("xkvstatus: %s: no '%s' in the status JSON" % (path, k))
    return j


def emit(name, value):
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        sys.exit("xkvstatus: bad name %r" % name)
    if not re.fullmatch(r"[A-Za-z0-9_.+-]*", str(value)):
        sys.exit("xkvstatus: bad value %r for %s" % (value, name))
    print("%s=%s" % (name, value))


def delta(before, after):
    a, b = load(before), load(after)
    for side in ("fast", "slow"):
        for name, v in b["counters"][side].items():
            emit("%s_%s" % (side, name), v - a["counters"][side].get(name, 0))
    req = b["counters"]["fast"]["requests"] - a["counters"]["fast"]["requests"]
    rep = b["counters"]["fast"]["replies"] - a["counters"]["fast"]["replies"]
    emit("fast_share", rep * 100 // req if req > 0 else 0)
    sf = b["requests"]["fast"] - a["requests"]["fast"]
    ss = b["requests"]["slow"] - a["requests"]["slow"]
    emit("served_fast", sf)
    emit("served_slow", ss)
    emit("served_share", "%.1f" % (100.0 * sf / (sf + ss)) if sf + ss > 0 else "0.0")


def show(path):
    j = load(path)
    emit("live", j["live"])
    emit("entries", j.get("entries", 0))
    emit("map_memory", j["map_memory"])
    bpe = j.get("bytes_per_entry")
    emit("bytes_per_entry", "%.1f" % bpe if bpe is not None and bpe >= 0 else "-")
    bpi = j.get("bytes_per_item")
    emit("bytes_per_item", "%.1f" % bpi if bpi is not None else "-")
    emit("layout", j.get("layout", "?"))
    emit("mode", j.get("mode", "?"))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "delta":
        delta(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "show":
        show(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
