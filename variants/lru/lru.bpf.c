// SPDX-License-Identifier: MIT
/* lru: BPF_MAP_TYPE_LRU_HASH.  A store never fails; when the map is full the
 * kernel evicts a least-recently-used item (per-CPU LRU lists).  The kernel
 * does not count evictions, so new items are counted here and the CLI
 * estimates evictions = new items - deletes - live items. */
#include "prelude.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, 16);
	__uint(value_size, sizeof(struct xkv_entry));
} store SEC(".maps");

#define XKV_KEY_IN_VALUE 0

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	return bpf_map_lookup_elem(&store, sc->key);
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	if (!bpf_map_lookup_elem(&store, sc->key))
		stat_inc(st, XKV_STAT_store_new);
	return bpf_map_update_elem(&store, sc->key, &sc->entry, BPF_ANY) ? -ENOMEM : 0;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return bpf_map_delete_elem(&store, sc->key) == 0;
}

#include "handler.bpf.h"
