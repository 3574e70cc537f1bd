// SPDX-License-Identifier: MIT
/* lru: userspace side.  Only what differs; the accessor is the shared
 * hash-like one (common/store_hash.c). */
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "lru.skel.h"

XKV_LAYOUT_ELF(lru)

const struct xkv_layout xkv_layout_lru = {
	.name = "lru",
	.summary = "BPF_MAP_TYPE_LRU_HASH: evicts the least recently used item when full",
	.loses = "items evicted when full (counted as an estimate)",
	.map_type = BPF_MAP_TYPE_LRU_HASH,
	.elf = elf,
	XKV_HASH_ACCESSOR,
};
