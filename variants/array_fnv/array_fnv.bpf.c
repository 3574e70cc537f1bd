// SPDX-License-Identifier: MIT
/* array_fnv: BMC-style cache.  BPF_MAP_TYPE_ARRAY of cfg.entries slots,
 * slot = FNV-1a(key) % entries.  A slot stores the full key; a store to a
 * slot holding another key overwrites it (counted in `overwrites`).
 * Readers never see a torn value: each slot carries a sequence counter
 * (xkv_entry.seq), odd while a writer is inside; writers take it with
 * compare-and-swap, readers retry if it moved (see ops.bpf.h get_one).
 * A slot left odd by a dead userspace writer is taken back by userspace
 * (slot.h); this side only passes requests for it on meanwhile.
 * The map is BPF_F_MMAPABLE so userspace follows the same protocol. */
#include "prelude.bpf.h"
#include "array_fnv/slot.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xkv_entry));
} store SEC(".maps");

#define XKV_KEY_IN_VALUE 1
#include "array_fnv/slot_del.bpf.h"

/* FNV-1a over up to 250 key bytes is a long loop: a global function, so the
 * verifier walks it once instead of at every call site. */
__attribute__((noinline)) int xkv_slot_of(struct xkv_scratch *sc)
{
	if (!sc || sc->klen > XKV_KEY_MAX)
		return 0;
	return slot_index(cfg.hash_seed, sc->key, sc->klen, cfg.entries);
}
#define slot_of(sc) ((__u32)xkv_slot_of(sc))

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	__u32 idx = slot_of(sc);
	return bpf_map_lookup_elem(&store, &idx); /* the handler checks the key under seq */
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	__u32 idx = slot_of(sc);
	struct xkv_entry *e = bpf_map_lookup_elem(&store, &idx);
	struct xkv_entry *n = &sc->entry;
	if (!e)
		return -ENOMEM;
	__u32 own = slot_lock(e);
	if (!own)
		return -EBUSY;
	if (e->wtime_ns && !XKV_STORE_MATCH(sc, e))
		stat_inc(st, xkv_entry_live(e, n->wtime_ns) ? XKV_STAT_overwrites : XKV_STAT_store_new);
	else if (!e->wtime_ns)
		stat_inc(st, XKV_STAT_store_new);
	slot_put_head(e, n, n->klen);
	__u32 sz = cfg.key_size + n->len;
	if (sz <= cfg.entry_size - XKV_ENTRY_HDR)
		bpf_probe_read_kernel(e->data, XKV_LEN(sz, cfg.entry_size - XKV_ENTRY_HDR), n->data);
	/* robbed only if this section outlasted XKV_SLOT_STEAL_MS, which it
	 * cannot; if it ever were, the slow path redoes the store */
	if (!slot_unlock(e, own))
		return -EBUSY;
	return 0;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	__u32 idx = slot_of(sc);
	struct xkv_entry *e = bpf_map_lookup_elem(&store, &idx);
	if (!e || !e->wtime_ns || !XKV_STORE_MATCH(sc, e))
		return 0;
	return slot_del(sc, e);
}

#include "handler.bpf.h"
