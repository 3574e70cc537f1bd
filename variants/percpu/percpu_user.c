// SPDX-License-Identifier: MIT
/* percpu: userspace side.  Only what differs; the accessor is the shared
 * hash-like one (common/store_hash.c). */
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "percpu.skel.h"

static const void *elf(size_t *sz)
{
	return percpu__elf_bytes(sz);
}

const struct xkv_layout xkv_layout_percpu = {
	.name = "percpu",
	.summary = "BPF_MAP_TYPE_PERCPU_HASH: one value copy per CPU, no cross-CPU sharing",
	.loses = "consistency: a set served on one CPU is not seen by a get served on another",
	.map_type = BPF_MAP_TYPE_PERCPU_HASH,
	.elf = elf,

	.get = xkv_hash_get,
	.set = xkv_hash_set,
	.del = xkv_hash_del,
	.count = xkv_hash_count,
	.flush = xkv_hash_flush,
	.set_batch = xkv_hash_set_batch,
};
