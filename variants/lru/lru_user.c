// SPDX-License-Identifier: MIT
/* lru: userspace side.  Only what differs; the accessor is the shared
 * hash-like one (common/store_hash.c). */
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "lru.skel.h"

static const void *elf(size_t *sz)
{
	return lru__elf_bytes(sz);
}

const struct xkv_layout xkv_layout_lru = {
	.name = "lru",
	.summary = "BPF_MAP_TYPE_LRU_HASH: evicts the least recently used item when full",
	.loses = "items evicted when full (counted as an estimate)",
	.map_type = BPF_MAP_TYPE_LRU_HASH,
	.elf = elf,

	.get = xkv_hash_get,
	.set = xkv_hash_set,
	.del = xkv_hash_del,
	.count = xkv_hash_count,
	.flush = xkv_hash_flush,
	.set_batch = xkv_hash_set_batch,
};
