// SPDX-License-Identifier: MIT
/* lru: userspace side.  Only what differs; the accessor is the shared
 * hash-like one (store/store_hash.c). */
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "lru.skel.h"

XKV_LAYOUT_ELF(lru)

/* --no-common-lru: an LRU list per CPU instead of one shared list
 * (docs/layouts.md, "lru with --no-common-lru"). */
static int prepare(struct bpf_map *store, const struct xkv_config *cfg)
{
	if (cfg->flags & XKV_CFG_NO_COMMON_LRU)
		return bpf_map__set_map_flags(store, bpf_map__map_flags(store) | BPF_F_NO_COMMON_LRU);
	return 0;
}

const struct xkv_layout xkv_layout_lru = {
	.name = "lru",
	.summary = "BPF_MAP_TYPE_LRU_HASH: evicts the least recently used item when full",
	.loses = "items evicted when full (counted as an estimate)",
	.map_type = BPF_MAP_TYPE_LRU_HASH,
	.elf = elf,
	.map_opts = XKV_CFG_NO_COMMON_LRU,
	.prepare = prepare,
	XKV_HASH_ACCESSOR,
};
