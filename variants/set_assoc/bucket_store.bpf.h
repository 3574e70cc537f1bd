/* SPDX-License-Identifier: MIT */
/* The XDP side of the bucketed layouts (set_assoc, sieve, s3fifo): a
 * set-associative cache.  BPF_MAP_TYPE_ARRAY of buckets of 8 (or 4, for
 * large values) ways; bucket = keyed hash(key) % buckets, a 16-bit tag of
 * the same hash per way for a cheap first compare, the full key in the way.
 * A new key takes an empty or expired way of its bucket, else the policy's
 * victim (bucket.h has the layout, the locking and the policy interface).
 * The map is BPF_F_MMAPABLE so userspace follows the same protocol.
 *
 * A layout's .bpf.c includes prelude.bpf.h and its policy header (pol_hit,
 * pol_victim, pol_insert, pol_drop), then this file. */
#include "array_fnv/slot.h"
#include "set_assoc/bucket.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 128); /* buckets; sized by the loader */
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, XKV_SA_HDR + 8 * 256); /* a bucket; sized by the loader */
} store SEC(".maps");

#define XKV_KEY_IN_VALUE 1

#define WAYS xkv_sa_ways(cfg.entry_size)
#define STRIDE xkv_sa_stride(cfg.entry_size)
#define NBUCKETS xkv_sa_buckets(cfg.entries, cfg.entry_size)

/* The placement hash over up to 250 key bytes: a global function, verified
 * once instead of at every call site. */
__attribute__((noinline)) __u64 xkv_sa_hash(struct xkv_scratch *sc)
{
	if (!sc || sc->klen > XKV_KEY_MAX)
		return 0;
	return xkv_key_hash(cfg.hash_seed, sc->key, sc->klen);
}

static __always_inline struct xkv_entry *way(struct xkv_sa_bucket *b, __u32 w)
{
	return (struct xkv_entry *)((__u8 *)b + XKV_SA_HDR + (w & (WAYS - 1)) * STRIDE);
}

/* The way of bucket idx holding sc's key (tag, then the whole key), or -1.
 * Global: the key compare is walked once, not per way and call site. */
__attribute__((noinline)) int xkv_sa_find(struct xkv_scratch *sc, __u32 idx, __u32 tag)
{
	if (!sc)
		return -1;
	struct xkv_sa_bucket *b = bpf_map_lookup_elem(&store, &idx);
	if (!b)
		return -1;
	for (__u32 w = 0; w < XKV_SA_WAYS_MAX; w++) {
		if (w >= WAYS)
			break;
		if (b->tag[w] != tag)
			continue;
		struct xkv_entry *e = way(b, w);
		if (XKV_STORE_MATCH(sc, e))
			return (int)w;
	}
	return -1;
}

/* The policy's victim in a full bucket: a global function, so that the
 * policy's sweep is verified once, not at every call site.  The caller
 * holds b's lock.  (pol_insert stays inline: a global function's argument
 * that one policy ignores reaches the verifier unset.) */
__attribute__((noinline)) int xkv_sa_victim(struct xkv_sa_bucket *b)
{
	if (!b)
		return 0;
	return (int)pol_victim(b, WAYS);
}

struct sa_where {
	struct xkv_sa_bucket *b;
	__u32 idx, tag;
};

static __always_inline int locate(struct xkv_scratch *sc, struct sa_where *at)
{
	__u64 h = xkv_sa_hash(sc);
	at->idx = xkv_sa_bucket_of(h, NBUCKETS);
	at->tag = xkv_sa_tag_of(h);
	at->b = bpf_map_lookup_elem(&store, &at->idx);
	return at->b ? 0 : -ENOMEM;
}

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	struct sa_where at;
	if (locate(sc, &at))
		return NULL;
	int w = xkv_sa_find(sc, at.idx, at.tag);
	if (w < 0)
		return NULL;
	__u32 i = (__u32)w & (XKV_SA_WAYS_MAX - 1);
	pol_hit(at.b, i); /* outside the lock: only ref[] (bucket.h) */
	return way(at.b, i); /* the handler checks the key under the way's seq */
}

/* Mark way e odd for the bucket owner `own`: 0, or -EBUSY if the way is odd
 * (only a dead userspace writer leaves one, and its thief clears it). */
static __always_inline int way_open(struct xkv_entry *e, __u32 own)
{
	__u32 s = slot_seq(e);
	if ((s & 1) || __sync_val_compare_and_swap(&e->seq, s, own) != s)
		return -EBUSY;
	return 0;
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	struct xkv_entry *n = &sc->entry;
	struct sa_where at;
	if (locate(sc, &at))
		return -ENOMEM;
	struct xkv_sa_bucket *b = at.b;
	__u32 own = seq_lock(&b->seq);
	if (!own)
		return -EBUSY;
	int found = xkv_sa_find(sc, at.idx, at.tag);
	__u32 w = 0, fresh = 0;
	if (found >= 0) {
		w = (__u32)found;
	} else {
		/* an empty or expired way, else the policy's victim */
		fresh = 1;
		for (__u32 i = 0; i < XKV_SA_WAYS_MAX; i++) {
			if (i >= WAYS)
				break;
			if (!xkv_entry_live(way(b, i), n->wtime_ns)) {
				w = i;
				fresh = 2;
				break;
			}
		}
		if (fresh == 1)
			w = xkv_sa_victim(b);
		stat_inc(st, fresh == 1 ? XKV_STAT_overwrites : XKV_STAT_store_new);
	}
	w &= XKV_SA_WAYS_MAX - 1;
	struct xkv_entry *e = way(b, w);
	if (way_open(e, own)) {
		seq_unlock(&b->seq, own);
		return -EBUSY;
	}
	slot_put_head(e, n, n->klen);
	if (fresh)
		pol_insert(b, WAYS, w, (__u16)at.tag, fresh == 2);
	b->tag[w] = (__u16)at.tag;
	__u32 sz = cfg.key_size + n->len;
	if (sz <= cfg.entry_size - XKV_ENTRY_HDR)
		bpf_probe_read_kernel(e->data, XKV_LEN(sz, cfg.entry_size - XKV_ENTRY_HDR), n->data);
	/* robbed only if this section outlasted XKV_SLOT_STEAL_MS, which it
	 * cannot; if it ever were, the slow path redoes the store */
	int ok = slot_unlock(e, own);
	if (!seq_unlock(&b->seq, own) || !ok)
		return -EBUSY;
	return 0;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	struct sa_where at;
	if (locate(sc, &at) || xkv_sa_find(sc, at.idx, at.tag) < 0)
		return 0;
	struct xkv_sa_bucket *b = at.b;
	__u32 own = seq_lock(&b->seq);
	if (!own)
		return -EBUSY;
	int found = xkv_sa_find(sc, at.idx, at.tag);
	if (found >= 0) {
		__u32 w = (__u32)found & (XKV_SA_WAYS_MAX - 1);
		struct xkv_entry *e = way(b, w);
		if (way_open(e, own)) {
			seq_unlock(&b->seq, own);
			return -EBUSY;
		}
		e->wtime_ns = 0;
		b->tag[w] = 0;
		pol_drop(b, w);
		slot_unlock(e, own);
	}
	if (!seq_unlock(&b->seq, own))
		return -EBUSY;
	return found >= 0;
}

#include "handler.bpf.h"
