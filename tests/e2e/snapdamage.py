#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Damage a snapshot file as a bad disk would: one byte of one block's
# payload flipped (docs/snapshots.md, "File format").
#   snapdamage.py IN OUT BLOCK   (BLOCK: 0-based, in file order)
# Writes the damaged copy to OUT and prints "blocks ITEMS_0 ITEMS_1 ...":
# the items each block's header says it holds (a salvage restores all but
# the damaged block's).
import struct
import sys

src, dst, which = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(src, "rb").read())
assert data[:8] == b"XKVSNAP\0", "not a snapshot"
hdr_len = struct.unpack_from("<I", data, 12)[0]
off, items, hit = hdr_len, [], False
while off + 40 <= len(data):
    magic, _codec, _raw, comp, n = struct.unpack_from("<IIIII", data, off)
    assert magic == 0x4B4C4258, "block header at %d" % off
    if len(items) == which:
        data[off + 40 + comp // 2] ^= 0xFF
        hit = True
    items.append(n)
    off += 40 + comp
assert hit, "the file has %d blocks" % len(items)
open(dst, "wb").write(data)
print("blocks", *items)
