// SPDX-License-Identifier: MIT
/* percpu: BPF_MAP_TYPE_PERCPU_HASH.  One element per key, one value copy per
 * CPU.  A set from XDP writes only the copy of the CPU that served it (the
 * kernel zeroes the other copies of a new element: wtime_ns == 0 reads as a
 * miss); a get reads only its own CPU's copy, so it can be stale.  The slow
 * path and the CLI read every copy and take the newest live one; the CLI's
 * set writes every copy.  A delete removes the element for all CPUs. */
#include "prelude.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, 16);
	__uint(value_size, sizeof(struct xkv_entry));
} store SEC(".maps");

#define XKV_KEY_IN_VALUE 0

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	return bpf_map_lookup_elem(&store, sc->key); /* this CPU's copy */
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return bpf_map_update_elem(&store, sc->key, &sc->entry, BPF_ANY) ? -ENOMEM : 0;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return bpf_map_delete_elem(&store, sc->key) == 0;
}

#include "handler.bpf.h"
