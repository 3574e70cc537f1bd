// SPDX-License-Identifier: MIT
/* hash_map: userspace side.  Only what differs; the accessor is the shared
 * hash-like one (store/store_hash.c). */
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "hash_map.skel.h"

XKV_LAYOUT_ELF(hash_map)

static int prepare(struct bpf_map *store, const struct xkv_config *cfg)
{
	if (cfg->flags & XKV_CFG_NO_PREALLOC)
		return bpf_map__set_map_flags(store, bpf_map__map_flags(store) | BPF_F_NO_PREALLOC);
	return 0;
}

const struct xkv_layout xkv_layout_hash_map = {
	.name = "hash_map",
	.summary = "BPF_MAP_TYPE_HASH: kernel jhash with chaining; authoritative",
	.loses = "nothing: a store either succeeds and stays readable or fails with SERVER_ERROR out of memory",
	.map_type = BPF_MAP_TYPE_HASH,
	.elf = elf,
	.map_opts = XKV_CFG_NO_PREALLOC,
	.prepare = prepare,
	XKV_HASH_ACCESSOR,
};
