/* SPDX-License-Identifier: MIT */
/* The userspace side of the bucketed layouts (set_assoc, sieve, s3fifo).
 * The buckets are mmapped (BPF_F_MMAPABLE) and read and written with the
 * protocol of bucket.h: a writer locks the bucket, a reader follows one
 * way's sequence counter (array_fnv's slot reader).  A userspace writer
 * killed inside a bucket leaves it locked; this side takes it back after
 * XKV_SLOT_STEAL_MS and empties the way that writer held, as array_fnv does
 * for a slot.
 *
 * A layout's _user.c includes its policy header (pol_hit, pol_victim,
 * pol_insert, pol_drop) and its skeleton, defines elf() (XKV_LAYOUT_ELF),
 * includes this file, and defines its struct xkv_layout with
 * XKV_SA_LAYOUT_OPS and its own name, summary and losses. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "array_fnv/slot_user.h"
#include "set_assoc/bucket.h"

static __u64 steal_ns = XKV_SLOT_STEAL_MS * 1000000ull;
static int die_in_slot; /* test_wedge: as array_fnv's */

static __u32 ways(const struct xkv_store *s)
{
	return xkv_sa_ways(s->cfg.entry_size);
}

static __u32 nbuckets(const struct xkv_store *s)
{
	return xkv_sa_buckets(s->cfg.entries, s->cfg.entry_size);
}

static struct xkv_sa_bucket *bucket(const struct xkv_store *s, __u32 i)
{
	return (struct xkv_sa_bucket *)((__u8 *)s->mm + (size_t)i * s->slot_stride);
}

static struct xkv_entry *way(const struct xkv_store *s, struct xkv_sa_bucket *b, __u32 w)
{
	return (struct xkv_entry *)((__u8 *)b + XKV_SA_HDR + (size_t)w * xkv_sa_stride(s->cfg.entry_size));
}

/* A key's packed form, bucket and tag. */
struct where {
	__u8 k[XKV_KEY_MAX + 8];
	__u32 klen;
	__u16 tag;
	bool only_free; /* add: neither over a live item of this key nor evicting */
	struct xkv_sa_bucket *b;
};

static int locate(const struct xkv_store *s, const void *key, __u32 klen, struct where *at)
{
	if (xkv_key_pack(&s->cfg, key, klen, at->k))
		return -EINVAL;
	__u64 h = xkv_key_hash(s->cfg.hash_seed, at->k, klen);
	at->klen = klen;
	at->only_free = false;
	at->tag = xkv_sa_tag_of(h);
	at->b = bucket(s, xkv_sa_bucket_of(h, nbuckets(s)));
	return 0;
}

/* The way holding at's key (read under the bucket lock), or -1. */
static int find(const struct xkv_store *s, const struct where *at)
{
	for (__u32 w = 0; w < ways(s); w++)
		if (at->b->tag[w] == at->tag && xkv_slot_match(s, way(s, at->b, w), at->k, at->klen))
			return (int)w;
	return -1;
}

/* A bucket whose writer died inside: empty the way it had open (odd; its
 * bytes may be half written) and give it an even seq above the dead one, so
 * a reader that began before sees it move and the dead writer's own release
 * fails if it wakes after all. */
static void mend(struct xkv_store *s, void *at, __u32 own)
{
	struct xkv_sa_bucket *b = at;
	for (__u32 w = 0; w < ways(s); w++) {
		struct xkv_entry *e = way(s, b, w);
		__u32 q = slot_seq(e);
		if (!(q & 1))
			continue;
		e->wtime_ns = 0;
		e->expire_ns = 0;
		e->len = 0;
		e->klen = 0;
		b->tag[w] = 0;
		pol_drop(b, w);
		__sync_val_compare_and_swap(&e->seq, q, own + 1);
	}
}

static __u32 repair(struct xkv_store *s, struct xkv_sa_bucket *b, __u32 q0)
{
	return xkv_seq_repair(s, &b->seq, q0, steal_ns, b, s->slot_stride, mend);
}

/* Take bucket b's writer side: 0 and the seq owned in *own, or -EBUSY.  A
 * bucket whose writer died inside comes back repaired. */
static int take(struct xkv_store *s, struct xkv_sa_bucket *b, __u32 *own)
{
	return xkv_seq_take(s, &b->seq, own, steal_ns, b, s->slot_stride, mend);
}

/* Open way e for writing under bucket seq own (bucket.h); -EBUSY if it is
 * odd, which only a writer robbed mid-way leaves behind. */
static int way_open(struct xkv_entry *e, __u32 own)
{
	__u32 q = slot_seq(e);
	return (q & 1) || __sync_val_compare_and_swap(&e->seq, q, own) != q ? -EBUSY : 0;
}

