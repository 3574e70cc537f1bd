/* SPDX-License-Identifier: MIT */
/* store_lookup/store_set/store_del for the hash-like layouts: a map named
 * `store` keyed by the zero-padded key, the entry as its value.  A variant
 * defines the map, optionally XKV_COUNT_NEW (look the key up first to count
 * new items, for lru's eviction estimate), and includes this. */
#ifndef XDPKV_STORE_HASH_BPF_H
#define XDPKV_STORE_HASH_BPF_H

#define XKV_KEY_IN_VALUE 0

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	return bpf_map_lookup_elem(&store, sc->key); /* percpu: this CPU's copy */
}

/* 0, or -ENOMEM when the map is full (-E2BIG from the kernel) */
static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
#ifdef XKV_COUNT_NEW
	if (!bpf_map_lookup_elem(&store, sc->key))
		stat_inc(st, XKV_STAT_store_new);
#endif
	return bpf_map_update_elem(&store, sc->key, &sc->entry, BPF_ANY) ? -ENOMEM : 0;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return bpf_map_delete_elem(&store, sc->key) == 0;
}

#endif
