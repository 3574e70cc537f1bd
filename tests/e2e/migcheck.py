#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of tests/e2e/migrate.sh on `xdpkv dump` output after a migration.

  migcheck.py acked LOAD.json DUMP.jsonl LAYOUT ENTRIES
      every key migload.py wrote holds its last acknowledged state (array_fnv:
      or is gone with another key it wrote, or a key in DUMP, in its slot)
  migcheck.py kept BEFORE.jsonl DUMP.jsonl LAYOUT ENTRIES [LOAD.json]
      every item of BEFORE is in DUMP, identical (value, flags, expiry, cas)

In array_fnv a key may be gone because another key took its slot (the
layout's one way to lose items, reported as collisions): a key that is not
there passes only if the dump holds another key in the same slot, or one of
the keys migload.py wrote (LOAD.json; it may have deleted it since) has that
slot (FNV-1a 64 of the key bytes modulo ENTRIES, variants/array_fnv/slot.h).
Anywhere else, and for a key that is there with other contents, it fails.
"""
import base64
import json
import sys


def fnv1a(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def key_of(d):
    return d["key"] if "key" in d else base64.b64decode(d["key_b64"]).decode("latin-1")


def load(p):
    return {key_of(d): d for d in (json.loads(l) for l in open(p))}


def main():
    cmd, layout, entries = sys.argv[1], sys.argv[4], int(sys.argv[5])
    dump = load(sys.argv[3])
    taken = {}
    writers = list(dump)
    if cmd == "acked":
        writers += list(json.load(open(sys.argv[2]))["last"])
    elif len(sys.argv) > 6:
        writers += list(json.load(open(sys.argv[6]))["last"])
    for k in writers:
        taken.setdefault(fnv1a(k.encode()) % entries, set()).add(k)

    def displaced(k):
        return layout == "array_fnv" and bool(taken.get(fnv1a(k.encode()) % entries, set()) - {k})

    bad, collided = [], 0
    if cmd == "acked":
        last = json.load(open(sys.argv[2]))["last"]
        for k, v in last.items():
            have = dump.get(k, {}).get("value") if k in dump else None
            if have == v:
                continue
            if v is not None and k not in dump and displaced(k):
                collided += 1
                continue
            bad.append((k, v, have))
        what = "acknowledged keys"
        n = len(last)
    else:
        before = load(sys.argv[2])
        for k, d in before.items():
            if dump.get(k) == d:
                continue
            if k not in dump and displaced(k):
                collided += 1
                continue
            bad.append((d, dump.get(k)))
        what = "items of before"
        n = len(before)
    print("  %d %s: %d as they must be, %d displaced by a colliding key, %d wrong %s"
          % (n, what, n - collided - len(bad), collided, len(bad), bad[:3]))
    return 0 if not bad else 1


sys.exit(main())