static int open_buckets(struct xkv_store *s)
{
	steal_ns = xkv_wedge_steal_ns();
	die_in_slot = xkv_wedge_die_signal();
	return xkv_slots_map(s, (xkv_sa_bucket_size(s->cfg.entry_size) + 7) & ~7u, nbuckets(s));
}

static int get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	struct where at;
	if (locate(s, key, klen, &at))
		return -EINVAL;
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	if (!buf)
		return -ENOMEM;
	__u32 q0 = seq_read(&at.b->seq);
	int r = 0, busy = 0;
	for (__u32 w = 0; w < ways(s) && r != 1; w++) {
		if (at.b->tag[w] != at.tag)
			continue;
		r = xkv_slot_read(s, way(s, at.b, w), buf, xkv_now_ns());
		if (r == 1 && !xkv_slot_match(s, buf, at.k, klen))
			r = 0;
		busy |= r == -EBUSY;
		if (r == 1) {
			xkv_slot_item(s, buf, it);
			pol_hit(at.b, w); /* outside the lock: only ref[] (bucket.h) */
		}
	}
	free(buf);
	if (r == 1 || !busy)
		return r == 1;
	/* repaired: the way that was busy holds nothing now */
	__u32 own = repair(s, at.b, q0);
	if (own) {
		seq_unlock(&at.b->seq, own);
		return 0;
	}
	return -EBUSY;
}

/* One try of a store under the bucket's lock (xkv_slot_store): fn decides
 * from the live item of this key in the bucket, so the read, the decision
 * and the write are one step for every writer that takes the lock, XDP
 * included. */
static int store_try(struct xkv_store *s, void *where, xkv_decide_fn fn, void *arg, struct xkv_item *it,
		     struct xkv_entry *n)
{
	struct where *at = where;
	struct xkv_sa_bucket *b = at->b;
	__u32 own;
	int rc;
	if (take(s, b, &own))
		return -EBUSY;
	/* the way, and the counts, as the XDP side decides them */
	int w = find(s, at), fresh = 0, evicts = 0;
	if (at->only_free && w >= 0 && xkv_entry_live(way(s, b, (__u32)w), xkv_now_ns())) {
		seq_unlock(&b->seq, own);
		return -EEXIST;
	}
	if (fn && (rc = xkv_slot_decide(s, w >= 0 ? way(s, b, (__u32)w) : NULL, fn, arg, it, n))) {
		seq_unlock(&b->seq, own);
		return rc;
	}
	if (w < 0) {
		for (__u32 i = 0; i < ways(s) && w < 0; i++)
			if (!xkv_entry_live(way(s, b, i), n->wtime_ns))
				w = (int)i;
		fresh = w >= 0;
		if (w < 0 && at->only_free) { /* the bucket is full: no eviction for an add */
			seq_unlock(&b->seq, own);
			return -EADDRINUSE;
		}
		if (w < 0) {
			w = (int)pol_victim(b, ways(s));
			evicts = 1;
		}
	}
	struct xkv_entry *e = way(s, b, (__u32)w);
	if (way_open(e, own)) {
		seq_unlock(&b->seq, own);
		return -EBUSY;
	}
	slot_put_head(e, n, at->klen);
	if (fresh || evicts)
		pol_insert(b, ways(s), (__u32)w, at->tag, fresh);
	b->tag[w] = at->tag;
	memcpy(e->data, at->k, s->cfg.key_size);
	xkv_slot_put_value(s, e->data + s->cfg.key_size, n, &die_in_slot);
	int ok = seq_unlock(&e->seq, own);
	if (!seq_unlock(&b->seq, own) || !ok)
		return XKV_ROBBED; /* a thief emptied our way */
	s->new_items += fresh;
	s->overwrites += evicts;
	return 0;
}

/* set_if; with fn NULL, set */
static int store(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		 struct xkv_entry *n)
{
	struct where at;
	if (locate(s, key, klen, &at))
		return -EINVAL;
	return xkv_slot_store(s, &at, fn, arg, n, store_try);
}

static int set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n)
{
	return store(s, key, klen, NULL, NULL, (struct xkv_entry *)n);
}

/* add (migrate's copier): -EEXIST where this key is live, -EADDRINUSE where
 * its bucket has no free way (storing would evict) */
static int add(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n)
{
	struct where at;
	if (locate(s, key, klen, &at))
		return -EINVAL;
	at.only_free = true;
	return xkv_slot_store(s, &at, NULL, NULL, (struct xkv_entry *)n, store_try);
}

static int del(struct xkv_store *s, const void *key, __u32 klen)
{
	struct where at;
	if (locate(s, key, klen, &at))
		return -EINVAL;
	__u32 own;
	if (take(s, at.b, &own))
		return -EBUSY;
	int w = find(s, &at), live = 0;
	if (w >= 0) {
		struct xkv_entry *e = way(s, at.b, (__u32)w);
		if (way_open(e, own)) {
			seq_unlock(&at.b->seq, own);
			return -EBUSY;
		}
		live = xkv_entry_live(e, xkv_now_ns());
		e->wtime_ns = 0;
		at.b->tag[w] = 0;
		pol_drop(at.b, (__u32)w);
		seq_unlock(&e->seq, own);
	}
	seq_unlock(&at.b->seq, own); /* robbed: the thief emptied what we held */
	return live;
}

