// SPDX-License-Identifier: MIT
/* lru_percpu: userspace side.  Only what differs; the accessor is the shared
 * hash-like one (store/store_hash.c: every CPU's copy, new items counted). */
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "lru_percpu.skel.h"

XKV_LAYOUT_ELF(lru_percpu)

const struct xkv_layout xkv_layout_lru_percpu = {
	.name = "lru_percpu",
	.summary = "BPF_MAP_TYPE_LRU_PERCPU_HASH: a value copy per CPU, evicts when full",
	.loses = "consistency across CPUs (as percpu) and items evicted when full (as lru, estimated)",
	.map_type = BPF_MAP_TYPE_LRU_PERCPU_HASH,
	.elf = elf,
	XKV_HASH_ACCESSOR,
};
