// SPDX-License-Identifier: MIT
/* array_fnv: userspace side.  The slots are mmapped (BPF_F_MMAPABLE) and
 * read and written with the same sequence-counter protocol as the XDP
 * program (slot.h), so neither side sees a torn value.  A userspace writer
 * can be killed inside a slot: this side takes such slots back (repair,
 * below), at the price of one rare torn read (set()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "array_fnv/slot_user.h"
#include "array_fnv.skel.h"

XKV_LAYOUT_ELF(array_fnv)

static __u64 steal_ns = XKV_SLOT_STEAL_MS * 1000000ull;
/* test_wedge: XDPKV_TEST_DIE_IN_SLOT=1 makes set() SIGKILL itself inside a
 * slot, =stop SIGSTOP (a writer that is only slow); once per process */
static int die_in_slot;

/* A slot whose writer died inside: its bytes may be half written; empty it. */
static void mend(struct xkv_store *s, void *at, __u32 own)
{
	struct xkv_entry *e = at;
	(void)s;
	(void)own;
	e->wtime_ns = 0;
	e->expire_ns = 0;
	e->len = 0;
	e->klen = 0;
}

static __u32 repair(struct xkv_store *s, struct xkv_entry *e, __u32 q0)
{
	return xkv_seq_repair(s, &e->seq, q0, steal_ns, e, s->cfg.entry_size, mend);
}

static int open_slots(struct xkv_store *s)
{
	steal_ns = xkv_wedge_steal_ns();
	die_in_slot = xkv_wedge_die_signal();
	return xkv_slots_map(s, (s->cfg.entry_size + 7) & ~7u, s->cfg.entries);
}

static struct xkv_entry *slot(struct xkv_store *s, __u32 i)
{
	return (struct xkv_entry *)((__u8 *)s->mm + (size_t)i * s->slot_stride);
}

static bool match(const struct xkv_store *s, const struct xkv_entry *e, const __u8 *k, __u32 klen)
{
	return e->klen == klen && !memcmp(e->data, k, s->cfg.key_size);
}

static int get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(s->cfg.hash_seed, k, klen, s->cfg.entries));
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	if (!buf)
		return -ENOMEM;
	__u32 q0 = slot_seq(e);
	int r = xkv_slot_read(s, e, buf, xkv_now_ns());
	if (r == 1 && match(s, buf, k, klen)) {
		xkv_slot_item(s, buf, it);
	} else if (r == 1) {
		r = 0;
	}
	free(buf);
	if (r != -EBUSY)
		return r;
	/* repaired: it holds nothing now (if another writer stole it from us
	 * meanwhile, that writer makes it whole; a miss is still true) */
	__u32 own = repair(s, e, q0);
	if (own) {
		slot_unlock(e, own);
		return 0;
	}
	return -EBUSY;
}

/* Take slot e's writer side: 0 and the seq owned in *own, or -EBUSY.  A slot
 * whose writer died inside comes back repaired, i.e. empty. */
static int take(struct xkv_store *s, struct xkv_entry *e, __u32 *own)
{
	return xkv_seq_take(s, &e->seq, own, steal_ns, e, s->cfg.entry_size, mend);
}

/* Write n (key k) into slot e, whose writer side this thread holds.
 * Returns what it counts: bit 0 a new item, bit 1 an item of another key
 * overwritten (as the XDP side counts them, array_fnv.bpf.c). */
static int fill_slot(struct xkv_store *s, struct xkv_entry *e, const __u8 *k, __u32 klen,
		     const struct xkv_entry *n)
{
	int fresh = !e->wtime_ns || (!match(s, e, k, klen) && !xkv_entry_live(e, n->wtime_ns));
	int evicts = !fresh && !match(s, e, k, klen);
	slot_put_head(e, n, klen);
	memcpy(e->data, k, s->cfg.key_size);
	xkv_slot_put_value(e->data + s->cfg.key_size, n, &die_in_slot);
	return fresh | evicts << 1;
}

/* The store under the slot's lock: fn (NULL: store n as it is) decides
 * from the live item of this key in the slot, so the read, the decision
 * and the write are one step for every writer that takes the lock, XDP
 * included. */