static long count(struct xkv_store *s)
{
	__u64 now = xkv_now_ns();
	long n = 0;
	for (__u32 i = 0; i < nbuckets(s); i++)
		for (__u32 w = 0; w < ways(s); w++)
			n += xkv_entry_live(way(s, bucket(s, i), w), now);
	return n;
}

/* The policy's part of a bucket header (hand, ref[], and from ord[] on)
 * as a new map has it: all zero. */
static bool policy_blank(const struct xkv_sa_bucket *b)
{
	static const struct xkv_sa_bucket zero;
	return !b->hand && !memcmp(b->ref, zero.ref, sizeof(b->ref)) &&
	       !memcmp(b->ord, zero.ord, XKV_SA_HDR - offsetof(struct xkv_sa_bucket, ord));
}

/* Empty every way stamped up to the cut, each as del empties one (pol_drop),
 * under the bucket's lock: the XDP writer takes it too, so an item stored
 * after the cut stays, whoever stored it.  A bucket left with no item also
 * gets its policy state back as a new map has it (hand, order, queues,
 * ghost tags), so that a flushed store replaces as a new one does; one that
 * keeps items keeps its state, as after deletes. */
static int flush(struct xkv_store *s, __u64 cut)
{
	for (__u32 i = 0; i < nbuckets(s); i++) {
		struct xkv_sa_bucket *b = bucket(s, i);
		__u32 own, w, kept = 0;
		for (w = 0; w < ways(s) && !way(s, b, w)->wtime_ns; w++)
			;
		if (w == ways(s) && policy_blank(b))
			continue;
		if (take(s, b, &own))
			return -EBUSY;
		for (w = 0; w < ways(s); w++) {
			struct xkv_entry *e = way(s, b, w);
			if (!e->wtime_ns)
				continue;
			if (e->wtime_ns > cut || way_open(e, own)) {
				kept++;
				continue;
			}
			e->wtime_ns = 0;
			b->tag[w] = 0;
			pol_drop(b, w);
			seq_unlock(&e->seq, own);
		}
		if (!kept) {
			b->hand = 0;
			memset(b->ref, 0, sizeof(b->ref));
			memset(b->ord, 0, XKV_SA_HDR - offsetof(struct xkv_sa_bucket, ord));
		}
		seq_unlock(&b->seq, own);
	}
	return 0;
}

static __u64 span(const struct xkv_store *s)
{
	return nbuckets(s);
}

static long scan(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy)
{
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	__u64 end = hi < nbuckets(s) ? hi : nbuckets(s), now = xkv_now_ns();
	long n = 0;
	if (!buf)
		return -ENOMEM;
	for (__u64 i = lo; i < end; i++) {
		for (__u32 w = 0; w < ways(s); w++) {
			int r = xkv_slot_visit(s, way(s, bucket(s, (__u32)i), w), buf, now, fn, arg, &n, busy);
			if (r) {
				free(buf);
				return r;
			}
		}
	}
	free(buf);
	return n;
}

/* entries: whole buckets */
static int finish(struct xkv_config *cfg, char *err, size_t errlen)
{
	__u32 w = xkv_sa_ways(cfg->entry_size);
	cfg->entries = (cfg->entries + w - 1) / w * w;
	if (cfg->entries > (1u << 26))
		return xkv_errf(err, errlen, -EINVAL, "--entries %u out of range 1..%u", cfg->entries, 1u << 26);
	return 0;
}

static int prepare(struct bpf_map *m, const struct xkv_config *cfg)
{
	int e = bpf_map__set_max_entries(m, xkv_sa_buckets(cfg->entries, cfg->entry_size));
	return e ? e : bpf_map__set_value_size(m, xkv_sa_bucket_size(cfg->entry_size));
}

/* Everything in a bucketed layout's struct xkv_layout but its name, summary
 * and losses. */
#define XKV_SA_LAYOUT_OPS                      \
	.map_type = BPF_MAP_TYPE_ARRAY,        \
	.key_in_value = true,                  \
	.hash_seeded = true,                   \
	.elf = elf,                            \
	.finish = finish,                      \
	.prepare = prepare,                    \
	.open = open_buckets,                  \
	.close = xkv_slots_unmap,              \
	.get = get,                            \
	.set = set,                            \
	.set_if = store,                       \
	.add = add,                            \
	.del = del,                            \
	.count = count,                        \
	.flush = flush,                        \
	.span = span,                          \
	.scan = scan
