// SPDX-License-Identifier: MIT
/* percpu: userspace side.  Only what differs; the accessor is the shared
 * hash-like one (store/store_hash.c). */
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "percpu.skel.h"

XKV_LAYOUT_ELF(percpu)

const struct xkv_layout xkv_layout_percpu = {
	.name = "percpu",
	.summary = "BPF_MAP_TYPE_PERCPU_HASH: one value copy per CPU, no cross-CPU sharing",
	.loses = "consistency: a set served on one CPU is not seen by a get served on another",
	.map_type = BPF_MAP_TYPE_PERCPU_HASH,
	.elf = elf,
	XKV_HASH_ACCESSOR,
};