static int store_locked(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn,
			void *arg, struct xkv_entry *n)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	if (!fn && n->len > s->cfg.val_cap)
		return -E2BIG;
	struct xkv_entry *e = slot(s, slot_index(s->cfg.hash_seed, k, klen, s->cfg.entries));
	struct xkv_item *it = fn ? malloc(sizeof(*it)) : NULL;
	if (fn && !it)
		return -ENOMEM;
	__u32 own;
	int rc;
	for (;;) {
		if (take(s, e, &own)) {
			rc = -EBUSY;
			break;
		}
		if (fn) {
			bool hit = e->wtime_ns && match(s, e, k, klen) &&
				   xkv_entry_live(e, xkv_now_ns()) && e->len <= s->cfg.val_cap;
			if (hit) {
				it->flags = e->flags;
				it->len = e->len;
				it->expire_ns = e->expire_ns;
				it->wtime_ns = e->wtime_ns;
				memcpy(it->data, e->data + s->cfg.key_size, e->len);
			}
			rc = fn(arg, hit ? it : NULL, n);
			if (!rc && n->len > s->cfg.val_cap)
				rc = -E2BIG;
			if (rc) {
				slot_unlock(e, own);
				break;
			}
		}
		int counts = fill_slot(s, e, k, klen, n);
		if (slot_unlock(e, own)) {
			s->new_items += counts & 1;
			s->overwrites += counts >> 1;
			rc = 0;
			break;
		}
		/* Robbed: we stalled inside past the timeout, a thief emptied the
		 * slot (or stored its own value) and others may have written since,
		 * all while we went on copying, so it may hold a mix.  Take it again
		 * and rewrite our whole value (deciding again on what is there now).
		 * Until then (or until whoever holds it now rewrites it) readers can
		 * see that mix: the one torn read left, and only for a writer
		 * stalled longer than XKV_SLOT_STEAL_MS. */
	}
	free(it);
	return rc;
}

static int set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n)
{
	return store_locked(s, key, klen, NULL, NULL, (struct xkv_entry *)n);
}

static int set_if(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		  struct xkv_entry *n)
{
	return store_locked(s, key, klen, fn, arg, n);
}

static int del(struct xkv_store *s, const void *key, __u32 klen)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(s->cfg.hash_seed, k, klen, s->cfg.entries));
	__u32 own;
	if (take(s, e, &own))
		return -EBUSY;
	int found = e->wtime_ns && match(s, e, k, klen);
	int live = found && xkv_entry_live(e, xkv_now_ns());
	if (found)
		e->wtime_ns = 0;
	/* robbed (stalled past the timeout): the thief emptied the slot or
	 * stored over it, and our late wtime_ns = 0 may have dropped what it
	 * stored; nothing to redo for a delete */
	slot_unlock(e, own);
	return live;
}

static long count(struct xkv_store *s)
{
	__u64 now = xkv_now_ns();
	long n = 0;
	for (__u32 i = 0; i < s->cfg.entries; i++)
		n += xkv_entry_live(slot(s, i), now);
	return n;
}

static int flush(struct xkv_store *s)
{
	for (__u32 i = 0; i < s->cfg.entries; i++) {
		struct xkv_entry *e = slot(s, i);
		__u32 own;
		if (!e->wtime_ns)
			continue;
		if (take(s, e, &own))
			return -EBUSY;
		e->wtime_ns = 0;
		slot_unlock(e, own); /* robbed: the thief emptied it, or stored after the flush */
	}
	return 0;
}

static __u64 span(const struct xkv_store *s)
{
	return s->cfg.entries;
}

static long scan(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy)
{
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	__u64 end = hi < s->cfg.entries ? hi : s->cfg.entries, now = xkv_now_ns();
	long n = 0;
	if (!buf)
		return -ENOMEM;
	for (__u64 i = lo; i < end; i++) {
		int r = xkv_slot_visit(s, slot(s, (__u32)i), buf, now, fn, arg, &n, busy);
		if (r) {
			n = r;
			break;
		}
	}
	free(buf);
	return n;
}

const struct xkv_layout xkv_layout_array_fnv = {
	.name = "array_fnv",
	.summary = "BPF_MAP_TYPE_ARRAY, slot = keyed hash(key) % entries (BMC-style cache)",
	.loses = "items overwritten by a colliding key (counted exactly)",
	.map_type = BPF_MAP_TYPE_ARRAY,
	.key_in_value = true,
	.hash_seeded = true,
	.elf = elf,
	.open = open_slots,
	.close = xkv_slots_unmap,
	.get = get,
	.set = set,
	.set_if = set_if,
	.del = del,
	.count = count,
	.flush = flush,
	.span = span,
	.scan = scan,
};
