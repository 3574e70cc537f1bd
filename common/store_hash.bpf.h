/* SPDX-License-Identifier: MIT */
/* store_lookup/store_set/store_del for the hash-like layouts: a map named
 * `store` keyed by the zero-padded key, the entry as its value.  A variant
 * defines the map, optionally XKV_COUNT_NEW (look the key up first to count
 * new items, for the eviction estimate of lru and lru_percpu) and XKV_PERCPU
 * (a per-CPU map: percpu, lru_percpu), and includes this. */
#ifndef XDPKV_STORE_HASH_BPF_H
#define XDPKV_STORE_HASH_BPF_H

#define XKV_KEY_IN_VALUE 0

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	return bpf_map_lookup_elem(&store, sc->key); /* percpu: this CPU's copy */
}

/* 0; -ENOMEM when the map is full or cannot allocate (-E2BIG/-ENOMEM from
 * the kernel); -EBUSY when the kernel could not take the bucket lock (-EBUSY
 * on re-entry, -EDEADLK/-ETIMEDOUT from the resilient spinlock of 6.15+):
 * the handler passes such a request to the slow path instead of answering
 * SERVER_ERROR.  The error is read as an int: before 6.5 the map operations
 * the verifier calls directly returned int, the upper half of the register
 * undefined (-ENOENT compared as a long missed on 6.1). */
static __always_inline int store_err(int err)
{
	if (!err)
		return 0;
	return err == -E2BIG || err == -ENOMEM ? -ENOMEM : -EBUSY;
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
#ifdef XKV_COUNT_NEW
	if (!bpf_map_lookup_elem(&store, sc->key))
		stat_inc(st, XKV_STAT_store_new);
#endif
	return store_err((int)bpf_map_update_elem(&store, sc->key, &sc->entry, BPF_ANY));
}

/* 1 deleted, 0 not there, -EBUSY lock not taken (see store_err) */
static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	int err = (int)bpf_map_delete_elem(&store, sc->key); /* an int: store_err */

	if (err == -ENOENT)
		return 0;
	return err ? -EBUSY : 1;
}

#ifdef XKV_PERCPU
/* A delete removes the key from every CPU, so it answers DELETED if any CPU's
 * copy is live (bpf_map_lookup_percpu_elem returns NULL past the last CPU). */
static __always_inline int live_on_any_cpu(struct xkv_scratch *sc, __u64 now)
{
	for (__u32 cpu = 0; cpu < 256; cpu++) {
		struct xkv_entry *e = bpf_map_lookup_percpu_elem(&store, sc->key, cpu);
		if (!e)
			break;
		if (xkv_entry_live(e, now))
			return 1;
	}
	return 0;
}
#define XKV_LIVE_FOR_DELETE(sc, e, now) live_on_any_cpu(sc, now)
#endif

#endif
