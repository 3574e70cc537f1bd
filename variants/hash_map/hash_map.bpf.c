// SPDX-License-Identifier: MIT
/* hash_map: BPF_MAP_TYPE_HASH (jhash, chaining).  Authoritative: a store
 * either succeeds and stays readable, or fails with SERVER_ERROR. */
#include "prelude.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);            /* --entries */
	__uint(key_size, 16);                 /* cfg.key_size, set at load */
	__uint(value_size, sizeof(struct xkv_entry)); /* cfg.entry_size, set at load */
} store SEC(".maps");

#define XKV_KEY_IN_VALUE 0

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	return bpf_map_lookup_elem(&store, sc->key);
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	long err = bpf_map_update_elem(&store, sc->key, &sc->entry, BPF_ANY);
	return err ? -ENOMEM : 0; /* -E2BIG: full */
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return bpf_map_delete_elem(&store, sc->key) == 0;
}

#include "handler.bpf.h"
